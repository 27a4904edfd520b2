package admin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queen-go/queen/ports"
)

// The per-queue analytics: queue operations, lag, parked long polls and retention.

// QueueOps is GET /api/v1/analytics/queue-ops.
type QueueOps struct {
	Window Window
	// Series is one point per bucket summed over the selected queues (Queue: the queue
	// filter), or with PerQueue one per bucket and queue for the most active queues
	// (pushed + popped messages), ordered by bucket then queue name.
	Series []QueuePoint
	// Queues are the selected queues' totals over the range, the most active first (at
	// most MaxQueues).
	Queues []QueuePoint
}

// rankQueues orders totals by score, the highest first, ties by name.
func rankQueues(totals []ports.QueueTotal, score func(ports.Counters) int64) []ports.QueueTotal {
	out := slices.Clone(totals)
	slices.SortStableFunc(out, func(x, y ports.QueueTotal) int {
		return cmp.Or(cmp.Compare(score(y.Counters), score(x.Counters)), cmp.Compare(x.Queue, y.Queue))
	})
	return out
}

// topNames are the names of the first n of ranked whose score is above 0, in name order.
func topNames(ranked []ports.QueueTotal, n int, score func(ports.Counters) int64) []string {
	out := []string{}
	for _, t := range ranked {
		if len(out) == n || score(t.Counters) <= 0 {
			break
		}
		out = append(out, t.Queue)
	}
	slices.Sort(out)
	return out
}

// The scores queues are ranked and kept by.
func messagesMoved(c ports.Counters) int64 { return c.PushMessages + c.PopMessages }
func popped(c ports.Counters) int64        { return c.PopMessages }
func anyRow(ports.Counters) int64          { return 1 } // a queue with a row did something

func (a *Analytics) queueKey(route, tenant string, w Window, q AnalyticsQuery, rest ...any) string {
	return fmt.Sprintf("%s\x1f%s\x1f%s\x1f%q\x1f%q\x1f%q\x1f%v", route, tenant, w.key(), q.Queue, q.Namespace, q.Task, rest)
}

// QueueOps reads the queues' operations: two statements (the totals, then the series).
func (a *Analytics) QueueOps(ctx context.Context, tenant string, q AnalyticsQuery) (QueueOps, error) {
	w, err := a.Window(q)
	if err != nil {
		return QueueOps{}, err
	}
	n, err := a.limit(q)
	if err != nil {
		return QueueOps{}, err
	}
	return share(ctx, a, a.queueKey("ops", tenant, w, q, q.PerQueue, n), func(ctx context.Context) (QueueOps, error) {
		f := q.filter()
		totals, err := a.reader.QueueTotals(ctx, tenant, w.span(), f)
		if err != nil {
			return QueueOps{}, err
		}
		ranked := rankQueues(totals, messagesMoved)
		var names []string // nil: summed over the selection
		if q.PerQueue {
			names = topNames(ranked, n, anyRow)
		}
		rows, err := a.reader.QueueSeries(ctx, tenant, w.span(), f, names)
		if err != nil {
			return QueueOps{}, err
		}
		out := QueueOps{Window: w, Series: w.queueSeries(rows, names, q.Queue)}
		secs := w.seconds()
		for _, t := range ranked[:min(len(ranked), a.opts.MaxQueues)] {
			p := queuePoint(time.Time{}, t.Queue, t.Counters, secs)
			p.Partitions = t.Partitions
			out.Queues = append(out.Queues, p)
		}
		return out, nil
	})
}

// QueueLag is GET /api/v1/analytics/queue-lag: one point per bucket and queue (the
// queue filter's, else the limit queues that popped most), ordered by bucket then
// queue name.
type QueueLag struct {
	Window Window
	Points []QueuePoint
}

