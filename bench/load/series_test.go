package load

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSeriesStaysBoundedAndKeepsTheTotals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		intervals  int
		wantPoints int
		wantStride int
	}{
		{"short run: a point per interval", 10, 10, 1},
		{"just below the bound", maxPoints - 1, maxPoints - 1, 1},
		{"at the bound: halved", maxPoints, maxPoints / 2, 2},
		{"four hours: at most the bound", 4 * maxPoints, maxPoints / 2, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSeries([]string{"msgs", "errors"}, []string{"backlog"})
			for i := range tt.intervals {
				h := new(Hist)
				h.Record(time.Duration(i%10+1) * time.Millisecond)
				s.add(Point{At: time.Duration(i+1) * time.Second, Span: time.Second, Counts: []int64{100, int64(i % 2)},
					Gauges: []float64{float64(i)}}, h)
			}
			s.flush()
			if len(s.Points) > maxPoints || len(s.Points) != tt.wantPoints || s.Stride != tt.wantStride {
				t.Fatalf("%d points at stride %d, want %d at %d", len(s.Points), s.Stride, tt.wantPoints, tt.wantStride)
			}
			if got := s.Total("msgs"); got != int64(100*tt.intervals) {
				t.Errorf("msgs total %d, want %d", got, 100*tt.intervals)
			}
			if got := s.Total("errors"); got != int64(tt.intervals/2) {
				t.Errorf("errors total %d, want %d", got, tt.intervals/2)
			}
			var span time.Duration
			for _, p := range s.Points {
				span += p.Span
				if math.IsNaN(p.Lat.P99) || p.Lat.P99 > 10.5 || p.Lat.N == 0 {
					t.Fatalf("point %+v: latency lost in the merge", p)
				}
			}
			last := s.Points[len(s.Points)-1]
			if span != time.Duration(tt.intervals)*time.Second || last.At != span || last.Gauges[0] != float64(tt.intervals-1) {
				t.Errorf("span %v, last point at %v with gauge %v", span, last.At, last.Gauges)
			}
			if s.Msgs != "msgs" || len(s.Errors) != 1 || s.Errors[0] != "errors" {
				t.Errorf("headline %q, errors %v", s.Msgs, s.Errors)
			}
		})
	}
}

func TestMergeLatency(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	tests := []struct {
		name string
		a, b LatencyPoint
		want LatencyPoint
	}{
		{"weighted p50, worst tail", LatencyPoint{1, 1, 2, 3, 4}, LatencyPoint{3, 5, 1, 1, 9}, LatencyPoint{4, 4, 2, 3, 9}},
		{"an empty side is ignored", LatencyPoint{0, nan, nan, nan, nan}, LatencyPoint{2, 5, 6, 7, 8}, LatencyPoint{2, 5, 6, 7, 8}},
		{"unknown weights count alike", LatencyPoint{0, 2, nan, 4, nan}, LatencyPoint{0, 4, nan, 6, nan}, LatencyPoint{0, 3, nan, 6, nan}},
	}
	same := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mergeLatency(tt.a, tt.b)
			if g.N != tt.want.N || !same(g.P50, tt.want.P50) || !same(g.P90, tt.want.P90) || !same(g.P99, tt.want.P99) || !same(g.Max, tt.want.Max) {
				t.Fatalf("got %+v, want %+v", g, tt.want)
			}
		})
	}
}

func TestHistBuckets(t *testing.T) {
	t.Parallel()
	var h Hist
	for _, d := range []time.Duration{5 * time.Microsecond, 5 * time.Microsecond, 2 * time.Millisecond, time.Second} {
		h.Record(d)
	}
	bs := h.Buckets()
	var n uint64
	for i, b := range bs {
		n += b.Count
		if b.Hi <= b.Lo || i > 0 && b.Lo < bs[i-1].Hi {
			t.Fatalf("bucket %d %+v out of order in %+v", i, b, bs)
		}
	}
	if len(bs) != 3 || n != 4 || bs[0].Count != 2 || bs[2].Lo > 1000 || bs[2].Hi < 1000 {
		t.Fatalf("buckets %+v", bs)
	}
}

func TestMeterRecordsTheSeriesOfItsCounters(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	m := NewMeter("test", &out, "msgs", "errors", "popErr")
	m.Gauge("left", func() int64 { return 7 })
	m.Start()
	m.Add("msgs", 5)
	m.Add("popErr", 1)
	m.Latency(3 * time.Millisecond)
	s := m.Stop()
	if s.Series == nil || len(s.Series.Points) != 1 {
		t.Fatalf("series %+v", s.Series)
	}
	p := s.Series.Points[0]
	if s.Series.Total("msgs") != 5 || p.Gauges[0] != 7 || p.Lat.N != 1 || len(s.Latency) != 1 {
		t.Fatalf("point %+v, latency %+v", p, s.Latency)
	}
	if got := strings.Join(s.Series.Errors, ","); got != "errors,popErr" {
		t.Errorf("error counters %q", got)
	}
	if msgs, errs := m.headline(); msgs != 5 || errs != 1 {
		t.Errorf("headline %d msgs %d errors", msgs, errs)
	}
	if strings.Contains(out.String(), "\r") {
		t.Errorf("a plain output got a live line: %q", out.String())
	}
	_ = m.Stop() // a second Stop is harmless
}

// syncBuf is a buffer written from the live line's goroutine and read by the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLiveWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		shared bool
		// wantOut is what the output receives; the terminal gets the line either way.
		wantOut string
	}{
		{"separate screens: the output untouched", false, "line one\n"},
		{"one screen: the output in between", true, "line one\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, term syncBuf
			w := NewLiveWriter(&out, &term, tt.shared)
			w.tick = 5 * time.Millisecond
			var n int64
			var mu sync.Mutex
			stop := trackLive(w, "push", "msgs", func() (int64, int64) {
				mu.Lock()
				defer mu.Unlock()
				n += 1500
				return n, 2
			})
			deadline := time.Now().Add(5 * time.Second)
			for strings.Count(term.String(), "\r") < 4 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if _, err := w.Write([]byte("line one\n")); err != nil {
				t.Fatal(err)
			}
			stop()
			stop() // idempotent
			got := term.String()
			if !strings.Contains(got, "\rpush 0s  msgs 1,500  ") || !strings.Contains(got, "errors 2") {
				t.Fatalf("terminal got %q", got)
			}
			// Erased at the end: blanks over the last line, the cursor back at its start.
			last := got[strings.LastIndex(got[:len(got)-1], "\r"):]
			if strings.Trim(last, "\r ") != "" || !strings.HasSuffix(got, "\r") {
				t.Fatalf("line not erased at the end: %q", last)
			}
			if out.String() != tt.wantOut {
				t.Fatalf("output %q", out.String())
			}
			if w.line != "" {
				t.Fatalf("line %q left", w.line)
			}
		})
	}
}

func TestGrouped(t *testing.T) {
	t.Parallel()
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45678: "-45,678"} {
		if got := grouped(in); got != want {
			t.Errorf("grouped(%d) = %q, want %q", in, got, want)
		}
	}
}
