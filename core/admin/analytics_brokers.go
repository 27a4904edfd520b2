package admin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queen-go/queen/ports"
)

// The analytics of the brokers' rows: system and worker metrics, the throughput of
// GET /api/v1/status and status/analytics, and the overview's recent figures.

// minuteUs is a minute of CPU time in µs: 100 % of one core for a minute row.
const minuteUs = 60e6

// ActivityPoint is what the selected brokers did in a bucket or over a range (Bucket
// zero), summed over them; the process figures average their minute rows.
type ActivityPoint struct {
	Bucket  time.Time
	Minutes int64 // broker minute rows (0: no broker wrote the bucket)
	ports.Counters
	AvgLagMs                                  float64
	PushPerSecond, PopPerSecond, AckPerSecond float64
	DBErrors, Requests                        int64
	// AvgLatencyMs and MaxLatencyMs are the HTTP requests' latency, ms.
	AvgLatencyMs, MaxLatencyMs float64
	// CPUUserPct and CPUSysPct are the CPU used per minute row, % of one core.
	CPUUserPct, CPUSysPct float64
	RSSBytes              float64 // the samples' average
	// PoolSize, PoolIdle and PoolActive average the database connections; PoolIdleMin
	// is the fewest idle and PoolActiveMax the most in use at a sample.
	PoolSize, PoolIdle, PoolActive float64
	PoolIdleMin, PoolActiveMax     int64
	GoroutinesMax, SpoolPendingMax int64
}

// activityAcc sums broker buckets into an ActivityPoint.
type activityAcc struct {
	minutes, samples            int64
	c                           ports.Counters
	f                           ports.BrokerFigures
	rss, idle, active, poolSize int64
	idleMin                     int64
	idleSeen                    bool
	activeMax, gorMax, spoolMax int64
}

func (a *activityAcc) add(b ports.BrokerBucket) {
	a.minutes += b.Minutes
	a.c.Add(b.Counters)
	f := b.Figures
	a.f.CPUUserUs += f.CPUUserUs
	a.f.CPUSysUs += f.CPUSysUs
	a.f.Requests += f.Requests
	a.f.LatencySumUs += f.LatencySumUs
	a.f.LatencyMaxUs = max(a.f.LatencyMaxUs, f.LatencyMaxUs)
	a.f.DBErrors += f.DBErrors
	a.samples += f.Samples
	a.rss += f.RSS.Sum
	a.idle += f.PoolIdle.Sum
	a.active += f.PoolActive.Sum
	a.poolSize += b.PerMinute.PoolSize.Sum
	if f.Samples > 0 && (!a.idleSeen || f.PoolIdle.Min < a.idleMin) {
		a.idleMin, a.idleSeen = f.PoolIdle.Min, true
	}
	a.activeMax = max(a.activeMax, f.PoolActive.Max)
	a.gorMax = max(a.gorMax, f.GoroutinesMax)
	a.spoolMax = max(a.spoolMax, f.SpoolPendingMax)
}

// point is the sum as a point of bucket b over seconds (the rates' denominator).
func (a *activityAcc) point(b time.Time, seconds float64) ActivityPoint {
	p := ActivityPoint{Bucket: b, Minutes: a.minutes, Counters: a.c, AvgLagMs: lagAvg(a.c),
		DBErrors: a.f.DBErrors, Requests: a.f.Requests,
		AvgLatencyMs: round2(ratio(float64(a.f.LatencySumUs), float64(a.f.Requests)) / 1000),
		MaxLatencyMs: round2(float64(a.f.LatencyMaxUs) / 1000),
		CPUUserPct:   ratio(float64(a.f.CPUUserUs)*100, float64(a.minutes)*minuteUs),
		CPUSysPct:    ratio(float64(a.f.CPUSysUs)*100, float64(a.minutes)*minuteUs),
		RSSBytes:     ratio(float64(a.rss), float64(a.samples)),
		PoolSize:     ratio(float64(a.poolSize), float64(a.minutes)),
		PoolIdle:     ratio(float64(a.idle), float64(a.samples)),
		PoolActive:   ratio(float64(a.active), float64(a.samples)),
		PoolIdleMin:  a.idleMin, PoolActiveMax: a.activeMax, GoroutinesMax: a.gorMax, SpoolPendingMax: a.spoolMax}
	p.setRates(seconds)
	return p
}

