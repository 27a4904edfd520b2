package dashboard

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/queen-go/queen/ports"
)

// History reads the metrics history the charts draw: the tenant's activity over every
// queue (queue "") or one queue's, one point per bucket from from to to, oldest first.
// The bucket is the history's choice for the span (each point says where it starts).
type History func(ctx context.Context, tenant, queue string, from, to time.Time) ([]TrendPoint, error)

// TrendPoint is the activity of one bucket of the history.
type TrendPoint struct {
	At time.Time // the bucket's start
	ports.Counters
}

// ranges are the overview's time ranges, by their parameter.
var ranges = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

// rangeKeys are the ranges in the order the page offers them.
var rangeKeys = []string{"1h", "6h", "24h", "7d"}

// charts reads the history of queue ("" for the tenant) over the span before now and
// draws its charts; pending is the backlog now. Without a history the throughput chart
// has no total (the pushes of the range are not known).
func (h *Handler) charts(ctx context.Context, queue string, span time.Duration, pending int64) ([]Chart, error) {
	now := h.opts.Now()
	if h.svc.History == nil {
		out := activityCharts(nil, pending, now)
		out[0].Total = ""
		return out, nil
	}
	points, err := h.svc.History(ctx, h.opts.Tenant, queue, now.Add(-span), now)
	if err != nil {
		return nil, err
	}
	return activityCharts(points, pending, now), nil
}

// perMinute divides a bucket's count by its length in minutes (from its start to the
// next point's; the last one takes its predecessor's length), so that a chart reads the
// same whatever the bucket.
func perMinute(points []TrendPoint, count func(ports.Counters) int64) []float64 {
	out := make([]float64, len(points))
	for i, p := range points {
		out[i] = float64(count(p.Counters)) / bucketMinutes(points, i)
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
// the pushed messages of the range as its total), backlog, time lag, failures. pending
// is the backlog now: the backlog chart walks back from it through the pushes and the
// consumption of each bucket (an estimate: retention and deletions are not in the
// history). Without history the backlog chart is the current backlog alone and the
// others are empty.
func activityCharts(points []TrendPoint, pending int64, now time.Time) []Chart {
	var pushed int64
	for _, p := range points {
		pushed += p.PushMessages
	}
	throughput := Chart{Name: "throughput", Title: "Throughput", Unit: "messages/min", Times: times(points), Area: true,
		Series: []Series{
			{"Pushed", perMinute(points, func(c ports.Counters) int64 { return c.PushMessages })},
			{"Popped", perMinute(points, func(c ports.Counters) int64 { return c.PopMessages })},
			{"Acked", perMinute(points, func(c ports.Counters) int64 { return c.AckSuccess })},
		}, Total: strconv.FormatInt(pushed, 10)}
	lag := Chart{Name: "lag", Title: "Time lag (push to pop)", Unit: "ms", Times: times(points), Series: []Series{
		{"Average", mapPoints(points, func(c ports.Counters) float64 {
			if c.LagCount == 0 {
				return math.NaN()
			}
			return float64(c.LagSumMs) / float64(c.LagCount)
		})},
		{"Max", mapPoints(points, func(c ports.Counters) float64 {
			if c.LagCount == 0 {
				return math.NaN()
			}
			return float64(c.LagMaxMs)
		})},
	}}
	errs := Chart{Name: "errors", Title: "Failed acks and dead letters", Unit: "messages/min", Times: times(points), Series: []Series{
		{"Failed acks", perMinute(points, func(c ports.Counters) int64 { return c.AckFailed })},
		{"Dead-lettered", perMinute(points, func(c ports.Counters) int64 { return c.DLQMoves })},
	}}
	return []Chart{throughput, backlogChart(points, pending, now), lag, errs}
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

func mapPoints(points []TrendPoint, f func(ports.Counters) float64) []float64 {
	out := make([]float64, len(points))
	for i, p := range points {
		out[i] = f(p.Counters)
	}
	return out
}
