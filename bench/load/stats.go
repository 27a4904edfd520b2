package load

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// Hist is a concurrent latency histogram with about 3% resolution: 32 linear
// sub-buckets per power of two of microseconds, up to ~2^40 µs.
type Hist struct {
	buckets [41 * 32]atomic.Uint64
	n       atomic.Uint64
}

func bucketOf(us uint64) int {
	if us < 32 {
		return int(us)
	}
	exp := bits.Len64(us) - 6 // us >> exp is in [32, 64)
	return min((exp+1)*32+int(us>>uint(exp))-32, 41*32-1)
}

func bucketValue(i int) float64 {
	if i < 32 {
		return float64(i)
	}
	exp := i/32 - 1
	return float64(uint64(i%32+32) << uint(exp))
}

// Record adds one observation.
func (h *Hist) Record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.buckets[bucketOf(uint64(us))].Add(1)
	h.n.Add(1)
}

// Count is the number of observations.
func (h *Hist) Count() uint64 { return h.n.Load() }

// Quantile returns the q-quantile (0..1) in milliseconds; 0 with no observations.
func (h *Hist) Quantile(q float64) float64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= rank && seen > 0 {
			return bucketValue(i) / 1000
		}
	}
	return bucketValue(len(h.buckets)-1) / 1000
}

// Meter counts named events and latencies, prints a progress line every second and a
// summary at the end. Counter names are fixed at construction; the first one counts the
// mode's messages (the headline of the live status line and of the report's
// throughput), and "errors" and names ending in "Err" count failures.
//
// The progress goroutine also records the run's time series (Summary.Series) from the
// counters it reads each second, and, when out is a LiveWriter, the run keeps a live
// status line on the terminal: neither adds work to the workers' hot path.
type Meter struct {
	mode   string
	names  []string
	counts map[string]*atomic.Int64
	gauges map[string]func() int64
	gnames []string
	start  time.Time
	out    io.Writer

	total    *Hist
	interval atomic.Pointer[Hist]
	last     map[string]int64
	stop     chan struct{}
	done     chan struct{}

	series   *Series   // written by the progress goroutine only, until Stop
	lastTick time.Time // the end of the last recorded interval
	liveStop func()    // erases the live status line
}

// NewMeter returns a meter for mode with the given counters; progress goes to out.
func NewMeter(mode string, out io.Writer, counters ...string) *Meter {
	m := &Meter{mode: mode, names: counters, counts: make(map[string]*atomic.Int64),
		gauges: make(map[string]func() int64), out: out, total: new(Hist), last: make(map[string]int64)}
	for _, c := range counters {
		m.counts[c] = new(atomic.Int64)
	}
	m.interval.Store(new(Hist))
	return m
}

// Gauge adds a value sampled on every progress line (e.g. the backlog).
func (m *Meter) Gauge(name string, f func() int64) {
	m.gauges[name] = f
	m.gnames = append(m.gnames, name)
}

// Add counts n events of counter name (which must have been declared).
func (m *Meter) Add(name string, n int64) { m.counts[name].Add(n) }

// Fail counts one failed request in the "errors" counter (which must have been
// declared) and shows why: broker errors are counted and shown, never hidden.
func (m *Meter) Fail(what string, err error) {
	m.Add("errors", 1)
	fmt.Fprintf(m.out, "%s error: %v\n", what, err)
}

// Get returns a counter's value.
func (m *Meter) Get(name string) int64 { return m.counts[name].Load() }

// Latency records one latency observation.
func (m *Meter) Latency(d time.Duration) {
	m.total.Record(d)
	m.interval.Load().Record(d)
}

// Start begins the per-second progress lines (and the live status line, when out is a
// LiveWriter).
func (m *Meter) Start() {
	m.start = time.Now()
	m.lastTick = m.start
	m.series = newSeries(m.names, m.gnames)
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	what := ""
	if len(m.names) > 0 {
		what = m.names[0]
	}
	m.liveStop = trackLive(m.out, m.mode, what, m.headline)
	go func() {
		defer close(m.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case now := <-t.C:
				m.progress(now, true)
			}
		}
	}()
}

// headline is the live status line's figures: the messages counter and the failures.
func (m *Meter) headline() (msgs, errs int64) {
	for i, n := range m.names {
		if i == 0 {
			msgs = m.counts[n].Load()
		}
		if isErrorCounter(n) {
			errs += m.counts[n].Load()
		}
	}
	return msgs, errs
}