func (p *ActivityPoint) setRates(seconds float64) {
	p.PushPerSecond = ratio(float64(p.PushMessages), seconds)
	p.PopPerSecond = ratio(float64(p.PopMessages), seconds)
	p.AckPerSecond = ratio(float64(p.AckSuccess+p.AckFailed), seconds)
}

// brokerSeries zero-fills broker buckets into one point per bucket, summed over the
// brokers, and their total over the range.
func (w Window) brokerSeries(rows []ports.BrokerBucket) (series []ActivityPoint, total ActivityPoint) {
	accs := map[int64]*activityAcc{}
	var all activityAcc
	for _, r := range rows {
		acc := accs[r.Bucket.Unix()]
		if acc == nil {
			acc = &activityAcc{}
			accs[r.Bucket.Unix()] = acc
		}
		acc.add(r)
		all.add(r)
	}
	series = []ActivityPoint{}
	for _, b := range w.Buckets() {
		acc := accs[b.Unix()]
		if acc == nil {
			acc = &activityAcc{}
		}
		series = append(series, acc.point(b, w.Bucket.Seconds()))
	}
	return series, all.point(time.Time{}, w.seconds())
}

// Leaf is a gauge over a bucket: the average, the smallest, the largest and the latest.
type Leaf struct {
	Avg, Min, Max, Last float64
}

func leafOf(g ports.Gauge, n int64, scale float64) Leaf {
	return Leaf{Avg: ratio(float64(g.Sum), float64(n)*scale), Min: round2(float64(g.Min) / scale),
		Max: round2(float64(g.Max) / scale), Last: round2(float64(g.Last) / scale)}
}

// ReplicaPoint is one broker's process figures in a bucket.
type ReplicaPoint struct {
	Bucket           time.Time
	Samples, Minutes int64
	// CPUUser and CPUSys are the CPU used in each minute, in hundredths of a percent of
	// one core (Queen's unit: 1523 = 15.23 %).
	CPUUser, CPUSys Leaf
	RSS, Virtual    Leaf // bytes
	// PoolSize, PoolIdle and PoolActive are database connections.
	PoolSize, PoolIdle, PoolActive Leaf
	Goroutines, SpoolPending       Leaf
	Requests                       int64
	AvgLatencyMs, MaxLatencyMs     float64
}

// cpuScale turns a minute's CPU µs into hundredths of a percent of one core.
const cpuScale = minuteUs / 10000

func replicaPoint(b ports.BrokerBucket) ReplicaPoint {
	f, m := b.Figures, b.PerMinute
	gor := leafOf(m.Goroutines, b.Minutes, 1)
	gor.Max = float64(f.GoroutinesMax)
	spool := leafOf(m.SpoolPending, b.Minutes, 1)
	spool.Max = float64(f.SpoolPendingMax)
	return ReplicaPoint{Bucket: b.Bucket, Samples: f.Samples, Minutes: b.Minutes,
		CPUUser: leafOf(m.CPUUserUs, b.Minutes, cpuScale), CPUSys: leafOf(m.CPUSysUs, b.Minutes, cpuScale),
		RSS: leafOf(f.RSS, f.Samples, 1), Virtual: leafOf(m.VirtualBytes, b.Minutes, 1),
		PoolSize: leafOf(m.PoolSize, b.Minutes, 1), PoolIdle: leafOf(f.PoolIdle, f.Samples, 1),
		PoolActive: leafOf(f.PoolActive, f.Samples, 1), Goroutines: gor, SpoolPending: spool,
		Requests:     f.Requests,
		AvgLatencyMs: round2(ratio(float64(f.LatencySumUs), float64(f.Requests)) / 1000),
		MaxLatencyMs: round2(float64(f.LatencyMaxUs) / 1000)}
}

