package load

import (
	"math"
	"strings"
	"time"
)

// maxPoints bounds a Series: an hour of one-second points. A longer run halves the
// resolution each time the series fills (neighbours merged in pairs, and later
// intervals added two, four, ... at a time), so a run of any length keeps at most
// maxPoints points: about 200 bytes each with the pipeline's 11 counters.
const maxPoints = 3600

// LatencyPoint is one interval's latency figures in ms (NaN: none in the interval).
type LatencyPoint struct {
	N                  uint64 // observations (0 with NaN figures, or when unknown)
	P50, P90, P99, Max float64
}

// Point is one interval of a run: what each counter counted in it, each gauge at its
// end, and the latencies observed in it.
type Point struct {
	At     time.Duration // the interval's end, since the run's start
	Span   time.Duration // the interval's length
	Counts []int64       // events per counter (Series.Counters) in the interval
	Gauges []float64     // each gauge (Series.Gauges) at the interval's end
	Lat    LatencyPoint
}

// Series is a run's time series for the HTML report: one Point per progress interval
// (a second for the Meter, the sample interval for the soak). It is filled by the
// meter's progress goroutine from the counters it reads anyway, never by the workers,
// so it adds nothing to the hot path of the load.
type Series struct {
	Counters []string // names of Point.Counts, in order
	Gauges   []string // names of Point.Gauges, in order
	Msgs     string   // the counter of the mode's messages (the headline throughput)
	Errors   []string // the counters that count failures
	Points   []Point
	// Stride is how many progress intervals one point covers: 1 until the series first
	// fills, then 2, 4, ...
	Stride int

	pending  Point
	pendingN int   // intervals in pending
	hist     *Hist // pending's latencies, when Stride > 1
}

// isErrorCounter reports whether a Meter counter counts failures: "errors", or a name
// ending in "Err" (the pipeline's pushErr, popErr, ackErr).
func isErrorCounter(name string) bool { return name == "errors" || strings.HasSuffix(name, "Err") }

// newSeries returns an empty series of these counters and gauges; the first counter is
// the messages counter.
func newSeries(counters, gauges []string) *Series {
	s := &Series{Counters: counters, Gauges: gauges, Stride: 1}
	if len(counters) > 0 {
		s.Msgs = counters[0]
	}
	for _, c := range counters {
		if isErrorCounter(c) {
			s.Errors = append(s.Errors, c)
		}
	}
	return s
}

// Total is the sum of a counter over the points (0 for an unknown counter).
func (s *Series) Total(counter string) int64 {
	i := s.index(counter)
	if i < 0 {
		return 0
	}
	var n int64
	for _, p := range s.Points {
		n += p.Counts[i]
	}
	return n
}

func (s *Series) index(counter string) int {
	for i, c := range s.Counters {
		if c == counter {
			return i
		}
	}
	return -1
}

// add records one interval. h holds the interval's latencies (nil: p.Lat is already
// set); it is only read, so the caller may not reuse it meanwhile.
func (s *Series) add(p Point, h *Hist) {
	if s.Stride == 1 {
		if h != nil {
			p.Lat = latencyOf(h)
		}
		s.push(p)
		return
	}
	if s.pendingN == 0 {
		s.pending = Point{Counts: make([]int64, len(p.Counts)), Lat: LatencyPoint{P50: math.NaN(), P90: math.NaN(), P99: math.NaN(), Max: math.NaN()}}
		if s.hist == nil {
			s.hist = new(Hist)
		} else {
			s.hist.reset()
		}
	}
	if h != nil {
		s.hist.merge(h)
	} else {
		s.pending.Lat = mergeLatency(s.pending.Lat, p.Lat)
	}
	s.pending = mergePoints(s.pending, p)
	s.pendingN++
	if s.pendingN == s.Stride {
		s.flush()
	}
}

// flush appends the pending point, if any (at the end of a run, a partial one).
func (s *Series) flush() {
	if s.pendingN == 0 {
		return
	}
	if s.hist != nil && s.hist.Count() > 0 {
		s.pending.Lat = latencyOf(s.hist)
	}
	s.pendingN = 0
	s.push(s.pending)
}

// push appends p and halves the resolution when the series is full.
func (s *Series) push(p Point) {
	s.Points = append(s.Points, p)
	if len(s.Points) < maxPoints {
		return
	}
	half := s.Points[:0]
	for i := 0; i+1 < len(s.Points); i += 2 {
		a, b := s.Points[i], s.Points[i+1]
		m := mergePoints(a, b)
		m.Lat = mergeLatency(a.Lat, b.Lat)
		half = append(half, m)
	}
	if len(s.Points)%2 == 1 {
		half = append(half, s.Points[len(s.Points)-1])
	}
	clear(s.Points[len(half):])
	s.Points = half
	s.Stride *= 2
}

// mergePoints joins a and b (b the later one): counts added, gauges of b, latencies
// left to the caller. a's slices are reused.
func mergePoints(a, b Point) Point {
	a.At = b.At
	a.Span += b.Span
	for i := range a.Counts {
		a.Counts[i] += b.Counts[i]
	}
	a.Gauges = append(a.Gauges[:0], b.Gauges...)
	return a
}

// mergeLatency joins two intervals' figures without their histograms: p50 is the
// average weighted by the observations (an estimate), p90, p99 and max the larger of
// the two (an upper bound: a merged point never hides a bad second).
func mergeLatency(a, b LatencyPoint) LatencyPoint {
	wa, wb := float64(a.N), float64(b.N)
	if wa+wb == 0 {
		wa, wb = 1, 1
	}
	avg := func(x, y float64) float64 {
		switch {
		case math.IsNaN(x):
			return y
		case math.IsNaN(y):
			return x
		}
		return (x*wa + y*wb) / (wa + wb)
	}
	most := func(x, y float64) float64 {
		switch {
		case math.IsNaN(x):
			return y
		case math.IsNaN(y):
			return x
		}
		return max(x, y)
	}
	return LatencyPoint{N: a.N + b.N, P50: avg(a.P50, b.P50), P90: most(a.P90, b.P90), P99: most(a.P99, b.P99), Max: most(a.Max, b.Max)}
}

// latencyOf is a histogram's figures; NaN when it is empty.
func latencyOf(h *Hist) LatencyPoint {
	n := h.Count()
	if n == 0 {
		return LatencyPoint{P50: math.NaN(), P90: math.NaN(), P99: math.NaN(), Max: math.NaN()}
	}
	return LatencyPoint{N: n, P50: h.Quantile(0.5), P90: h.Quantile(0.9), P99: h.Quantile(0.99), Max: h.Quantile(1)}
}

// Bucket is one non-empty bucket of a latency histogram: observations in [Lo, Hi) ms.
type Bucket struct {
	Lo, Hi float64 // ms
	Count  uint64
}

// Buckets returns the histogram's non-empty buckets, in order.
func (h *Hist) Buckets() []Bucket {
	var out []Bucket
	for i := range h.buckets {
		n := h.buckets[i].Load()
		if n == 0 {
			continue
		}
		hi := bucketValue(i) + 1
		if i+1 < len(h.buckets) {
			hi = bucketValue(i + 1)
		}
		out = append(out, Bucket{Lo: bucketValue(i) / 1000, Hi: hi / 1000, Count: n})
	}
	return out
}

// merge adds o's observations to h.
func (h *Hist) merge(o *Hist) {
	for i := range o.buckets {
		if n := o.buckets[i].Load(); n > 0 {
			h.buckets[i].Add(n)
		}
	}
	h.n.Add(o.n.Load())
}

func (h *Hist) reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.n.Store(0)
}
