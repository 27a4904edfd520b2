package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestBuckets are the upper bounds, in seconds, of
// queen_http_request_duration_seconds: from 0.5 ms (a push or an ack answered from one
// fused commit) to 30 s, the default long-poll wait of a pop (DEFAULT_TIMEOUT). A pop
// that waited its whole timeout answers just after it and lands in +Inf, so
// histogram_quantile reports 30 for it: "at least the long-poll wait".
var requestBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Unmatched is the route label of requests no route matched (404, 405): the path itself
// would give every scanner's probe its own series.
const Unmatched = "unmatched"

// Requests are the HTTP request families, fed by the HTTP adapter's observers:
//
//	queen_http_requests_total{method,route,code}          counter
//	queen_http_request_duration_seconds{method,route}     histogram (requestBuckets)
//	queen_http_response_bytes_total{method,route}         counter
//
// Every label is bounded: route is the matched route's pattern (the path with
// {queue}, {partition}, ... left as placeholders) or Unmatched, method is one of
// the standard methods or "OTHER", code is the three-digit status. A pop's duration
// includes its long-poll wait: it measures how long the client waited, not the broker's
// work. A Requests is safe for concurrent use and registered like any collector.
type Requests struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	bytes    *prometheus.CounterVec
	// series caches each label combination's children: a map lookup under a read lock
	// costs less than the vectors' label hashing, and allocates nothing (a sync.Map would
	// box the key on every request).
	mu     sync.RWMutex
	series map[requestKey]*requestSeries
}

type requestKey struct {
	method, route string
	code          int
}

type requestSeries struct {
	total    prometheus.Counter
	duration prometheus.Observer
	bytes    prometheus.Counter
}

// NewRequests returns empty request families (a family shows on a scrape once it has a
// series: after the first request).
func NewRequests() *Requests {
	return &Requests{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code."}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "queen_http_request_duration_seconds",
			Help:    "Time from a request reaching the handler to its return, by method and route pattern; pops include their long-poll wait.",
			Buckets: requestBuckets}, []string{"method", "route"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "queen_http_response_bytes_total",
			Help: "Response body bytes written, by method and route pattern."}, []string{"method", "route"}),
		series: make(map[requestKey]*requestSeries),
	}
}

// Observe records one answered request: its method, its route's pattern ("" when none
// matched), its status, how long it took and its body's size in bytes.
func (r *Requests) Observe(method, route string, status int, d time.Duration, bytes int64) {
	k := requestKey{method: methodLabel(method), route: route, code: status}
	if k.route == "" {
		k.route = Unmatched
	}
	if k.code < 100 || k.code > 999 {
		k.code = 0 // not a status net/http could have sent: one "other" series
	}
	r.mu.RLock()
	rs := r.series[k]
	r.mu.RUnlock()
	if rs == nil {
		rs = r.add(k)
	}
	rs.total.Inc()
	rs.duration.Observe(d.Seconds())
	if bytes > 0 {
		rs.bytes.Add(float64(bytes))
	}
}

// add creates k's series, once (the label sets are bounded, so is the map).
func (r *Requests) add(k requestKey) *requestSeries {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rs := r.series[k]; rs != nil {
		return rs
	}
	rs := &requestSeries{
		total:    r.total.WithLabelValues(k.method, k.route, codeLabel(k.code)),
		duration: r.duration.WithLabelValues(k.method, k.route),
		bytes:    r.bytes.WithLabelValues(k.method, k.route),
	}
	r.series[k] = rs
	return rs
}

func (r *Requests) Describe(ch chan<- *prometheus.Desc) {
	r.total.Describe(ch)
	r.duration.Describe(ch)
	r.bytes.Describe(ch)
}

func (r *Requests) Collect(ch chan<- prometheus.Metric) {
	r.total.Collect(ch)
	r.duration.Collect(ch)
	r.bytes.Collect(ch)
}

// methodLabel bounds the method label: net/http accepts any token as a method.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

func codeLabel(code int) string {
	if code == 0 {
		return "other"
	}
	return strconv.Itoa(code)
}