// QueueLag reads the queues' pop lag: two statements (one with a queue filter).
func (a *Analytics) QueueLag(ctx context.Context, tenant string, q AnalyticsQuery) (QueueLag, error) {
	w, err := a.Window(q)
	if err != nil {
		return QueueLag{}, err
	}
	n, err := a.limit(q)
	if err != nil {
		return QueueLag{}, err
	}
	return share(ctx, a, a.queueKey("lag", tenant, w, q, n), func(ctx context.Context) (QueueLag, error) {
		f := q.filter()
		names := []string{q.Queue}
		if q.Queue == "" {
			totals, err := a.reader.QueueTotals(ctx, tenant, w.span(), f)
			if err != nil {
				return QueueLag{}, err
			}
			names = topNames(rankQueues(totals, popped), n, popped)
		}
		rows, err := a.reader.QueueSeries(ctx, tenant, w.span(), f, names)
		if err != nil {
			return QueueLag{}, err
		}
		return QueueLag{Window: w, Points: w.queueSeries(rows, names, "")}, nil
	})
}

// Replica is one broker: its id (QUEEN_SERVER_ID) and host.
type Replica struct {
	Broker, Hostname string
}

// ParkedReport is GET /api/v1/analytics/queue-parked-replicas.
type ParkedReport struct {
	Window Window
	// Series is the most long polls parked at once per bucket, queue and broker, for
	// every (queue, broker) pair of the limit queues with most parked, zero-filled,
	// ordered by bucket, queue, broker.
	Series []ports.ParkedBucket
	// Replicas are the brokers that parked a poll in the range (on any queue).
	Replicas []Replica
}

// Parked reads the parked long polls per broker: one statement.
func (a *Analytics) Parked(ctx context.Context, tenant string, q AnalyticsQuery) (ParkedReport, error) {
	w, err := a.Window(q)
	if err != nil {
		return ParkedReport{}, err
	}
	n, err := a.limit(q)
	if err != nil {
		return ParkedReport{}, err
	}
	return share(ctx, a, a.queueKey("parked", tenant, w, q, n), func(ctx context.Context) (ParkedReport, error) {
		rows, err := a.reader.ParkedSeries(ctx, w.span(), q.Queue)
		if err != nil {
			return ParkedReport{}, err
		}
		return w.parkedSeries(rows, n), nil
	})
}

type parkedPair struct{ queue, broker, hostname string }

func (w Window) parkedSeries(rows []ports.ParkedBucket, n int) ParkedReport {
	most := map[string]int64{}
	replicas := map[Replica]bool{}
	for _, r := range rows {
		most[r.Queue] = max(most[r.Queue], r.Parked)
		replicas[Replica{r.Broker, r.Hostname}] = true
	}
	queues := make([]string, 0, len(most))
	for q := range most {
		queues = append(queues, q)
	}
	slices.SortFunc(queues, func(x, y string) int { return cmp.Or(cmp.Compare(most[y], most[x]), cmp.Compare(x, y)) })
	kept := map[string]bool{}
	for _, q := range queues[:min(n, len(queues))] {
		kept[q] = true
	}
	values := map[parkedPair]map[int64]int64{}
	for _, r := range rows {
		if !kept[r.Queue] {
			continue
		}
		p := parkedPair{r.Queue, r.Broker, r.Hostname}
		if values[p] == nil {
			values[p] = map[int64]int64{}
		}
		values[p][r.Bucket.Unix()] = r.Parked
	}
	pairs := make([]parkedPair, 0, len(values))
	for p := range values {
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(x, y parkedPair) int {
		return cmp.Or(cmp.Compare(x.queue, y.queue), cmp.Compare(x.broker, y.broker), cmp.Compare(x.hostname, y.hostname))
	})
	out := ParkedReport{Window: w, Series: []ports.ParkedBucket{}, Replicas: []Replica{}}
	for _, b := range w.Buckets() {
		for _, p := range pairs {
			out.Series = append(out.Series, ports.ParkedBucket{Bucket: b, Queue: p.queue, Broker: p.broker,
				Hostname: p.hostname, Parked: values[p][b.Unix()]})
		}
	}
	for r := range replicas {
		out.Replicas = append(out.Replicas, r)
	}
	slices.SortFunc(out.Replicas, func(x, y Replica) int {
		return cmp.Or(cmp.Compare(x.Hostname, y.Hostname), cmp.Compare(x.Broker, y.Broker))
	})
	return out
}

