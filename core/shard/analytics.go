package shard

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// Analytics is ports.MetricsReader over several shards: each shard keeps the history and
// the dead letters of its own queues, so the tenant's reads ask every shard and add up
// their figures as one database's statement would have; the brokers' own rows are
// written to the catalogue (shard 0) only and are read there.
type Analytics struct {
	shards []ports.MetricsReader // index = shard number
}

var _ ports.MetricsReader = (*Analytics)(nil)

// NewAnalytics returns the metrics reader over shards (index = shard number).
func NewAnalytics(shards []ports.MetricsReader) *Analytics { return &Analytics{shards: shards} }

// QueueSeries implements ports.MetricsReader: the shards' buckets of the same instant
// and queue are added (ports.Counters.Add: sums add, maxima take the larger, as the
// statement aggregates rows), ordered by bucket then queue.
func (a *Analytics) QueueSeries(ctx context.Context, tenant string, span ports.MetricsSpan, f ports.ResourceFilter, queues []string) ([]ports.QueueBucket, error) {
	if queues != nil && len(queues) == 0 {
		return nil, nil
	}
	got, err := askAll(a.shards, func(_ int, s ports.MetricsReader) ([]ports.QueueBucket, error) {
		return s.QueueSeries(ctx, tenant, span, f, queues)
	})
	if err != nil {
		return nil, err
	}
	type key struct {
		at    time.Time
		queue string
	}
	out := combine(got, func(r ports.QueueBucket) key { return key{r.Bucket.UTC(), r.Queue} },
		func(into *ports.QueueBucket, r ports.QueueBucket) { into.Counters.Add(r.Counters) })
	slices.SortFunc(out, func(x, y ports.QueueBucket) int {
		return cmp.Or(x.Bucket.Compare(y.Bucket), strings.Compare(x.Queue, y.Queue))
	})
	return out, nil
}

// QueueTotals implements ports.MetricsReader: the history is kept by queue name, so the
// rows of one name from several shards are added, partitions too (a shard that does not
// hold the queue counts none), ordered by name.
func (a *Analytics) QueueTotals(ctx context.Context, tenant string, span ports.MetricsSpan, f ports.ResourceFilter) ([]ports.QueueTotal, error) {
	got, err := askAll(a.shards, func(_ int, s ports.MetricsReader) ([]ports.QueueTotal, error) {
		return s.QueueTotals(ctx, tenant, span, f)
	})
	if err != nil {
		return nil, err
	}
	out := combine(got, func(r ports.QueueTotal) string { return r.Queue }, func(into *ports.QueueTotal, r ports.QueueTotal) {
		into.Counters.Add(r.Counters)
		into.Partitions += r.Partitions
	})
	slices.SortFunc(out, func(x, y ports.QueueTotal) int { return strings.Compare(x.Queue, y.Queue) })
	return out, nil
}

// BrokerSeries implements ports.MetricsReader on shard 0: brokers write their own rows
// to the catalogue only.
func (a *Analytics) BrokerSeries(ctx context.Context, span ports.MetricsSpan, f ports.BrokerFilter) ([]ports.BrokerBucket, error) {
	return a.shards[0].BrokerSeries(ctx, span, f)
}

// ParkedSeries implements ports.MetricsReader on shard 0: the parked long polls are
// figures of the broker rows, which only the catalogue has.
func (a *Analytics) ParkedSeries(ctx context.Context, span ports.MetricsSpan, queue string) ([]ports.ParkedBucket, error) {
	return a.shards[0].ParkedSeries(ctx, span, queue)
}

// Retention implements ports.MetricsReader: each shard records the runs of its own
// retention; rows of the same bucket (or group) and job are added, the series ordered
// by bucket then job, the groups by key then job, as the statements order them.
func (a *Analytics) Retention(ctx context.Context, tenant string, span ports.MetricsSpan, f ports.ResourceFilter, key ports.RetentionKey) (series, groups []ports.RetentionRow, err error) {
	type answer struct{ series, groups []ports.RetentionRow }
	got, err := askAll(a.shards, func(_ int, s ports.MetricsReader) (answer, error) {
		series, groups, err := s.Retention(ctx, tenant, span, f, key)
		return answer{series, groups}, err
	})
	if err != nil {
		return nil, nil, err
	}
	gotSeries, gotGroups := make([][]ports.RetentionRow, len(got)), make([][]ports.RetentionRow, len(got))
	for n, g := range got {
		gotSeries[n], gotGroups[n] = g.series, g.groups
	}
	return addRetention(gotSeries), addRetention(gotGroups), nil
}

