package admin

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestListing(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ctx := context.Background()
	var calls atomic.Int64
	compute := func(context.Context) (int64, error) { return calls.Add(1), nil }

	tests := []struct {
		name  string
		steps func(l *listing[int64]) []int64 // the answers of the calls
		want  []int64
	}{
		{"off: every call reads", func(l *listing[int64]) []int64 {
			l.window = 0
			a, _ := l.get(ctx, "k", compute)
			b, _ := l.get(ctx, "k", compute)
			return []int64{a, b}
		}, []int64{1, 2}},
		{"inside the window: one read; after it: another", func(l *listing[int64]) []int64 {
			a, _ := l.get(ctx, "k", compute)
			advance(999 * time.Millisecond)
			b, _ := l.get(ctx, "k", compute)
			advance(time.Millisecond)
			c, _ := l.get(ctx, "k", compute)
			return []int64{a, b, c}
		}, []int64{1, 1, 2}},
		{"keys apart", func(l *listing[int64]) []int64 {
			a, _ := l.get(ctx, "k", compute)
			b, _ := l.get(ctx, "other", compute)
			return []int64{a, b}
		}, []int64{1, 2}},
		{"forget: the next call reads", func(l *listing[int64]) []int64 {
			a, _ := l.get(ctx, "k", compute)
			l.forget()
			b, _ := l.get(ctx, "k", compute)
			return []int64{a, b}
		}, []int64{1, 2}},
		{"errors are not kept", func(l *listing[int64]) []int64 {
			_, err := l.get(ctx, "k", func(context.Context) (int64, error) { calls.Add(1); return 0, errors.New("boom") })
			if err == nil {
				t.Error("no error")
			}
			b, _ := l.get(ctx, "k", compute)
			return []int64{b}
		}, []int64{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			l := newListing[int64](time.Second, clock)
			got := tt.steps(l)
			if len(got) != len(tt.want) {
				t.Fatalf("answers %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("answers %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestListingSharesARunningRead(t *testing.T) {
	t.Parallel()
	l := newListing[int](time.Second, time.Now)
	release := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int64
	compute := func(context.Context) (int, error) {
		if calls.Add(1) == 1 {
			close(started)
		}
		<-release
		return 7, nil
	}
	var wg sync.WaitGroup
	results := make([]int, 5)
	wg.Go(func() { results[0], _ = l.get(context.Background(), "k", compute) })
	<-started
	for i := 1; i < 5; i++ {
		wg.Go(func() { results[i], _ = l.get(context.Background(), "k", compute) })
	}
	// A waiter whose context ends stops waiting, and the read goes on for the others.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.get(ctx, "k", compute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d reads, want 1", calls.Load())
	}
	for i, r := range results {
		if r != 7 {
			t.Fatalf("caller %d got %d", i, r)
		}
	}
}
