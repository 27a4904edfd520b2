package metrics

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/push"
)

// requestsOnly serves a registry holding reqs and the required families.
func requestsOnly(reqs *Requests) http.Handler {
	return Handler(Sources{
		Fusion:    func() fusion.Stats { return fusion.Stats{} },
		Push:      func() push.Stats { return push.Stats{} },
		PushLimit: func() int { return 1 },
		Requests:  reqs,
	})
}

type observation struct {
	method, route string
	status        int
	d             time.Duration
	bytes         int64
}

// TestRequestsLabelByRoutePatternAndCode: the counter carries method, route pattern and
// status code; the histogram and the byte counter method and route; requests no route
// matched share the route "unmatched", and odd methods and statuses their own bounded
// values.
func TestRequestsLabelByRoutePatternAndCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		obs  []observation
		// want: counter series (method, route, code) -> count
		want map[[3]string]float64
		// hist: (method, route) -> observation count, sum of seconds
		hist  map[[2]string][2]float64
		bytes map[[2]string]float64
	}{
		{
			name: "push and pop routes",
			obs: []observation{
				{"POST", "/api/v1/push", 201, 2 * time.Millisecond, 100},
				{"POST", "/api/v1/push", 201, 4 * time.Millisecond, 100},
				{"POST", "/api/v1/push", 500, time.Millisecond, 30},
				{"GET", "/api/v1/pop/queue/{queue}", 204, 30 * time.Second, 0},
			},
			want: map[[3]string]float64{
				{"POST", "/api/v1/push", "201"}:             2,
				{"POST", "/api/v1/push", "500"}:             1,
				{"GET", "/api/v1/pop/queue/{queue}", "204"}: 1,
			},
			hist: map[[2]string][2]float64{
				{"POST", "/api/v1/push"}:             {3, 0.007},
				{"GET", "/api/v1/pop/queue/{queue}"}: {1, 30},
			},
			bytes: map[[2]string]float64{{"POST", "/api/v1/push"}: 230},
		},
		{
			name: "unmatched routes share one series",
			obs: []observation{
				{"GET", "", 404, time.Millisecond, 50},
				{"GET", "", 404, time.Millisecond, 50},
				{"DELETE", "", 405, time.Millisecond, 60},
			},
			want: map[[3]string]float64{
				{"GET", Unmatched, "404"}:    2,
				{"DELETE", Unmatched, "405"}: 1,
			},
			hist:  map[[2]string][2]float64{{"GET", Unmatched}: {2, 0.002}, {"DELETE", Unmatched}: {1, 0.001}},
			bytes: map[[2]string]float64{{"GET", Unmatched}: 100, {"DELETE", Unmatched}: 60},
		},
		{
			name: "odd methods and statuses are bounded",
			obs: []observation{
				{"BREW", "", 405, time.Millisecond, 0},
				{"PROPFIND", "", 405, time.Millisecond, 0},
				{"GET", "/health", 42, time.Millisecond, 0},
			},
			want: map[[3]string]float64{
				{"OTHER", Unmatched, "405"}: 2,
				{"GET", "/health", "other"}: 1,
			},
			hist: map[[2]string][2]float64{{"OTHER", Unmatched}: {2, 0.002}, {"GET", "/health"}: {1, 0.001}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reqs := NewRequests()
			for _, o := range tc.obs {
				reqs.Observe(o.method, o.route, o.status, o.d, o.bytes)
			}
			e := scrape(t, requestsOnly(reqs))
			if got := e.series("queen_http_requests_total"); len(got) != len(tc.want) {
				t.Errorf("%d counter series, want %d: %v", len(got), len(tc.want), got)
			}
			for k, want := range tc.want {
				got, ok := e.value("queen_http_requests_total", map[string]string{"method": k[0], "route": k[1], "code": k[2]})
				if !ok || got != want {
					t.Errorf("requests%v = %v (present %v), want %v", k, got, ok, want)
				}
			}
			if got := e.series("queen_http_request_duration_seconds_count"); len(got) != len(tc.hist) {
				t.Errorf("%d histogram series, want %d: %v", len(got), len(tc.hist), got)
			}
			for k, want := range tc.hist {
				labels := map[string]string{"method": k[0], "route": k[1]}
				n, _ := e.value("queen_http_request_duration_seconds_count", labels)
				sum, _ := e.value("queen_http_request_duration_seconds_sum", labels)
				if n != want[0] || !near(sum, want[1]) {
					t.Errorf("duration%v: count %v sum %v, want %v", k, n, sum, want)
				}
				if _, ok := e.value("queen_http_request_duration_seconds_bucket", labels); !ok {
					t.Errorf("duration%v has no buckets", k)
				}
			}
			for k, want := range tc.bytes {
				got, _ := e.value("queen_http_response_bytes_total", map[string]string{"method": k[0], "route": k[1]})
				if got != want {
					t.Errorf("bytes%v = %v, want %v", k, got, want)
				}
			}
			for _, s := range e.series("queen_http_request_duration_seconds_bucket") {
				if _, ok := s.labels["code"]; ok {
					t.Fatalf("the histogram carries the code label: %v", s.labels)
				}
			}
		})
	}
}