// addRetention adds up the rows of the same bucket, key and job and sorts them by
// bucket, key, then job (one of bucket and key is always the zero value).
func addRetention(shards [][]ports.RetentionRow) []ports.RetentionRow {
	type id struct {
		at       time.Time
		key, job string
	}
	out := combine(shards, func(r ports.RetentionRow) id { return id{r.Bucket.UTC(), r.Key, r.Job} },
		func(into *ports.RetentionRow, r ports.RetentionRow) {
			into.Runs += r.Runs
			into.Rows += r.Rows
			into.Bytes += r.Bytes
		})
	slices.SortFunc(out, func(x, y ports.RetentionRow) int {
		return cmp.Or(x.Bucket.Compare(y.Bucket), strings.Compare(x.Key, y.Key), strings.Compare(x.Job, y.Job))
	})
	return out
}

// DeadLetterErrors implements ports.MetricsReader: each shard counts every error text of
// its dead letters (the statement groups them all to sort by count anyway, so only the
// rows sent grow), the counts of one text are added, and the limit most frequent (ties
// by text) are kept. A per-shard top limit would miss a text frequent overall but on no
// shard among the first.
func (a *Analytics) DeadLetterErrors(ctx context.Context, tenant string, f ports.ResourceFilter, limit int) ([]ports.DeadLetterError, error) {
	if limit <= 0 {
		return nil, nil
	}
	got, err := askAll(a.shards, func(_ int, s ports.MetricsReader) ([]ports.DeadLetterError, error) {
		return s.DeadLetterErrors(ctx, tenant, f, wholeListing)
	})
	if err != nil {
		return nil, err
	}
	out := combine(got, func(r ports.DeadLetterError) string { return r.Error },
		func(into *ports.DeadLetterError, r ports.DeadLetterError) { into.Count += r.Count })
	slices.SortFunc(out, func(x, y ports.DeadLetterError) int {
		return cmp.Or(cmp.Compare(y.Count, x.Count), strings.Compare(x.Error, y.Error))
	})
	return out[:min(limit, len(out)):min(limit, len(out))], nil
}

// Lag implements ports.MetricsReader: positions add up, averages are the shards'
// averages weighted by their positions, maxima the largest. A median cannot be merged
// from medians: it is exact when one shard has every position, else the shards' medians
// weighted by their positions (it lies, as the true one does, between the smallest and
// the largest shard's).
func (a *Analytics) Lag(ctx context.Context, tenant string) (ports.LagFigures, error) {
	got, err := askAll(a.shards, func(_ int, s ports.MetricsReader) (ports.LagFigures, error) { return s.Lag(ctx, tenant) })
	var out ports.LagFigures
	if err != nil {
		return out, err
	}
	for _, g := range got {
		out.Positions += g.Positions
	}
	if out.Positions == 0 {
		return out, nil
	}
	for _, g := range got {
		w := float64(g.Positions) / float64(out.Positions)
		out.OffsetAvg += w * g.OffsetAvg
		out.OffsetMedian += w * g.OffsetMedian
		out.TimeAvg += w * g.TimeAvg
		out.TimeMedian += w * g.TimeMedian
		out.OffsetMax = max(out.OffsetMax, g.OffsetMax)
		out.TimeMax = max(out.TimeMax, g.TimeMax)
	}
	return out, nil
}

// PostgresStats implements ports.MetricsReader on shard 0 (the catalogue) only: the
// statistics views describe one database each, and the figures of several (settings,
// table sizes, active queries) do not add up into one; the other shards' statistics are
// not shown.
func (a *Analytics) PostgresStats(ctx context.Context, minQuery time.Duration) (ports.PostgresStats, error) {
	return a.shards[0].PostgresStats(ctx, minQuery)
}
