package shard_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/ports"
)

// adapters/memory has no ports.MetricsReader: metricsFake is one, over raw rows, that
// aggregates them as adapters/admin's statements do (rows already in their buckets; the
// span is not read). A fake holding every shard's rows is what one database answers.
type metricsFake struct {
	queues     []queueRow
	partitions map[string]int64 // by queue
	dead       []deadRow
	runs       []runRow
	lag        ports.LagFigures
	err        error
	calls      []string
}

type queueRow struct {
	queue  string
	bucket time.Time
	c      ports.Counters
}

type deadRow struct{ queue, text string }

type runRow struct {
	at          time.Time
	queue, job  string
	rows, bytes int64
}

func (m *metricsFake) call(op string) error {
	m.calls = append(m.calls, op)
	return m.err
}

func (m *metricsFake) QueueSeries(_ context.Context, _ string, _ ports.MetricsSpan, f ports.ResourceFilter, queues []string) ([]ports.QueueBucket, error) {
	if err := m.call("QueueSeries"); err != nil {
		return nil, err
	}
	sums := map[[2]string]*ports.QueueBucket{}
	for _, r := range m.queues {
		if (f.Queue != "" && r.queue != f.Queue) || (queues != nil && !slices.Contains(queues, r.queue)) {
			continue
		}
		q := ""
		if queues != nil {
			q = r.queue
		}
		k := [2]string{r.bucket.String(), q}
		if sums[k] == nil {
			sums[k] = &ports.QueueBucket{Bucket: r.bucket, Queue: q}
		}
		sums[k].Counters.Add(r.c)
	}
	var out []ports.QueueBucket
	for _, s := range sums {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ports.QueueBucket) int {
		return cmp.Or(a.Bucket.Compare(b.Bucket), strings.Compare(a.Queue, b.Queue))
	})
	return out, nil
}

func (m *metricsFake) QueueTotals(_ context.Context, _ string, _ ports.MetricsSpan, f ports.ResourceFilter) ([]ports.QueueTotal, error) {
	if err := m.call("QueueTotals"); err != nil {
		return nil, err
	}
	sums := map[string]*ports.QueueTotal{}
	for _, r := range m.queues {
		if f.Queue != "" && r.queue != f.Queue {
			continue
		}
		if sums[r.queue] == nil {
			sums[r.queue] = &ports.QueueTotal{Queue: r.queue, Partitions: m.partitions[r.queue]}
		}
		sums[r.queue].Counters.Add(r.c)
	}
	var out []ports.QueueTotal
	for _, s := range sums {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ports.QueueTotal) int { return strings.Compare(a.Queue, b.Queue) })
	return out, nil
}

func (m *metricsFake) BrokerSeries(context.Context, ports.MetricsSpan, ports.BrokerFilter) ([]ports.BrokerBucket, error) {
	return []ports.BrokerBucket{{Broker: "b1"}}, m.call("BrokerSeries")
}

func (m *metricsFake) ParkedSeries(context.Context, ports.MetricsSpan, string) ([]ports.ParkedBucket, error) {
	return []ports.ParkedBucket{{Broker: "b1", Parked: 3}}, m.call("ParkedSeries")
}

func (m *metricsFake) Retention(_ context.Context, _ string, _ ports.MetricsSpan, _ ports.ResourceFilter, key ports.RetentionKey) (series, groups []ports.RetentionRow, err error) {
	if err := m.call("Retention"); err != nil {
		return nil, nil, err
	}
	var bySeries, byGroup [][]ports.RetentionRow
	for _, r := range m.runs {
		bySeries = append(bySeries, []ports.RetentionRow{{Bucket: r.at, Job: r.job, Runs: 1, Rows: r.rows, Bytes: r.bytes}})
		if key == ports.RetentionByQueue {
			byGroup = append(byGroup, []ports.RetentionRow{{Key: r.queue, Job: r.job, Runs: 1, Rows: r.rows, Bytes: r.bytes}})
		}
	}
	// One database's grouping is the sharded merge of one-row shards; checked against
	// hand-computed figures in TestAnalyticsRetention.
	return sumRuns(bySeries), sumRuns(byGroup), nil
}

// sumRuns adds up rows of the same bucket, key and job, sorted as the statements sort.
func sumRuns(rows [][]ports.RetentionRow) []ports.RetentionRow {
	sums := map[string]*ports.RetentionRow{}
	for _, rs := range rows {
		for _, r := range rs {
			k := fmt.Sprint(r.Bucket, r.Key, r.Job)
			if sums[k] == nil {
				sums[k] = &ports.RetentionRow{Bucket: r.Bucket, Key: r.Key, Job: r.Job}
			}
			sums[k].Runs += r.Runs
			sums[k].Rows += r.Rows
			sums[k].Bytes += r.Bytes
		}
	}
	out := []ports.RetentionRow{}
	for _, s := range sums {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ports.RetentionRow) int {
		return cmp.Or(a.Bucket.Compare(b.Bucket), strings.Compare(a.Key, b.Key), strings.Compare(a.Job, b.Job))
	})
	return out
}

