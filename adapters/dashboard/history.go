package dashboard

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// TrendPoint is the activity of one bucket of the metrics history: what the charts
// draw, whatever read it.
type TrendPoint struct {
	At time.Time // the bucket's start
	ports.Counters
	DBErrors int64 // statements that failed on the brokers in the bucket
}

// ranges are the overview's time ranges, by their parameter.
var ranges = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

// rangeKeys are the ranges in the order the page offers them.
var rangeKeys = []string{"1h", "6h", "24h", "7d"}

// window is the analytics query of the span before now, for queue ("" for every queue
// of the tenant).
func (h *Handler) window(span time.Duration, queue string) admin.AnalyticsQuery {
	to := h.opts.Now()
	from := to.Add(-span)
	return admin.AnalyticsQuery{From: &from, To: &to, Queue: queue}
}

// trend reads the history of queue ("" for the tenant) over the span before now: the
// queues' counters per bucket (two statements), with the brokers' database errors
// when brokers is set (one more).
func (h *Handler) trend(ctx context.Context, queue string, span time.Duration, brokers *admin.WorkerMetrics) ([]TrendPoint, error) {
	ops, err := h.svc.Analytics.QueueOps(ctx, h.opts.Tenant, h.window(span, queue))
	if err != nil {
		return nil, err
	}
	errs := map[int64]int64{}
	if brokers != nil {
		for _, p := range brokers.Series {
			errs[p.Bucket.Unix()] = p.DBErrors
		}
	}
	out := make([]TrendPoint, len(ops.Series))
	for i, p := range ops.Series {
		out[i] = TrendPoint{At: p.Bucket, Counters: p.Counters, DBErrors: errs[p.Bucket.Unix()]}
	}
	return out, nil
}

// charts draws the activity of queue ("" for the tenant) over the span before now;
// pending is the backlog now. Without the analytics use case the backlog chart is the
// current backlog alone, the others are empty and the throughput chart has no total
// (the pushes of the range are not known).
func (h *Handler) charts(ctx context.Context, queue string, span time.Duration, pending int64, brokers *admin.WorkerMetrics) ([]Chart, error) {
	now := h.opts.Now()
	if h.svc.Analytics == nil {
		out := activityCharts(nil, pending, now, false)
		out[0].Total = ""
		return out, nil
	}
	points, err := h.trend(ctx, queue, span, brokers)
	if err != nil {
		return nil, err
	}
	return activityCharts(points, pending, now, brokers != nil), nil
}

// perMinute divides a bucket's count by its length in minutes (from its start to the
// next point's; the last one takes its predecessor's length), so that a chart reads the
// same whatever the bucket.
func perMinute(points []TrendPoint, count func(TrendPoint) int64) []float64 {
	out := make([]float64, len(points))
	for i, p := range points {
		out[i] = float64(count(p)) / bucketMinutes(points, i)
	}
	return out
}

func bucketMinutes(points []TrendPoint, i int) float64 {
	var d time.Duration
	switch {
	case i+1 < len(points):
		d = points[i+1].At.Sub(points[i].At)
	case i > 0:
		d = points[i].At.Sub(points[i-1].At)
	}
	return max(d.Minutes(), 1)
}

func times(points []TrendPoint) []time.Time {
	out := make([]time.Time, len(points))
	for i, p := range points {
		out[i] = p.At
	}
	return out
}

// activityCharts are the charts of a tenant's or a queue's activity: throughput (with
// the pushed messages of the range as its total), backlog, time lag, failures (with
// the brokers' database errors when dbErrors is set). pending is the backlog now: the
// backlog chart walks back from it through the pushes and the consumption of each
// bucket (an estimate: retention and deletions are not in the history).
func activityCharts(points []TrendPoint, pending int64, now time.Time, dbErrors bool) []Chart {
	var pushed int64
	for _, p := range points {
		pushed += p.PushMessages
	}
	throughput := Chart{Name: "throughput", Title: "Throughput", Unit: "messages/min", Times: times(points), Area: true,
		Series: []Series{
			{"Pushed", perMinute(points, func(p TrendPoint) int64 { return p.PushMessages })},
			{"Popped", perMinute(points, func(p TrendPoint) int64 { return p.PopMessages })},
			{"Acked", perMinute(points, func(p TrendPoint) int64 { return p.AckSuccess })},
		}, Total: strconv.FormatInt(pushed, 10)}
	lag := Chart{Name: "lag", Title: "Time lag (push to pop)", Unit: "ms", Times: times(points), Series: []Series{
		{"Average", lagFigure(points, func(c ports.Counters) float64 { return float64(c.LagSumMs) / float64(c.LagCount) })},
		{"Max", lagFigure(points, func(c ports.Counters) float64 { return float64(c.LagMaxMs) })},
	}}
	errs := Chart{Name: "errors", Title: "Failures", Unit: "per min", Times: times(points), Series: []Series{
		{"Failed acks", perMinute(points, func(p TrendPoint) int64 { return p.AckFailed })},
		{"Dead-lettered", perMinute(points, func(p TrendPoint) int64 { return p.DLQMoves })},
	}}
	if dbErrors {
		errs.Series = append(errs.Series, Series{"Database errors", perMinute(points, func(p TrendPoint) int64 { return p.DBErrors })})
	}
	return []Chart{throughput, backlogChart(points, pending, now), lag, errs}
}

// lagFigure is f of each bucket with a lag sample, NaN (a gap) for the others.
func lagFigure(points []TrendPoint, f func(ports.Counters) float64) []float64 {
	out := make([]float64, len(points))
	for i, p := range points {
		out[i] = math.NaN()
		if p.LagCount > 0 {
			out[i] = f(p.Counters)
		}
	}
	return out
}

// backlogChart estimates the backlog at the end of each bucket from the backlog now.
func backlogChart(points []TrendPoint, pending int64, now time.Time) Chart {
	c := Chart{Name: "backlog", Title: "Backlog (estimated from pushes and acks)", Unit: "messages", Area: true}
	if len(points) == 0 {
		c.Times = []time.Time{now}
		c.Series = []Series{{"Backlog", []float64{float64(pending)}}}
		return c
	}
	vals := make([]float64, len(points))
	b := float64(pending)
	for i := len(points) - 1; i >= 0; i-- {
		vals[i] = max(b, 0)
		p := points[i].Counters
		b -= float64(p.PushMessages - p.AckSuccess - p.DLQMoves)
	}
	c.Times, c.Series = times(points), []Series{{"Backlog", vals}}
	return c
}

// brokers reads every broker's recent figures (and the brokers' series over the span
// for the database errors); nil without the analytics use case.
func (h *Handler) brokers(ctx context.Context, span time.Duration) (*admin.WorkerMetrics, error) {
	if h.svc.Analytics == nil {
		return nil, nil
	}
	w, err := h.svc.Analytics.Workers(ctx, h.opts.Tenant, h.window(span, ""))
	if err != nil {
		return nil, err
	}
	return &w, nil
}

// queueRates are each queue's push and pop rates over the last hour, by name; nil
// without the analytics use case.
func (h *Handler) queueRates(ctx context.Context) (map[string]admin.QueuePoint, error) {
	if h.svc.Analytics == nil {
		return nil, nil
	}
	ops, err := h.svc.Analytics.QueueOps(ctx, h.opts.Tenant, h.window(time.Hour, ""))
	if err != nil {
		return nil, err
	}
	out := make(map[string]admin.QueuePoint, len(ops.Queues))
	for _, q := range ops.Queues {
		out[q.Queue] = q
	}
	return out, nil
}