// progress ends the interval since the last one at now: it records the interval in the
// series and, when print is set, prints its progress line.
func (m *Meter) progress(now time.Time, print bool) {
	dt := now.Sub(m.lastTick)
	iv := m.interval.Swap(new(Hist))
	p := Point{At: now.Sub(m.start), Span: dt, Counts: make([]int64, len(m.names)), Gauges: make([]float64, len(m.gnames))}
	for i, n := range m.names {
		v := m.counts[n].Load()
		p.Counts[i] = v - m.last[n]
		m.last[n] = v
	}
	for i, n := range m.gnames {
		p.Gauges[i] = float64(m.gauges[n]())
	}
	m.lastTick = now
	if print {
		var b strings.Builder
		fmt.Fprintf(&b, "[%s %3.0fs]", m.mode, p.At.Seconds())
		for i, n := range m.names {
			fmt.Fprintf(&b, " %s=%.0f/s", n, float64(p.Counts[i])/dt.Seconds())
		}
		for i, n := range m.gnames {
			fmt.Fprintf(&b, " %s=%d", n, int64(p.Gauges[i]))
		}
		if iv.Count() > 0 {
			fmt.Fprintf(&b, " p50=%.1fms p99=%.1fms", iv.Quantile(0.5), iv.Quantile(0.99))
		}
		fmt.Fprintln(m.out, b.String())
	}
	m.series.add(p, iv)
}

// Summary is the end-of-run figures.
type Summary struct {
	Mode    string             `json:"mode"`
	Seconds float64            `json:"seconds"`
	Totals  map[string]int64   `json:"totals"`
	Rates   map[string]float64 `json:"rates"`
	Gauges  map[string]int64   `json:"gauges,omitempty"`
	P50ms   float64            `json:"p50_ms"`
	P90ms   float64            `json:"p90_ms"`
	P99ms   float64            `json:"p99_ms"`
	P999ms  float64            `json:"p999_ms"`
	MaxMs   float64            `json:"p100_ms"`
	Extra   map[string]any     `json:"extra,omitempty"`

	// For the HTML report only, never in the JSON line: the run's time series (nil when
	// the mode records none) and the whole run's latency histogram.
	Series  *Series  `json:"-"`
	Latency []Bucket `json:"-"`
}

// Stop ends the progress lines and returns the summary of the whole run.
func (m *Meter) Stop() Summary {
	if m.stop != nil {
		close(m.stop)
		<-m.done
		m.liveStop()
		// The last, partial interval: the series' counts then add up to the totals.
		if now := time.Now(); now.Sub(m.lastTick) >= 10*time.Millisecond || m.moved() {
			m.progress(now, false)
		}
		m.series.flush()
		m.stop = nil
	}
	el := time.Since(m.start).Seconds()
	s := Summary{Mode: m.mode, Seconds: el, Totals: map[string]int64{}, Rates: map[string]float64{},
		P50ms: m.total.Quantile(0.5), P90ms: m.total.Quantile(0.9), P99ms: m.total.Quantile(0.99), P999ms: m.total.Quantile(0.999),
		MaxMs: m.total.Quantile(1)}
	for _, n := range m.names {
		v := m.counts[n].Load()
		s.Totals[n], s.Rates[n] = v, float64(v)/el
	}
	s.Series, s.Latency = m.series, m.total.Buckets()
	if len(m.gnames) > 0 {
		s.Gauges = map[string]int64{}
		for _, n := range m.gnames {
			s.Gauges[n] = m.gauges[n]()
		}
	}
	return s
}

// moved reports whether a counter changed since the last interval.
func (m *Meter) moved() bool {
	for _, n := range m.names {
		if m.counts[n].Load() != m.last[n] {
			return true
		}
	}
	return false
}

// Print writes the human summary and then one JSON line of the same figures.
func (s Summary) Print(out io.Writer) {
	fmt.Fprintf(out, "== %s: %.1f s\n", s.Mode, s.Seconds)
	names := make([]string, 0, len(s.Totals))
	for n := range s.Totals {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(out, "   %-12s %12d  (%.0f/s)\n", n, s.Totals[n], s.Rates[n])
	}
	for n, v := range s.Gauges {
		fmt.Fprintf(out, "   %-12s %12d\n", n, v)
	}
	fmt.Fprintf(out, "   latency      p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  p999 %.2f ms  max %.2f ms\n",
		s.P50ms, s.P90ms, s.P99ms, s.P999ms, s.MaxMs)
	for k, v := range s.Extra {
		fmt.Fprintf(out, "   %-12s %v\n", k, v)
	}
	b, _ := json.Marshal(s)
	fmt.Fprintln(out, string(b))
}
