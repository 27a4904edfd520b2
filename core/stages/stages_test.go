package stages

import (
	"sync"
	"testing"
	"time"
)

func TestObserveCountsIntoItsBound(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		le   float64 // the smallest bound that counts it; 0: above every bound
	}{
		{"zero", 0, 0.00005},
		{"negative counts as zero", -time.Second, 0.00005},
		{"exactly a bound", time.Millisecond, 0.001},
		{"just above a bound", time.Millisecond + time.Nanosecond, 0.002},
		{"between bounds", 4 * time.Millisecond, 0.005},
		{"above every bound", time.Minute, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var h Histogram
			h.Observe(tt.d)
			s := h.Read()
			if s.Count != 1 {
				t.Fatalf("count %d, want 1", s.Count)
			}
			for i, b := range Bounds {
				want := uint64(0)
				if tt.le != 0 && b >= tt.le {
					want = 1
				}
				if s.Cumulative[i] != want {
					t.Fatalf("bucket le=%v holds %d, want %d", b, s.Cumulative[i], want)
				}
			}
			if want := max(tt.d, 0).Seconds(); s.SumSeconds != want {
				t.Fatalf("sum %v, want %v", s.SumSeconds, want)
			}
		})
	}
}

func TestConcurrentObservationsAreAllCounted(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Observe(time.Duration(g*1000+i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	s := h.Read()
	if s.Count != 8000 {
		t.Fatalf("count %d, want 8000", s.Count)
	}
	for i := 1; i < len(Bounds); i++ {
		if s.Cumulative[i] < s.Cumulative[i-1] {
			t.Fatalf("cumulative counts fall at le=%v", Bounds[i])
		}
	}
}

func TestStagesAreListedInPathOrder(t *testing.T) {
	ts := New()
	var names []string
	for _, n := range append(ts.Push.Stages(), ts.Pop.Stages()...) {
		names = append(names, n.Stage)
		n.Hist.Observe(time.Millisecond)
	}
	want := []string{"read", "wait", "commit", "route", "answer", "ready", "claim", "answer"}
	if len(names) != len(want) {
		t.Fatalf("stages %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("stages %v, want %v", names, want)
		}
	}
	if ts.Push.Commit.Read().Count != 1 || ts.Pop.Ready.Read().Count != 1 {
		t.Fatal("a stage's histogram is not its field")
	}
}

func BenchmarkObserve(b *testing.B) {
	b.ReportAllocs()
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Observe(time.Duration(i%20000) * time.Microsecond)
	}
}