// ReplicaSeries is one broker's points, every bucket of the range (zero-filled: Minutes
// 0 where it wrote nothing).
type ReplicaSeries struct {
	Broker, Hostname string
	Port             int
	Points           []ReplicaPoint
}

// SystemReport is GET /api/v1/analytics/system-metrics.
type SystemReport struct {
	Window   Window
	Replicas []ReplicaSeries // by broker
}

func (a *Analytics) brokerKey(route string, w Window, q AnalyticsQuery, rest ...any) string {
	return fmt.Sprintf("%s\x1f%s\x1f%q\x1f%q\x1f%v", route, w.key(), q.Hostname, q.Broker, rest)
}

// System reads every broker's process figures: one statement.
func (a *Analytics) System(ctx context.Context, q AnalyticsQuery) (SystemReport, error) {
	w, err := a.Window(q)
	if err != nil {
		return SystemReport{}, err
	}
	return share(ctx, a, a.brokerKey("system", w, q), func(ctx context.Context) (SystemReport, error) {
		rows, err := a.reader.BrokerSeries(ctx, w.span(), ports.BrokerFilter{Hostname: q.Hostname, Broker: q.Broker})
		if err != nil {
			return SystemReport{}, err
		}
		return w.systemReport(rows), nil
	})
}

func (w Window) systemReport(rows []ports.BrokerBucket) SystemReport {
	type replica struct {
		broker, host string
		port         int
	}
	at := map[replica]map[int64]ports.BrokerBucket{}
	var order []replica
	for _, r := range rows {
		k := replica{r.Broker, r.Hostname, r.Port}
		if at[k] == nil {
			at[k] = map[int64]ports.BrokerBucket{}
			order = append(order, k)
		}
		at[k][r.Bucket.Unix()] = r
	}
	out := SystemReport{Window: w, Replicas: []ReplicaSeries{}}
	for _, k := range order {
		s := ReplicaSeries{Broker: k.broker, Hostname: k.host, Port: k.port}
		for _, b := range w.Buckets() {
			r, ok := at[k][b.Unix()]
			if !ok {
				r = ports.BrokerBucket{Bucket: b}
			}
			s.Points = append(s.Points, replicaPoint(r))
		}
		out.Replicas = append(out.Replicas, s)
	}
	return out
}

// WorkerSummary is one broker over the recent minutes.
type WorkerSummary struct {
	Broker, Hostname string
	Port             int
	LastSeen         time.Time // its latest minute row
	ActivityPoint
}

// workers sums the recent broker rows per broker, by hostname then broker.
func workers(rows []ports.BrokerBucket, seconds float64) []WorkerSummary {
	type key struct {
		broker, host string
		port         int
	}
	accs := map[key]*activityAcc{}
	last := map[key]time.Time{}
	for _, r := range rows {
		k := key{r.Broker, r.Hostname, r.Port}
		if accs[k] == nil {
			accs[k] = &activityAcc{}
		}
		accs[k].add(r)
		if r.LastMinute.After(last[k]) {
			last[k] = r.LastMinute
		}
	}
	out := make([]WorkerSummary, 0, len(accs))
	for k, acc := range accs {
		out = append(out, WorkerSummary{Broker: k.broker, Hostname: k.host, Port: k.port, LastSeen: last[k],
			ActivityPoint: acc.point(time.Time{}, seconds)})
	}
	slices.SortFunc(out, func(x, y WorkerSummary) int {
		return cmp.Or(cmp.Compare(x.Hostname, y.Hostname), cmp.Compare(x.Broker, y.Broker), cmp.Compare(x.Port, y.Port))
	})
	return out
}