// RetentionPoint is what the retention cycle removed in a bucket, over the range
// (Bucket zero), or for one group (Key).
type RetentionPoint struct {
	Bucket time.Time
	Key    string
	// Messages removed by the retention, completed-retention and eviction jobs, and
	// Total their sum.
	Retention, Completed, Eviction, Total int64
	// Rows are the rows every job removed (the message jobs' and the others': hash
	// rows, dead letters, traces, partitions, history), Bytes their stored size, Events
	// the runs recorded.
	Rows, Bytes, Events int64
}

func (p *RetentionPoint) add(r ports.RetentionRow) {
	switch r.Job {
	case ports.JobRetention:
		p.Retention += r.Rows
	case ports.JobCompletedRetention:
		p.Completed += r.Rows
	case ports.JobEviction:
		p.Eviction += r.Rows
	}
	p.Total = p.Retention + p.Completed + p.Eviction
	p.Rows += r.Rows
	p.Bytes += r.Bytes
	p.Events += r.Runs
}

// RetentionReport is GET /api/v1/analytics/retention.
type RetentionReport struct {
	Window  Window
	GroupBy string           // "" without groups
	Series  []RetentionPoint // every bucket, oldest first
	Totals  RetentionPoint
	Groups  []RetentionPoint // with GroupBy: per key, the most messages removed first, ties by key
}

var retentionKeys = map[string]ports.RetentionKey{"": ports.RetentionNoGroups, "queue": ports.RetentionByQueue,
	"namespace": ports.RetentionByNamespace, "task": ports.RetentionByTask}

// Retention reads what the retention cycle removed: two statements in one snapshot.
func (a *Analytics) Retention(ctx context.Context, tenant string, q AnalyticsQuery) (RetentionReport, error) {
	key, ok := retentionKeys[q.GroupBy]
	if !ok {
		return RetentionReport{}, inputErrorf("groupBy", "groupBy must be namespace, task or queue, got %q", q.GroupBy)
	}
	w, err := a.Window(q)
	if err != nil {
		return RetentionReport{}, err
	}
	return share(ctx, a, a.queueKey("retention", tenant, w, q, q.GroupBy), func(ctx context.Context) (RetentionReport, error) {
		series, groups, err := a.reader.Retention(ctx, tenant, w.span(), q.filter(), key)
		if err != nil {
			return RetentionReport{}, err
		}
		out := RetentionReport{Window: w, GroupBy: q.GroupBy}
		at := map[int64]*RetentionPoint{}
		for _, b := range w.Buckets() {
			out.Series = append(out.Series, RetentionPoint{Bucket: b})
		}
		for i := range out.Series {
			at[out.Series[i].Bucket.Unix()] = &out.Series[i]
		}
		for _, r := range series {
			if p := at[r.Bucket.Unix()]; p != nil {
				p.add(r)
			}
			out.Totals.add(r)
		}
		byKey := map[string]*RetentionPoint{}
		for _, r := range groups {
			if byKey[r.Key] == nil {
				byKey[r.Key] = &RetentionPoint{Key: r.Key}
			}
			byKey[r.Key].add(r)
		}
		if key != ports.RetentionNoGroups {
			out.Groups = []RetentionPoint{}
		}
		for _, p := range byKey {
			out.Groups = append(out.Groups, *p)
		}
		slices.SortFunc(out.Groups, func(x, y RetentionPoint) int {
			return cmp.Or(cmp.Compare(y.Total, x.Total), cmp.Compare(x.Key, y.Key))
		})
		return out, nil
	})
}
