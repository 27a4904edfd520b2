package admin

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// fakeMetrics is an in-memory ports.MetricsReader: it answers the rows it was given
// (QueueSeries narrowed to the queues named) and counts the calls per method.
type fakeMetrics struct {
	mu        sync.Mutex
	calls     map[string]int
	spans     []ports.MetricsSpan
	queues    []ports.QueueBucket
	totals    []ports.QueueTotal
	brokers   []ports.BrokerBucket
	parked    []ports.ParkedBucket
	retention []ports.RetentionRow
	groups    []ports.RetentionRow
	errors    []ports.DeadLetterError
	lag       ports.LagFigures
	pg        ports.PostgresStats
	minQuery  time.Duration
}

func (f *fakeMetrics) called(op string, span ports.MetricsSpan) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[op]++
	f.spans = append(f.spans, span)
}

func (f *fakeMetrics) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeMetrics) QueueSeries(_ context.Context, _ string, span ports.MetricsSpan, _ ports.ResourceFilter, queues []string) ([]ports.QueueBucket, error) {
	f.called("QueueSeries", span)
	var out []ports.QueueBucket
	for _, r := range f.queues {
		if queues == nil && r.Queue == "" || queues != nil && slices.Contains(queues, r.Queue) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeMetrics) QueueTotals(_ context.Context, _ string, span ports.MetricsSpan, _ ports.ResourceFilter) ([]ports.QueueTotal, error) {
	f.called("QueueTotals", span)
	return f.totals, nil
}

func (f *fakeMetrics) BrokerSeries(_ context.Context, span ports.MetricsSpan, _ ports.BrokerFilter) ([]ports.BrokerBucket, error) {
	f.called("BrokerSeries", span)
	return f.brokers, nil
}

func (f *fakeMetrics) ParkedSeries(_ context.Context, span ports.MetricsSpan, _ string) ([]ports.ParkedBucket, error) {
	f.called("ParkedSeries", span)
	return f.parked, nil
}

func (f *fakeMetrics) Retention(_ context.Context, _ string, span ports.MetricsSpan, _ ports.ResourceFilter, key ports.RetentionKey) ([]ports.RetentionRow, []ports.RetentionRow, error) {
	f.called("Retention", span)
	if key == ports.RetentionNoGroups {
		return f.retention, nil, nil
	}
	return f.retention, f.groups, nil
}

func (f *fakeMetrics) DeadLetterErrors(_ context.Context, _ string, _ ports.ResourceFilter, limit int) ([]ports.DeadLetterError, error) {
	f.called("DeadLetterErrors", ports.MetricsSpan{})
	return f.errors[:min(limit, len(f.errors))], nil
}

func (f *fakeMetrics) Lag(context.Context, string) (ports.LagFigures, error) {
	f.called("Lag", ports.MetricsSpan{})
	return f.lag, nil
}

func (f *fakeMetrics) PostgresStats(_ context.Context, minQuery time.Duration) (ports.PostgresStats, error) {
	f.called("PostgresStats", ports.MetricsSpan{})
	f.minQuery = minQuery
	return f.pg, nil
}

// anaNow is the clock of the tests: 10:30:20 UTC.
var anaNow = time.Date(2026, 3, 2, 10, 30, 20, 0, time.UTC)

func newTestAnalytics(r ports.MetricsReader, opts AnalyticsOptions) *Analytics {
	if opts.Now == nil {
		opts.Now = func() time.Time { return anaNow }
	}
	return NewAnalytics(r, opts)
}

func at(hhmm string) time.Time {
	t, err := time.Parse("15:04", hhmm)
	if err != nil {
		panic(err)
	}
	return time.Date(2026, 3, 2, t.Hour(), t.Minute(), 0, 0, time.UTC)
}

func ptr[T any](v T) *T { return &v }

func inputParam(err error) string {
	var ie *InputError
	if errors.As(err, &ie) {
		return ie.Param
	}
	return ""
}

func TestAnalyticsWindow(t *testing.T) {
	t.Parallel()
	a := newTestAnalytics(&fakeMetrics{}, AnalyticsOptions{})
	day := 24 * time.Hour
	tests := []struct {
		name       string
		q          AnalyticsQuery
		from, to   time.Time
		bucket     time.Duration
		points     int
		errorParam string
	}{
		{"defaults: the last hour, minute buckets", AnalyticsQuery{}, anaNow.Add(-time.Hour), anaNow, time.Minute, 61, ""},
		{"6 h: still minutes (360 of them)", AnalyticsQuery{From: ptr(anaNow.Add(-6 * time.Hour))}, anaNow.Add(-6 * time.Hour), anaNow, time.Minute, 361, ""},
		{"24 h: 5 minutes", AnalyticsQuery{From: ptr(anaNow.Add(-day))}, anaNow.Add(-day), anaNow, 5 * time.Minute, 289, ""},
		{"7 days: an hour", AnalyticsQuery{From: ptr(anaNow.Add(-7 * day))}, anaNow.Add(-7 * day), anaNow, time.Hour, 169, ""},
		{"90 days: 6 hours", AnalyticsQuery{From: ptr(anaNow.Add(-90 * day))}, anaNow.Add(-90 * day), anaNow, 6 * time.Hour, 361, ""},
		{"to alone: the hour before it", AnalyticsQuery{To: ptr(at("08:00"))}, at("07:00"), at("08:00"), time.Minute, 61, ""},
		{"a coarser interval", AnalyticsQuery{Interval: "15"}, anaNow.Add(-time.Hour), anaNow, 15 * time.Minute, 5, ""},
		{"an interval by name", AnalyticsQuery{Interval: "hour"}, anaNow.Add(-time.Hour), anaNow, time.Hour, 2, ""},
		{"an interval as a duration", AnalyticsQuery{Interval: "15m"}, anaNow.Add(-time.Hour), anaNow, 15 * time.Minute, 5, ""},
		{"30 minutes is off the ladder (no rollup serves it)", AnalyticsQuery{Interval: "30"}, time.Time{}, time.Time{}, 0, 0, "interval"},
		{"a finer interval is ignored", AnalyticsQuery{From: ptr(anaNow.Add(-day)), Interval: "minute"}, anaNow.Add(-day), anaNow, 5 * time.Minute, 289, ""},
		{"from after to", AnalyticsQuery{From: ptr(at("11:00")), To: ptr(at("10:00"))}, time.Time{}, time.Time{}, 0, 0, "from"},
		{"from equal to to", AnalyticsQuery{From: ptr(at("10:00")), To: ptr(at("10:00"))}, time.Time{}, time.Time{}, 0, 0, "from"},
		{"more than 90 days", AnalyticsQuery{From: ptr(anaNow.Add(-91 * day))}, time.Time{}, time.Time{}, 0, 0, "from"},
		{"an interval off the ladder", AnalyticsQuery{Interval: "7"}, time.Time{}, time.Time{}, 0, 0, "interval"},
		{"an interval that is no interval", AnalyticsQuery{Interval: "weekly"}, time.Time{}, time.Time{}, 0, 0, "interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, err := a.Window(tt.q)
			if tt.errorParam != "" {
				if p := inputParam(err); p != tt.errorParam {
					t.Fatalf("error %v naming %q, want an InputError naming %q", err, p, tt.errorParam)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !w.From.Equal(tt.from) || !w.To.Equal(tt.to) || w.Bucket != tt.bucket {
				t.Fatalf("window %v..%v by %v, want %v..%v by %v", w.From, w.To, w.Bucket, tt.from, tt.to, tt.bucket)
			}
			b := w.Buckets()
			if len(b) != tt.points {
				t.Fatalf("%d buckets, want %d", len(b), tt.points)
			}
			if b[0].After(w.From) || !b[len(b)-1].Add(w.Bucket).After(w.To) || b[0].Unix()%int64(w.Bucket/time.Second) != 0 {
				t.Fatalf("buckets %v..%v do not cover %v..%v aligned", b[0], b[len(b)-1], w.From, w.To)
			}
		})
	}
}

// TestAnalyticsMaxRange: the longest range is METRICS_RETENTION_DAYS' (the option), and
// never more than 360 days, whose buckets would be wider than a day.
func TestAnalyticsMaxRange(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	for _, tt := range []struct {
		name     string
		maxRange time.Duration
		span     time.Duration
		ok       bool
	}{
		{"within the retention", 7 * day, 7 * day, true},
		{"past the retention", 7 * day, 8 * day, false},
		{"a long retention: 360 days of day buckets", 1000 * day, 360 * day, true},
		{"a long retention: no more", 1000 * day, 361 * day, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := newTestAnalytics(&fakeMetrics{}, AnalyticsOptions{MaxRange: tt.maxRange})
			w, err := a.Window(AnalyticsQuery{From: ptr(anaNow.Add(-tt.span))})
			if tt.ok != (err == nil) || (err != nil && inputParam(err) != "from") {
				t.Fatalf("error %v, want ok %v", err, tt.ok)
			}
			if err == nil && len(w.Buckets()) > 361 {
				t.Fatalf("%d buckets", len(w.Buckets()))
			}
		})
	}
}

func TestAnalyticsQueueOps(t *testing.T) {
	t.Parallel()
	f := &fakeMetrics{
		queues: []ports.QueueBucket{
			{Bucket: at("10:00"), Counters: ports.Counters{PushMessages: 600, PopMessages: 300, PopEmpty: 60, AckSuccess: 100, AckFailed: 20, LagCount: 4, LagSumMs: 10}},
			{Bucket: at("10:30"), Counters: ports.Counters{PushMessages: 60}},
			{Bucket: at("10:00"), Queue: "a", Counters: ports.Counters{PushMessages: 600}},
			{Bucket: at("10:15"), Queue: "b", Counters: ports.Counters{PopMessages: 9}},
		},
		totals: []ports.QueueTotal{
			{Queue: "c", Counters: ports.Counters{Transactions: 3}},
			{Queue: "b", Counters: ports.Counters{PopMessages: 9}, Partitions: 2},
			{Queue: "a", Counters: ports.Counters{PushMessages: 600, LagCount: 2, LagSumMs: 5}, Partitions: 1},
		},
	}
	a := newTestAnalytics(f, AnalyticsOptions{})
	ctx := context.Background()
	q := AnalyticsQuery{From: ptr(at("10:00")), To: ptr(at("10:40")), Interval: "15"}

	ops, err := a.QueueOps(ctx, ports.DefaultTenant, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops.Series) != 3 {
		t.Fatalf("%d points, want 3 (10:00, 10:15, 10:30): %+v", len(ops.Series), ops.Series)
	}
	first := ops.Series[0]
	if first.Bucket != at("10:00") || first.PushPerSecond != 0.67 || first.PopPerSecond != 0.33 || first.EmptyPerSecond != 0.07 ||
		first.AckPerSecond != 0.13 || first.AvgLagMs != 2.5 {
		t.Fatalf("rates over 900 s and lag: %+v", first)
	}
	if quiet := ops.Series[1]; quiet.Bucket != at("10:15") || quiet.Counters != (ports.Counters{}) {
		t.Fatalf("a quiet bucket is zero-filled: %+v", quiet)
	}
	var names []string
	for _, p := range ops.Queues {
		names = append(names, p.Queue)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("queues %v, want the most messages moved first", names)
	}
	// 15-minute buckets read the 5-minute rollups: 10:00..10:40 covers 10:00..10:44.
	if a0 := ops.Queues[0]; a0.Partitions != 1 || a0.PushPerSecond != 0.22 || a0.AvgLagMs != 2.5 {
		t.Fatalf("a's totals over the range's whole 5-minute rollups (45 minutes): %+v", a0)
	}

	q.PerQueue, q.Limit = true, ptr(2)
	ops, err = a.QueueOps(ctx, ports.DefaultTenant, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops.Series) != 6 {
		t.Fatalf("%d points, want 3 buckets x 2 queues: %+v", len(ops.Series), ops.Series)
	}
	var got []string
	for _, p := range ops.Series {
		got = append(got, p.Bucket.Format("15:04")+" "+p.Queue)
	}
	want := []string{"10:00 a", "10:00 b", "10:15 a", "10:15 b", "10:30 a", "10:30 b"}
	if !slices.Equal(got, want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	if ops.Series[0].PushMessages != 600 || ops.Series[3].PopMessages != 9 {
		t.Fatalf("per-queue values: %+v", ops.Series)
	}

	if _, err := a.QueueOps(ctx, ports.DefaultTenant, AnalyticsQuery{Limit: ptr(0)}); inputParam(err) != "limit" {
		t.Fatalf("limit 0: %v", err)
	}
}

func TestAnalyticsQueueLag(t *testing.T) {
	t.Parallel()
	f := &fakeMetrics{
		queues: []ports.QueueBucket{{Bucket: at("10:29"), Queue: "b", Counters: ports.Counters{PopMessages: 4, LagCount: 4, LagSumMs: 400, LagMaxMs: 250}}},
		totals: []ports.QueueTotal{
			{Queue: "a", Counters: ports.Counters{PushMessages: 5}}, // never popped: no lag series
			{Queue: "b", Counters: ports.Counters{PopMessages: 4}},
		},
	}
	a := newTestAnalytics(f, AnalyticsOptions{})
	lag, err := a.QueueLag(context.Background(), ports.DefaultTenant, AnalyticsQuery{From: ptr(at("10:28")), To: ptr(at("10:30"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(lag.Points) != 3 || lag.Points[1].Queue != "b" || lag.Points[1].AvgLagMs != 100 || lag.Points[1].LagMaxMs != 250 ||
		lag.Points[0].AvgLagMs != 0 {
		t.Fatalf("points %+v", lag.Points)
	}
	// A queue filter reads its series without the totals.
	before := f.count("QueueTotals")
	lag, err = a.QueueLag(context.Background(), ports.DefaultTenant, AnalyticsQuery{From: ptr(at("10:28")), To: ptr(at("10:30")), Queue: "b"})
	if err != nil || len(lag.Points) != 3 || f.count("QueueTotals") != before {
		t.Fatalf("one queue: %+v, %v, totals read %d times", lag.Points, err, f.count("QueueTotals")-before)
	}
}

func TestAnalyticsThroughput(t *testing.T) {
	t.Parallel()
	rows := []ports.BrokerBucket{
		{Bucket: at("10:29"), Broker: "b1", Minutes: 1, Counters: ports.Counters{PushMessages: 60, AckSuccess: 30, LagCount: 1, LagSumMs: 10},
			Figures: ports.BrokerFigures{CPUUserUs: 30e6, CPUSysUs: 6e6, Samples: 2, Requests: 4, LatencySumUs: 8000, LatencyMaxUs: 5000,
				RSS: ports.Gauge{Sum: 200 << 20}, PoolIdle: ports.Gauge{Sum: 6, Min: 2}, PoolActive: ports.Gauge{Sum: 2, Max: 2}},
			PerMinute: ports.MinuteGauges{PoolSize: ports.Gauge{Sum: 5}}},
		{Bucket: at("10:29"), Broker: "b2", Minutes: 1, Counters: ports.Counters{PushMessages: 120, LagCount: 1, LagSumMs: 30},
			Figures:   ports.BrokerFigures{CPUUserUs: 90e6, Samples: 2, RSS: ports.Gauge{Sum: 100 << 20}, PoolIdle: ports.Gauge{Sum: 2, Min: 1}},
			PerMinute: ports.MinuteGauges{PoolSize: ports.Gauge{Sum: 3}}},
	}
	f := &fakeMetrics{brokers: rows,
		queues: []ports.QueueBucket{{Bucket: at("10:29"), Counters: ports.Counters{PushMessages: 6, PopMessages: 3}}}}
	a := newTestAnalytics(f, AnalyticsOptions{})
	ctx := context.Background()
	q := AnalyticsQuery{From: ptr(at("10:28")), To: ptr(at("10:30"))}

	tp, err := a.Throughput(ctx, ports.DefaultTenant, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.Series) != 3 || tp.ByQueues {
		t.Fatalf("series %+v", tp.Series)
	}
	p := tp.Series[1]
	want := ActivityPoint{Bucket: at("10:29"), Minutes: 2, Counters: ports.Counters{PushMessages: 180, AckSuccess: 30, LagCount: 2, LagSumMs: 40},
		AvgLagMs: 20, PushPerSecond: 3, AckPerSecond: 0.5, Requests: 4, AvgLatencyMs: 2, MaxLatencyMs: 5,
		CPUUserPct: 100, CPUSysPct: 5, RSSBytes: 75 << 20, PoolSize: 4, PoolIdle: 2, PoolActive: 0.5, PoolIdleMin: 1, PoolActiveMax: 2}
	if p != want {
		t.Fatalf("two brokers in one minute:\n got  %+v\nwant %+v", p, want)
	}
	if tp.Series[0].Minutes != 0 || tp.Series[0].PushMessages != 0 || tp.Totals.PushMessages != 180 || tp.Totals.PushPerSecond != 1 {
		t.Fatalf("zero-filled bucket %+v, totals %+v", tp.Series[0], tp.Totals)
	}

	q.Namespace = "billing"
	tp, err = a.Throughput(ctx, ports.DefaultTenant, q)
	if err != nil {
		t.Fatal(err)
	}
	if p := tp.Series[1]; !tp.ByQueues || p.PushMessages != 6 || p.PopMessages != 3 || p.PushPerSecond != 0.1 || p.CPUUserPct != 100 {
		t.Fatalf("a namespace's counters, the brokers' process figures: %+v", p)
	}
	if tp.Totals.PushMessages != 6 || tp.Totals.AckSuccess != 0 {
		t.Fatalf("totals of the namespace: %+v", tp.Totals)
	}
}

func TestAnalyticsSystem(t *testing.T) {
	t.Parallel()
	f := &fakeMetrics{brokers: []ports.BrokerBucket{{Bucket: at("10:29"), Broker: "b1", Hostname: "h", Port: 6632, Minutes: 1,
		Figures:   ports.BrokerFigures{Samples: 4, RSS: ports.Gauge{Sum: 400, Min: 50, Max: 200, Last: 150}, GoroutinesMax: 90},
		PerMinute: ports.MinuteGauges{CPUUserUs: ports.Gauge{Sum: 9e6, Min: 9e6, Max: 9e6, Last: 9e6}, Goroutines: ports.Gauge{Sum: 40, Min: 40, Max: 40, Last: 40}}}}}
	a := newTestAnalytics(f, AnalyticsOptions{})
	r, err := a.System(context.Background(), AnalyticsQuery{From: ptr(at("10:28")), To: ptr(at("10:30"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Replicas) != 1 || len(r.Replicas[0].Points) != 3 {
		t.Fatalf("replicas %+v", r.Replicas)
	}
	p := r.Replicas[0].Points[1]
	if p.CPUUser != (Leaf{Avg: 1500, Min: 1500, Max: 1500, Last: 1500}) || p.RSS != (Leaf{Avg: 100, Min: 50, Max: 200, Last: 150}) ||
		p.Goroutines.Max != 90 || p.Goroutines.Avg != 40 {
		t.Fatalf("9 s of CPU in a minute is 15 %% (1500), RSS per sample: %+v", p)
	}
	if filler := r.Replicas[0].Points[0]; filler.Minutes != 0 || filler.Bucket != at("10:28") || filler.CPUUser != (Leaf{}) {
		t.Fatalf("filler %+v", filler)
	}
}

func TestAnalyticsRetention(t *testing.T) {
	t.Parallel()
	f := &fakeMetrics{
		retention: []ports.RetentionRow{
			{Bucket: at("10:29"), Job: ports.JobRetention, Runs: 2, Rows: 10, Bytes: 100},
			{Bucket: at("10:29"), Job: ports.JobEviction, Runs: 1, Rows: 1, Bytes: 10},
			{Bucket: at("10:30"), Job: "traces", Runs: 1, Rows: 7, Bytes: 70},
		},
		groups: []ports.RetentionRow{
			{Key: "a", Job: ports.JobRetention, Runs: 1, Rows: 3},
			{Key: "b", Job: ports.JobRetention, Runs: 1, Rows: 7},
			{Key: "b", Job: ports.JobCompletedRetention, Runs: 1, Rows: 1},
		},
	}
	a := newTestAnalytics(f, AnalyticsOptions{})
	ctx := context.Background()
	q := AnalyticsQuery{From: ptr(at("10:28")), To: ptr(at("10:30")), GroupBy: "queue"}
	r, err := a.Retention(ctx, ports.DefaultTenant, q)
	if err != nil {
		t.Fatal(err)
	}
	want := []RetentionPoint{{Bucket: at("10:28")},
		{Bucket: at("10:29"), Retention: 10, Eviction: 1, Total: 11, Rows: 11, Bytes: 110, Events: 3},
		{Bucket: at("10:30"), Rows: 7, Bytes: 70, Events: 1}} // traces: rows, no messages
	if !reflect.DeepEqual(r.Series, want) {
		t.Fatalf("series\n got  %+v\nwant %+v", r.Series, want)
	}
	if r.Totals != (RetentionPoint{Retention: 10, Eviction: 1, Total: 11, Rows: 18, Bytes: 180, Events: 4}) {
		t.Fatalf("totals %+v", r.Totals)
	}
	if len(r.Groups) != 2 || r.Groups[0].Key != "b" || r.Groups[0].Total != 8 || r.Groups[0].Completed != 1 || r.Groups[1].Key != "a" {
		t.Fatalf("groups %+v", r.Groups)
	}
	q.GroupBy = "partition"
	if _, err := a.Retention(ctx, ports.DefaultTenant, q); inputParam(err) != "groupBy" {
		t.Fatalf("groupBy partition: %v", err)
	}
}

// TestAnalyticsShare: identical requests inside the share window cost one read; another
// query, or the window passed, reads again.
func TestAnalyticsShare(t *testing.T) {
	t.Parallel()
	now := anaNow
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	f := &fakeMetrics{}
	a := newTestAnalytics(f, AnalyticsOptions{ShareWindow: 5 * time.Second, Now: clock})
	ctx := context.Background()
	read := func(q AnalyticsQuery) {
		t.Helper()
		if _, err := a.System(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	read(AnalyticsQuery{})
	mu.Lock()
	now = now.Add(2 * time.Second) // the default range moves, within the same minutes
	mu.Unlock()
	read(AnalyticsQuery{})
	if n := f.count("BrokerSeries"); n != 1 {
		t.Fatalf("%d reads for two identical polls inside the window, want 1", n)
	}
	read(AnalyticsQuery{Hostname: "h"})
	if n := f.count("BrokerSeries"); n != 2 {
		t.Fatalf("another filter: %d reads, want 2", n)
	}
	mu.Lock()
	now = now.Add(5 * time.Second)
	mu.Unlock()
	read(AnalyticsQuery{})
	if n := f.count("BrokerSeries"); n != 3 {
		t.Fatalf("after the window: %d reads, want 3", n)
	}
}

func TestAnalyticsStatusAndOverview(t *testing.T) {
	t.Parallel()
	f := &fakeMetrics{
		queues: []ports.QueueBucket{{Bucket: at("10:27"), Counters: ports.Counters{PushMessages: 300, AckSuccess: 150, AckFailed: 30}}},
		brokers: []ports.BrokerBucket{{Bucket: at("10:29"), Broker: "b1", Hostname: "h", Minutes: 1, LastMinute: at("10:29"),
			Counters: ports.Counters{PushMessages: 5}}},
		errors: []ports.DeadLetterError{{Error: "timeout", Count: 3}, {Error: "bad", Count: 1}},
		lag:    ports.LagFigures{Positions: 3, OffsetAvg: 1.666666, TimeMax: 12.3456},
	}
	a := newTestAnalytics(f, AnalyticsOptions{TopErrors: 1})
	ctx := context.Background()
	st, err := a.Status(ctx, ports.DefaultTenant, AnalyticsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Series) != 61 || len(st.Workers) != 1 || st.Workers[0].Broker != "b1" || !st.Workers[0].LastSeen.Equal(at("10:29")) ||
		len(st.TopErrors) != 1 || st.TopErrors[0].Error != "timeout" {
		t.Fatalf("status: %d points, workers %+v, errors %+v", len(st.Series), st.Workers, st.TopErrors)
	}
	o, err := a.Overview(ctx, ports.DefaultTenant)
	if err != nil {
		t.Fatal(err)
	}
	if o.IngestedPerSecond != 1 || o.ProcessedPerSecond != 0.6 || o.Lag.OffsetAvg != 1.67 || o.Lag.TimeMax != 12.35 {
		t.Fatalf("overview %+v", o)
	}
	span := f.spans[len(f.spans)-2] // the overview's QueueSeries, before Lag
	if !span.From.Equal(at("10:25")) || !span.To.Equal(at("10:29")) {
		t.Fatalf("overview span %v..%v, want the five whole minutes 10:25..10:29", span.From, span.To)
	}
}

func TestAnalyticsPostgres(t *testing.T) {
	t.Parallel()
	f := &fakeMetrics{pg: ports.PostgresStats{
		Database: ports.DatabaseFigures{Name: "q", CacheFigures: ports.CacheFigures{Hits: 99, Reads: 1}},
		Tables:   []ports.TableCache{{Table: "queen.a", CacheFigures: ports.CacheFigures{Hits: 3, Reads: 1}}, {Table: "queen.b"}},
		Indexes: []ports.IndexCache{{Index: "queen.i1", CacheFigures: ports.CacheFigures{Reads: 1}},
			{Index: "queen.i2", CacheFigures: ports.CacheFigures{Reads: 5}}},
		Activity: []ports.TableActivity{
			{Table: "queen.a", LiveTuples: 90, DeadTuples: 10, Updates: 4, HotUpdates: 1, VacuumThreshold: 5},
			{Table: "queen.b", LiveTuples: 10, DeadTuples: 0, Updates: 0},
			{Table: "queen.c", LiveTuples: 10, DeadTuples: 20, Updates: 8, HotUpdates: 8, VacuumThreshold: 50},
		},
		BufferUsage: []ports.BufferUse{{Object: "queen.a", Buffers: 4}}, BufferTotal: 16,
	}}
	a := newTestAnalytics(f, AnalyticsOptions{})
	r, err := a.Postgres(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.minQuery != time.Second {
		t.Fatalf("slow query threshold %v, want 1 s", f.minQuery)
	}
	if r.Database.Ratio != 99 || r.Tables[0].Ratio != 75 || r.Tables[1].Ratio != 0 || r.TablesSum.Ratio != 75 {
		t.Fatalf("cache ratios: %+v %+v %+v", r.Database, r.Tables, r.TablesSum)
	}
	if r.Indexes[0].Name != "queen.i2" || r.IndexesSum.Reads != 6 {
		t.Fatalf("indexes %+v", r.Indexes)
	}
	if len(r.DeadTuples) != 2 || r.DeadTuples[0].Table != "queen.c" || r.DeadTuples[1].DeadPct != 10 {
		t.Fatalf("dead tuples %+v", r.DeadTuples)
	}
	if len(r.HotUpdates) != 2 || r.HotUpdates[0].Table != "queen.c" || r.HotUpdates[0].HotPct != 100 || r.HotUpdates[1].HotPct != 25 {
		t.Fatalf("hot updates %+v", r.HotUpdates)
	}
	if len(r.Autovacuum) != 1 || r.Autovacuum[0].Table != "queen.a" {
		t.Fatalf("autovacuum due %+v", r.Autovacuum)
	}
	if len(r.BufferUsage) != 1 || r.BufferUsage[0].Pct != 25 {
		t.Fatalf("buffers %+v", r.BufferUsage)
	}
}
