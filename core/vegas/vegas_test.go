package vegas

import (
	"testing"
	"time"
)

// saturate holds the whole limit in flight, then releases every permit with rtt.
func saturate(l *Limiter, rtt time.Duration) {
	n := 0
	for l.TryAcquire() {
		n++
	}
	for range n {
		l.Release(rtt, true)
	}
}

func TestLimitAdapts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		rounds func(l *Limiter)
		check  func(t *testing.T, limit int)
	}{
		{
			name: "flat latency under saturation grows to max",
			rounds: func(l *Limiter) {
				for range 200 {
					saturate(l, time.Millisecond)
				}
			},
			check: func(t *testing.T, limit int) {
				if limit != 32 {
					t.Fatalf("limit = %d, want max 32", limit)
				}
			},
		},
		{
			name: "rising latency shrinks until the queue estimate is within beta",
			rounds: func(l *Limiter) {
				saturate(l, time.Millisecond)
				for range 50 { // fewer samples than ProbeEvery: minRTT stays 1ms
					saturate(l, 20*time.Millisecond)
				}
			},
			check: func(t *testing.T, limit int) {
				// 6 × (1 − 1/20) = 5.7 queued ≤ beta 6; 7 would be 6.65 > 6.
				if limit != 6 {
					t.Fatalf("limit = %d, want 6", limit)
				}
			},
		},
		{
			name: "idle lane does not inflate",
			rounds: func(l *Limiter) {
				for range 500 {
					if l.TryAcquire() {
						l.Release(time.Millisecond, true)
					}
				}
			},
			check: func(t *testing.T, limit int) {
				if limit != 8 {
					t.Fatalf("limit = %d, want unchanged 8", limit)
				}
			},
		},
		{
			name: "permits claimed for nothing do not count as used",
			rounds: func(l *Limiter) {
				for range 500 {
					if l.TryAcquire() {
						for range 3 { // work that another permit's holder took meanwhile
							l.TryAcquireIf(func() bool { return false })
						}
						l.Release(time.Millisecond, true)
					}
				}
			},
			check: func(t *testing.T, limit int) {
				if limit != 8 {
					t.Fatalf("limit = %d, want unchanged 8", limit)
				}
			},
		},
		{
			name: "failures shrink",
			rounds: func(l *Limiter) {
				for range 50 {
					if l.TryAcquire() {
						l.Release(0, false)
					}
				}
			},
			check: func(t *testing.T, limit int) {
				if limit != 2 {
					t.Fatalf("limit = %d, want min 2", limit)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := New(Options{Initial: 8, Min: 2, Max: 32})
			tt.rounds(l)
			tt.check(t, l.Limit())
			if l.InFlight() != 0 {
				t.Fatalf("in flight = %d after all releases", l.InFlight())
			}
		})
	}
}

func TestTryAcquireRespectsLimit(t *testing.T) {
	t.Parallel()
	l := New(Options{Initial: 3, Min: 1, Max: 10})
	got := 0
	for l.TryAcquire() {
		got++
	}
	if got != 3 {
		t.Fatalf("acquired %d permits, want 3", got)
	}
	l.Release(time.Millisecond, true)
	if !l.TryAcquire() {
		t.Fatal("a released permit is not available again")
	}
}

func TestTryAcquireIfClaimsOnlyWithAPermit(t *testing.T) {
	t.Parallel()
	l := New(Options{Initial: 1, Min: 1, Max: 1})
	calls := 0
	take := func(ok bool) func() bool { return func() bool { calls++; return ok } }
	if l.TryAcquireIf(take(false)) || l.InFlight() != 0 || calls != 1 {
		t.Fatalf("take refused: acquired, in flight %d, calls %d; want no permit, 1 call", l.InFlight(), calls)
	}
	if !l.TryAcquireIf(take(true)) || l.InFlight() != 1 {
		t.Fatalf("take accepted with a free permit: in flight %d, want 1", l.InFlight())
	}
	if l.TryAcquireIf(take(true)) || calls != 2 {
		t.Fatalf("no permit free: take ran %d times, want 2 (not called without a permit)", calls)
	}
	l.Release(time.Millisecond, true)
}