func (m *metricsFake) DeadLetterErrors(_ context.Context, _ string, f ports.ResourceFilter, limit int) ([]ports.DeadLetterError, error) {
	if err := m.call("DeadLetterErrors"); err != nil || limit <= 0 {
		return nil, err
	}
	counts := map[string]int64{}
	for _, d := range m.dead {
		if f.Queue == "" || d.queue == f.Queue {
			counts[d.text]++
		}
	}
	var out []ports.DeadLetterError
	for text, n := range counts {
		out = append(out, ports.DeadLetterError{Error: text, Count: n})
	}
	slices.SortFunc(out, func(a, b ports.DeadLetterError) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Error, b.Error))
	})
	return out[:min(limit, len(out))], nil
}

func (m *metricsFake) Lag(context.Context, string) (ports.LagFigures, error) {
	return m.lag, m.call("Lag")
}

func (m *metricsFake) PostgresStats(context.Context, time.Duration) (ports.PostgresStats, error) {
	return ports.PostgresStats{Database: ports.DatabaseFigures{Name: "catalogue"}}, m.call("PostgresStats")
}

// metricsWorld spreads six queues' history, dead letters and retention runs over three
// fakes (queue i on shard i%3; queue "old" has history on shards 0 and 1, as a name
// whose rows were kept on both), and holds the same rows in one.
func metricsWorld() (single *metricsFake, shards []*metricsFake, sharded *shard.Analytics) {
	single = &metricsFake{partitions: map[string]int64{}}
	readers := make([]ports.MetricsReader, 3)
	for n := range readers {
		shards = append(shards, &metricsFake{partitions: map[string]int64{}})
		readers[n] = shards[n]
	}
	add := func(n int, apply func(*metricsFake)) {
		apply(single)
		apply(shards[n])
	}
	for i := range 6 {
		q := fmt.Sprintf("q%d", i)
		add(i%3, func(m *metricsFake) { m.partitions[q] += int64(i + 1) })
		for minute := range 10 {
			c := ports.Counters{PushMessages: int64(i + minute), PopMessages: int64(minute), LagCount: 1,
				LagSumMs: int64(10 * i), LagMaxMs: int64((i*7 + minute) % 11), ParkedMax: int64(minute % 4)}
			row := queueRow{queue: q, bucket: epoch.Add(time.Duration(minute/3*3) * time.Minute), c: c}
			add(i%3, func(m *metricsFake) { m.queues = append(m.queues, row) })
		}
		for k := range i {
			run := runRow{at: epoch.Add(time.Duration(k%2) * time.Hour), queue: q, job: []string{"trim", "expire"}[k%2],
				rows: int64(k + 1), bytes: int64(100 * (k + 1))}
			add(i%3, func(m *metricsFake) { m.runs = append(m.runs, run) })
		}
		// "spread" is the most frequent error overall and on no shard among the first.
		for range 2 {
			add(i%3, func(m *metricsFake) { m.dead = append(m.dead, deadRow{q, "spread"}) })
		}
		for range 5 - i%3 {
			add(i%3, func(m *metricsFake) { m.dead = append(m.dead, deadRow{q, fmt.Sprint("top", i%3)}) })
		}
	}
	for n := range 2 {
		row := queueRow{queue: "old", bucket: epoch, c: ports.Counters{PushMessages: 7, LagMaxMs: int64(20 + n)}}
		add(n, func(m *metricsFake) { m.queues = append(m.queues, row) })
	}
	return single, shards, shard.NewAnalytics(readers)
}

func TestAnalyticsIsOneDatabase(t *testing.T) {
	t.Parallel()
	single, _, sharded := metricsWorld()
	ctx := context.Background()
	span := ports.MetricsSpan{From: epoch, To: epoch.Add(time.Hour), Bucket: 3 * time.Minute}
	tests := []struct {
		name string
		read func(ports.MetricsReader) (any, error)
	}{
		{"series of every queue", func(r ports.MetricsReader) (any, error) {
			return r.QueueSeries(ctx, tenant, span, ports.ResourceFilter{}, nil)
		}},
		{"series per queue", func(r ports.MetricsReader) (any, error) {
			return r.QueueSeries(ctx, tenant, span, ports.ResourceFilter{}, []string{"q1", "q2", "q4", "old"})
		}},
		{"series of one queue", func(r ports.MetricsReader) (any, error) {
			return r.QueueSeries(ctx, tenant, span, ports.ResourceFilter{Queue: "q5"}, nil)
		}},
		{"series of no queue named", func(r ports.MetricsReader) (any, error) {
			return r.QueueSeries(ctx, tenant, span, ports.ResourceFilter{}, []string{})
		}},
		{"totals", func(r ports.MetricsReader) (any, error) {
			return r.QueueTotals(ctx, tenant, span, ports.ResourceFilter{})
		}},
		{"retention by queue", func(r ports.MetricsReader) (any, error) {
			s, g, err := r.Retention(ctx, tenant, span, ports.ResourceFilter{}, ports.RetentionByQueue)
			return [2][]ports.RetentionRow{s, g}, err
		}},
		{"retention without groups", func(r ports.MetricsReader) (any, error) {
			s, g, err := r.Retention(ctx, tenant, span, ports.ResourceFilter{}, ports.RetentionNoGroups)
			return [2][]ports.RetentionRow{s, g}, err
		}},
	}
	for limit := range 6 {
		tests = append(tests, struct {
			name string
			read func(ports.MetricsReader) (any, error)
		}{fmt.Sprintf("dead-letter errors, limit %d", limit), func(r ports.MetricsReader) (any, error) {
			return r.DeadLetterErrors(ctx, tenant, ports.ResourceFilter{}, limit)
		}})
	}
	for _, tt := range tests {
		want, err := tt.read(single)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tt.read(sharded)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tt.name, got, err, want)
		}
	}
	// The merge keeps the most frequent text overall, not a shard's first.
	if got, _ := sharded.DeadLetterErrors(ctx, tenant, ports.ResourceFilter{}, 1); len(got) != 1 || got[0].Error != "spread" || got[0].Count != 12 {
		t.Errorf("the most frequent error: %+v, want spread 12", got)
	}
}