// recent reads the brokers' rows of the last d (every broker) and sums them per broker.
func (a *Analytics) recent(ctx context.Context, d time.Duration) ([]WorkerSummary, error) {
	now := a.opts.Now().UTC()
	w := Window{From: now.Add(-d), To: now, Bucket: time.Minute}
	rows, err := a.reader.BrokerSeries(ctx, w.span(), ports.BrokerFilter{})
	if err != nil {
		return nil, err
	}
	return workers(rows, w.seconds()), nil
}

// WorkerMetrics is GET /api/v1/analytics/worker-metrics.
type WorkerMetrics struct {
	Window Window
	Series []ActivityPoint // the selected brokers summed, every bucket
	// Workers are every broker's last RecentWorkers (the filters do not apply).
	Workers []WorkerSummary
	// Queues are the queues' totals over the range (the queue filter applies), the most
	// popped first (at most MaxQueues).
	Queues  []QueuePoint
	Summary ActivityPoint // Series' total
}

// Workers reads the brokers' activity: three statements.
func (a *Analytics) Workers(ctx context.Context, tenant string, q AnalyticsQuery) (WorkerMetrics, error) {
	w, err := a.Window(q)
	if err != nil {
		return WorkerMetrics{}, err
	}
	return share(ctx, a, a.brokerKey("workers", w, q, tenant, q.Queue), func(ctx context.Context) (WorkerMetrics, error) {
		rows, err := a.reader.BrokerSeries(ctx, w.span(), ports.BrokerFilter{Hostname: q.Hostname, Broker: q.Broker})
		if err != nil {
			return WorkerMetrics{}, err
		}
		out := WorkerMetrics{Window: w}
		out.Series, out.Summary = w.brokerSeries(rows)
		if out.Workers, err = a.recent(ctx, a.opts.RecentWorkers); err != nil {
			return WorkerMetrics{}, err
		}
		totals, err := a.reader.QueueTotals(ctx, tenant, w.span(), ports.ResourceFilter{Queue: q.Queue})
		if err != nil {
			return WorkerMetrics{}, err
		}
		ranked := rankQueues(totals, popped)
		out.Queues = []QueuePoint{}
		for _, t := range ranked[:min(len(ranked), a.opts.MaxQueues)] {
			out.Queues = append(out.Queues, queuePoint(time.Time{}, t.Queue, t.Counters, w.seconds()))
		}
		return out, nil
	})
}

// Throughput is GET /api/v1/status/analytics and the series of GET /api/v1/status:
// without a queue, namespace or task the brokers' rows (every queue), with one the
// selected queues' rows for the counters, rates and lag; the process figures always
// come from the brokers' rows.
type Throughput struct {
	Window   Window
	ByQueues bool // the counters are the selected queues'
	Series   []ActivityPoint
	Totals   ActivityPoint
}

// Throughput reads the activity of the range: one statement, two with a queue filter.
func (a *Analytics) Throughput(ctx context.Context, tenant string, q AnalyticsQuery) (Throughput, error) {
	w, err := a.Window(q)
	if err != nil {
		return Throughput{}, err
	}
	return share(ctx, a, a.queueKey("throughput", tenant, w, q), func(ctx context.Context) (Throughput, error) {
		return a.throughput(ctx, tenant, w, q.filter())
	})
}

func (a *Analytics) throughput(ctx context.Context, tenant string, w Window, f ports.ResourceFilter) (Throughput, error) {
	rows, err := a.reader.BrokerSeries(ctx, w.span(), ports.BrokerFilter{})
	if err != nil {
		return Throughput{}, err
	}
	out := Throughput{Window: w}
	out.Series, out.Totals = w.brokerSeries(rows)
	if f == (ports.ResourceFilter{}) {
		return out, nil
	}
	out.ByQueues = true
	qrows, err := a.reader.QueueSeries(ctx, tenant, w.span(), f, nil)
	if err != nil {
		return Throughput{}, err
	}
	byBucket := map[int64]ports.Counters{}
	var total ports.Counters
	for _, r := range qrows {
		c := byBucket[r.Bucket.Unix()]
		c.Add(r.Counters)
		byBucket[r.Bucket.Unix()] = c
		total.Add(r.Counters)
	}
	for i := range out.Series {
		p := &out.Series[i]
		p.Counters = byBucket[p.Bucket.Unix()]
		p.AvgLagMs = lagAvg(p.Counters)
		p.setRates(w.Bucket.Seconds())
	}
	out.Totals.Counters, out.Totals.AvgLagMs = total, lagAvg(total)
	out.Totals.setRates(w.seconds())
	return out, nil
}