// TestRequestBuckets: the histogram's buckets are the documented ones, and a 30 s long
// poll lands at the top finite bucket, a 1 ms push near the bottom.
func TestRequestBuckets(t *testing.T) {
	t.Parallel()
	reqs := NewRequests()
	reqs.Observe("GET", "/api/v1/pop", 204, 30*time.Second, 0)
	reqs.Observe("GET", "/api/v1/pop", 200, 800*time.Microsecond, 10)
	e := scrape(t, requestsOnly(reqs))
	var les []string
	for _, s := range e.series("queen_http_request_duration_seconds_bucket") {
		les = append(les, s.labels["le"])
	}
	if len(les) != len(requestBuckets)+1 {
		t.Fatalf("buckets %v, want %v and +Inf", les, requestBuckets)
	}
	for _, tc := range []struct {
		le   string
		want float64
	}{{"0.0005", 0}, {"0.001", 1}, {"10", 1}, {"30", 2}, {"+Inf", 2}} {
		got, ok := e.value("queen_http_request_duration_seconds_bucket", map[string]string{"le": tc.le})
		if !ok || got != tc.want {
			t.Errorf("le=%s: %v (present %v), want %v", tc.le, got, ok, tc.want)
		}
	}
}

// TestRequestsConcurrent: observers run on every request's goroutine; counts add up
// (run under -race by make test).
func TestRequestsConcurrent(t *testing.T) {
	t.Parallel()
	reqs := NewRequests()
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				reqs.Observe("POST", "/api/v1/ack", 200+(w+i)%2, time.Millisecond, 1)
			}
		}()
	}
	wg.Wait()
	e := scrape(t, requestsOnly(reqs))
	var total float64
	for _, code := range []int{200, 201} {
		v, _ := e.value("queen_http_requests_total", map[string]string{"code": strconv.Itoa(code)})
		total += v
	}
	if n, _ := e.value("queen_http_request_duration_seconds_count", nil); total != workers*each || n != workers*each {
		t.Fatalf("counted %v requests and %v durations, want %d", total, n, workers*each)
	}
}

func near(a, b float64) bool { return fmt.Sprintf("%.6f", a) == fmt.Sprintf("%.6f", b) }

// TestObserveAllocatesNothing: Observe runs on every request, the push path's included
// (docs/benchmarks.md counts its allocations): once a label combination has its series, recording
// a request allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	reqs := NewRequests()
	reqs.Observe("POST", "/api/v1/push", 201, time.Millisecond, 100)
	if n := testing.AllocsPerRun(1000, func() {
		reqs.Observe("POST", "/api/v1/push", 201, time.Millisecond, 100)
		reqs.Observe("BREW", "", 405, time.Millisecond, 0)
	}); n != 0 {
		t.Fatalf("%v allocations per request", n)
	}
}
