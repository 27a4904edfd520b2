package admin

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// AnalyticsOptions tunes Analytics; zero values take the defaults in brackets.
type AnalyticsOptions struct {
	// MaxRange is the longest range a read may span [90 days: METRICS_RETENTION_DAYS'
	// default; older minutes are purged], at most MaxPoints of the widest bucket (a day).
	MaxRange time.Duration
	// DefaultRange is from's default: to - DefaultRange [1 h].
	DefaultRange time.Duration
	// MaxPoints bounds the buckets of a series: the bucket is the smallest of
	// BucketLadder with range / bucket <= MaxPoints [360].
	MaxPoints int
	// SeriesQueues is how many queues a per-queue series follows without a limit, and
	// MaxSeriesQueues the most it follows [20, 100]: each queue is every bucket.
	SeriesQueues, MaxSeriesQueues int
	// MaxQueues bounds the per-queue totals of an answer (the most active) [1000].
	MaxQueues int
	// RecentWorkers is how far back the brokers' table of worker-metrics looks, and
	// StatusWorkers that of GET /api/v1/status [5 min, 2 min].
	RecentWorkers, StatusWorkers time.Duration
	// TopErrors is the dead-letter error texts GET /api/v1/status lists [5].
	TopErrors int
	// SlowQuery: postgres-stats lists the statements running at least this long [1 s].
	SlowQuery time.Duration
	// ShareWindow is how long one computation serves every identical request (see
	// listing) [0: off; the server passes QUEEN_ADMIN_SHARE_MS].
	ShareWindow time.Duration
	Now         func() time.Time // [time.Now]
}