// StatusHistory is the history part of GET /api/v1/status.
type StatusHistory struct {
	Throughput
	Workers   []WorkerSummary         // every broker's last StatusWorkers
	TopErrors []ports.DeadLetterError // the dead letters' most frequent error texts
}

// Status reads the status route's history: three statements, four with a queue filter.
func (a *Analytics) Status(ctx context.Context, tenant string, q AnalyticsQuery) (StatusHistory, error) {
	w, err := a.Window(q)
	if err != nil {
		return StatusHistory{}, err
	}
	return share(ctx, a, a.queueKey("status", tenant, w, q), func(ctx context.Context) (StatusHistory, error) {
		t, err := a.throughput(ctx, tenant, w, q.filter())
		if err != nil {
			return StatusHistory{}, err
		}
		out := StatusHistory{Throughput: t}
		if out.Workers, err = a.recent(ctx, a.opts.StatusWorkers); err != nil {
			return StatusHistory{}, err
		}
		out.TopErrors, err = a.reader.DeadLetterErrors(ctx, tenant, q.filter(), a.opts.TopErrors)
		return out, err
	})
}

// OverviewHistory is the history part of GET /api/v1/resources/overview.
type OverviewHistory struct {
	// IngestedPerSecond and ProcessedPerSecond are the messages pushed and acknowledged
	// per second over the last five whole minutes (the current one is not over).
	IngestedPerSecond, ProcessedPerSecond float64
	Lag                                   ports.LagFigures // rounded to 0.01
}

// overviewMinutes is the span of the overview's rates.
const overviewMinutes = 5

// Overview reads the tenant's recent rates and its groups' lag: two statements.
func (a *Analytics) Overview(ctx context.Context, tenant string) (OverviewHistory, error) {
	return share(ctx, a, "overview\x1f"+tenant, func(ctx context.Context) (OverviewHistory, error) {
		end := a.opts.Now().UTC().Truncate(time.Minute)
		span := ports.MetricsSpan{From: end.Add(-overviewMinutes * time.Minute), To: end.Add(-time.Minute), Bucket: time.Minute}
		rows, err := a.reader.QueueSeries(ctx, tenant, span, ports.ResourceFilter{}, nil)
		if err != nil {
			return OverviewHistory{}, err
		}
		var c ports.Counters
		for _, r := range rows {
			c.Add(r.Counters)
		}
		lag, err := a.reader.Lag(ctx, tenant)
		if err != nil {
			return OverviewHistory{}, err
		}
		secs := float64(overviewMinutes * 60)
		for _, v := range []*float64{&lag.OffsetAvg, &lag.OffsetMedian, &lag.OffsetMax, &lag.TimeAvg, &lag.TimeMedian, &lag.TimeMax} {
			*v = round2(*v)
		}
		return OverviewHistory{IngestedPerSecond: ratio(float64(c.PushMessages), secs),
			ProcessedPerSecond: ratio(float64(c.AckSuccess+c.AckFailed), secs), Lag: lag}, nil
	})
}

// BatchEfficiency is the messages per request of pushes, pops and acks (0 without a
// request).
func (p ActivityPoint) BatchEfficiency() (push, pop, ack float64) {
	return ratio(float64(p.PushMessages), float64(p.PushRequests)), ratio(float64(p.PopMessages), float64(p.PopRequests)),
		ratio(float64(p.AckSuccess+p.AckFailed), float64(p.AckRequests))
}