func TestAnalyticsLag(t *testing.T) {
	t.Parallel()
	_, shards, sharded := metricsWorld()
	shards[0].lag = ports.LagFigures{Positions: 3, OffsetAvg: 10, OffsetMedian: 8, OffsetMax: 30, TimeAvg: 2, TimeMedian: 1, TimeMax: 5}
	shards[2].lag = ports.LagFigures{Positions: 1, OffsetAvg: 50, OffsetMedian: 50, OffsetMax: 50, TimeAvg: 6, TimeMedian: 6, TimeMax: 6}
	got, err := sharded.Lag(context.Background(), tenant)
	want := ports.LagFigures{Positions: 4, OffsetAvg: 20, OffsetMedian: 18.5, OffsetMax: 50, TimeAvg: 3, TimeMedian: 2.25, TimeMax: 6}
	if err != nil || got != want {
		t.Errorf("two shards: %+v, %v; want %+v", got, err, want)
	}
	shards[2].lag = ports.LagFigures{}
	if got, err := sharded.Lag(context.Background(), tenant); err != nil || got != shards[0].lag {
		t.Errorf("one shard with positions: %+v, %v; want its figures %+v", got, err, shards[0].lag)
	}
	shards[0].lag = ports.LagFigures{}
	if got, err := sharded.Lag(context.Background(), tenant); err != nil || got != (ports.LagFigures{}) {
		t.Errorf("no positions: %+v, %v", got, err)
	}
}

func TestAnalyticsBrokerFiguresReadTheCatalogue(t *testing.T) {
	t.Parallel()
	_, shards, sharded := metricsWorld()
	ctx := context.Background()
	span := ports.MetricsSpan{From: epoch, To: epoch.Add(time.Hour), Bucket: time.Minute}
	if b, err := sharded.BrokerSeries(ctx, span, ports.BrokerFilter{}); err != nil || len(b) != 1 {
		t.Errorf("BrokerSeries: %+v, %v", b, err)
	}
	if p, err := sharded.ParkedSeries(ctx, span, ""); err != nil || len(p) != 1 {
		t.Errorf("ParkedSeries: %+v, %v", p, err)
	}
	if s, err := sharded.PostgresStats(ctx, time.Second); err != nil || s.Database.Name != "catalogue" {
		t.Errorf("PostgresStats: %+v, %v", s, err)
	}
	want := [][]string{{"BrokerSeries", "ParkedSeries", "PostgresStats"}, nil, nil}
	for n, s := range shards {
		if !slices.Equal(s.calls, want[n]) {
			t.Errorf("shard %d: calls %v, want %v", n, s.calls, want[n])
		}
	}
}

func TestAnalyticsFailingShardIsUnreachable(t *testing.T) {
	t.Parallel()
	_, shards, sharded := metricsWorld()
	ctx := context.Background()
	down := errors.New("connection refused")
	shards[1].err = down
	span := ports.MetricsSpan{From: epoch, To: epoch.Add(time.Hour), Bucket: time.Minute}
	for name, read := range map[string]func() error{
		"series": func() error {
			_, err := sharded.QueueSeries(ctx, tenant, span, ports.ResourceFilter{}, nil)
			return err
		},
		"totals": func() error { _, err := sharded.QueueTotals(ctx, tenant, span, ports.ResourceFilter{}); return err },
		"retention": func() error {
			_, _, err := sharded.Retention(ctx, tenant, span, ports.ResourceFilter{}, ports.RetentionByQueue)
			return err
		},
		"errors": func() error { _, err := sharded.DeadLetterErrors(ctx, tenant, ports.ResourceFilter{}, 5); return err },
		"lag":    func() error { _, err := sharded.Lag(ctx, tenant); return err },
	} {
		err := read()
		var ue *shard.UnreachableError
		if !errors.As(err, &ue) || ue.Shard != 1 || !errors.Is(err, down) {
			t.Errorf("%s: %v, want shard 1 unreachable", name, err)
		}
	}
}