func (o *AnalyticsOptions) defaults() {
	if o.MaxRange <= 0 {
		o.MaxRange = 90 * 24 * time.Hour
	}
	if o.DefaultRange <= 0 {
		o.DefaultRange = time.Hour
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 360
	}
	// A longer range would need a bucket wider than the ladder's widest.
	o.MaxRange = min(o.MaxRange, time.Duration(o.MaxPoints*BucketLadder[len(BucketLadder)-1])*time.Minute)
	if o.MaxSeriesQueues <= 0 {
		o.MaxSeriesQueues = 100
	}
	if o.SeriesQueues <= 0 {
		o.SeriesQueues = 20
	}
	o.SeriesQueues = min(o.SeriesQueues, o.MaxSeriesQueues)
	if o.MaxQueues <= 0 {
		o.MaxQueues = 1000
	}
	if o.RecentWorkers <= 0 {
		o.RecentWorkers = 5 * time.Minute
	}
	if o.StatusWorkers <= 0 {
		o.StatusWorkers = 2 * time.Minute
	}
	if o.TopErrors <= 0 {
		o.TopErrors = 5
	}
	if o.SlowQuery <= 0 {
		o.SlowQuery = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// BucketLadder are the bucket widths a series may have, in minutes: each divides a day,
// so buckets aligned on the Unix epoch start on round clock times.
var BucketLadder = []int{1, 5, 15, 60, 180, 360, 720, 1440}

// Analytics is the read side of the metrics history (docs/api.md §5.11a): the analytics
// routes, the time series of GET /api/v1/status and the history figures of the
// overview, over ports.MetricsReader.
//
// # Ranges and buckets
//
// A read covers from..to (defaults: the last DefaultRange up to now); from must be
// before to, and the range at most MaxRange, else an *InputError naming from. Every
// minute row touched by the range counts (the minutes of from and to included).
// Minutes are summed per bucket, the smallest width of BucketLadder that keeps the
// range within MaxPoints buckets; an interval may ask a coarser one, never a finer one
// (a finer one is ignored). Buckets are aligned on the Unix epoch. Reads cover whole
// rollups (ports.MetricsSpan.Whole): a bucket of whole hours widens the range to whole
// hours, one of 5-minute multiples to whole 5 minutes (the queue figures come from
// those rollups), so the first and last buckets may hold part of their minutes only
// when the bucket is wider than its rollup.
//
// # Figures
//
// Every series is zero-filled: each bucket of the range is present (per queue, each
// bucket for each queue followed), so a chart draws a quiet or unrecorded bucket as 0.
// Per-second rates are a bucket's count over its full width in seconds (over the
// range's minutes for totals), rounded to 0.01; lag averages are lag_sum / lag_count
// (0 with no lag sample), in milliseconds. Process figures average every broker
// minute row of the bucket (CPU percentages assume a minute row covers a whole
// minute).
//
// # Sharing
//
// Identical requests within ShareWindow share one computation (listing): a dashboard
// polling every few seconds costs one read per window. Answers are shared: callers must
// not change them.
type Analytics struct {
	reader ports.MetricsReader
	opts   AnalyticsOptions
	shared *listing[any]
}

// NewAnalytics returns the service over reader.
func NewAnalytics(reader ports.MetricsReader, opts AnalyticsOptions) *Analytics {
	opts.defaults()
	return &Analytics{reader: reader, opts: opts, shared: newListing[any](opts.ShareWindow, opts.Now)}
}

// share is listing.get for one answer type: key's answer computed within the window or
// by compute.
func share[T any](ctx context.Context, a *Analytics, key string, compute func(context.Context) (T, error)) (T, error) {
	v, err := a.shared.get(ctx, key, func(ctx context.Context) (any, error) { return compute(ctx) })
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// AnalyticsQuery is what an analytics route asks, as the client gave it.
type AnalyticsQuery struct {
	From, To *time.Time
	// Interval asks a coarser bucket than the range's: minutes of BucketLadder ("15"),
	// a duration ("15m", "1h") or minute, hour, day. "" = the range's.
	Interval string
	// Queue, Namespace and Task select queues ("" = any).
	Queue, Namespace, Task string
	// Hostname and Broker select brokers ("" = any).
	Hostname, Broker string
	// GroupBy groups the retention totals: "", "queue", "namespace" or "task".
	GroupBy string
	// PerQueue asks queue-ops for one series per queue.
	PerQueue bool
	// Limit is the queues a per-queue series follows (nil: SeriesQueues).
	Limit *int
}

func (q AnalyticsQuery) filter() ports.ResourceFilter {
	return ports.ResourceFilter{Queue: q.Queue, Namespace: q.Namespace, Task: q.Task}
}

// Window is a resolved range with its buckets.
type Window struct {
	From, To time.Time     // the range (defaults filled in), UTC
	Bucket   time.Duration // the buckets' width
}

// BucketMinutes is the bucket's width in minutes.
func (w Window) BucketMinutes() int { return int(w.Bucket / time.Minute) }

// binStart is the start of t's bucket of width d, aligned on the Unix epoch.
func binStart(t time.Time, d time.Duration) time.Time {
	s, n := t.Unix(), int64(d/time.Second)
	r := s % n
	if r < 0 {
		r += n
	}
	return time.Unix(s-r, 0).UTC()
}

// Buckets are the starts of every bucket the range touches, oldest first.
func (w Window) Buckets() []time.Time {
	var out []time.Time
	for b := binStart(w.From, w.Bucket); !b.After(w.To); b = b.Add(w.Bucket) {
		out = append(out, b)
	}
	return out
}

// span is the reader's view of the window.
func (w Window) span() ports.MetricsSpan {
	return ports.MetricsSpan{From: w.From, To: w.To, Bucket: w.Bucket}
}

// seconds is the length of the minutes the reads cover (the range widened to whole
// rollups, ports.MetricsSpan.Whole), the denominator of rates over the whole range.
func (w Window) seconds() float64 {
	s := w.span().Whole()
	return s.To.Sub(s.From).Seconds() + 60
}

// key identifies the window in a shared answer's key: the minutes it reads and its
// buckets (two requests a few seconds apart within one minute share).
func (w Window) key() string {
	return fmt.Sprintf("%d\x1f%d\x1f%d", w.From.Truncate(time.Minute).Unix(), w.To.Truncate(time.Minute).Unix(), w.BucketMinutes())
}

// Window resolves q's range and bucket: an *InputError naming from, to or interval when
// they cannot be read.
func (a *Analytics) Window(q AnalyticsQuery) (Window, error) {
	to := a.opts.Now().UTC()
	if q.To != nil {
		to = q.To.UTC()
	}
	from := to.Add(-a.opts.DefaultRange)
	if q.From != nil {
		from = q.From.UTC()
	}
	if !from.Before(to) {
		return Window{}, inputErrorf("from", "from (%s) must be before to (%s)", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	if to.Sub(from) > a.opts.MaxRange {
		return Window{}, inputErrorf("from", "the range from %s to %s spans %s, more than the %s the history keeps",
			from.Format(time.RFC3339), to.Format(time.RFC3339), to.Sub(from).Round(time.Second), a.opts.MaxRange)
	}
	bucket := a.bucketFor(to.Sub(from))
	if q.Interval != "" {
		asked, err := parseInterval(q.Interval)
		if err != nil {
			return Window{}, err
		}
		bucket = max(bucket, asked)
	}
	return Window{From: from, To: to, Bucket: bucket}, nil
}

// bucketFor is the smallest width of the ladder that keeps span within MaxPoints
// buckets (the largest when none does).
func (a *Analytics) bucketFor(span time.Duration) time.Duration {
	for _, m := range BucketLadder {
		b := time.Duration(m) * time.Minute
		if span <= time.Duration(a.opts.MaxPoints)*b {
			return b
		}
	}
	return time.Duration(BucketLadder[len(BucketLadder)-1]) * time.Minute
}

// parseInterval reads an interval: minutes of the ladder, a duration equal to one, or
// minute, hour, day.
func parseInterval(s string) (time.Duration, error) {
	var d time.Duration
	switch s {
	case "minute":
		d = time.Minute
	case "hour":
		d = time.Hour
	case "day":
		d = 24 * time.Hour
	default:
		if n, err := strconv.Atoi(s); err == nil {
			d = time.Duration(n) * time.Minute
		} else if d, err = time.ParseDuration(s); err != nil {
			d = 0
		}
	}
	for _, m := range BucketLadder {
		if d == time.Duration(m)*time.Minute {
			return d, nil
		}
	}
	ladder := make([]string, len(BucketLadder))
	for i, m := range BucketLadder {
		ladder[i] = strconv.Itoa(m)
	}
	return 0, inputErrorf("interval", "interval must be one of %s minutes (or minute, hour, day, or a duration such as 15m), got %q",
		strings.Join(ladder, ", "), s)
}

// limit is q's per-queue series size, checked and clamped.
func (a *Analytics) limit(q AnalyticsQuery) (int, error) {
	if q.Limit == nil {
		return a.opts.SeriesQueues, nil
	}
	if *q.Limit < 1 {
		return 0, inputErrorf("limit", "limit must be at least 1, got %d", *q.Limit)
	}
	return min(*q.Limit, a.opts.MaxSeriesQueues), nil
}

// round2 rounds to 0.01 (rates, averages, ratios).
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// ratio is n / d rounded to 0.01; 0 when d is 0.
func ratio(n, d float64) float64 {
	if d == 0 {
		return 0
	}
	return round2(n / d)
}

// lagAvg is c's average lag in milliseconds (0 without a sample).
func lagAvg(c ports.Counters) float64 { return ratio(float64(c.LagSumMs), float64(c.LagCount)) }

// QueuePoint is the activity of the selected queues, or of one queue, in a bucket or
// over the range (Bucket zero).
type QueuePoint struct {
	Bucket time.Time
	Queue  string // "" when summed over several queues
	ports.Counters
	// Partitions are the queue's partitions now (per-queue totals only).
	Partitions int64
	AvgLagMs   float64
	// Messages per second: pushed, popped, acknowledged (success and failed) and empty
	// pops.
	PushPerSecond, PopPerSecond, AckPerSecond, EmptyPerSecond float64
}

func queuePoint(b time.Time, queue string, c ports.Counters, seconds float64) QueuePoint {
	return QueuePoint{Bucket: b, Queue: queue, Counters: c, AvgLagMs: lagAvg(c),
		PushPerSecond: ratio(float64(c.PushMessages), seconds), PopPerSecond: ratio(float64(c.PopMessages), seconds),
		AckPerSecond:   ratio(float64(c.AckSuccess+c.AckFailed), seconds),
		EmptyPerSecond: ratio(float64(c.PopEmpty), seconds)}
}

// queueSeries zero-fills rows into one point per bucket (queues nil: Queue is q), or per
// bucket and queue, ordered by bucket then queue.
func (w Window) queueSeries(rows []ports.QueueBucket, queues []string, q string) []QueuePoint {
	names := queues
	if names == nil {
		names = []string{q}
	}
	buckets := w.Buckets()
	sums := make(map[string]map[int64]ports.Counters, len(names))
	for _, r := range rows {
		name := r.Queue
		if queues == nil {
			name = q
		}
		if sums[name] == nil {
			sums[name] = make(map[int64]ports.Counters)
		}
		c := sums[name][r.Bucket.Unix()]
		c.Add(r.Counters)
		sums[name][r.Bucket.Unix()] = c
	}
	secs := w.Bucket.Seconds()
	out := make([]QueuePoint, 0, len(buckets)*len(names))
	for _, b := range buckets {
		for _, n := range names {
			out = append(out, queuePoint(b, n, sums[n][b.Unix()], secs))
		}
	}
	return out
}
