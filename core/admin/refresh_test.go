package admin

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestResourcesRefresh: a refresh counts the tenant's queues and drops what reads serve
// from memory, so the next listing and its estimates are read again; a store error is
// the refresh's.
func TestResourcesRefresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMemWorld(t, resT0)
	w.pushTxns("t", "a", "p", "m0")
	w.pushTxns("t", "b", "p", "m0")
	w.pushTxns("other", "c", "p", "m0")
	var lists, totals atomic.Int64
	var fail atomic.Bool
	w.s.AdminFault = func(op string) error {
		switch op {
		case "ListQueues":
			lists.Add(1)
			if fail.Load() {
				return errors.New("boom")
			}
		case "StorageTotals":
			totals.Add(1)
		}
		return nil
	}
	s := NewResources(w.s, ResourcesOptions{ShareWindow: time.Hour, EstimateTTL: time.Hour, Now: func() time.Time { return resT0 }})
	for range 2 { // the second is served by the first
		if _, err := s.Queues(ctx, "t", QueueQuery{}); err != nil {
			t.Fatal(err)
		}
	}
	if lists.Load() != 1 || totals.Load() != 1 {
		t.Fatalf("%d listings and %d storage reads before the refresh, want 1 and 1", lists.Load(), totals.Load())
	}
	r, err := s.Refresh(ctx, "t")
	if err != nil || r.Queues != 2 {
		t.Fatalf("Refresh = %+v, %v; want the tenant's 2 queues", r, err)
	}
	if _, err := s.Queues(ctx, "t", QueueQuery{}); err != nil {
		t.Fatal(err)
	}
	// The refresh's own count, then the listing and the storage totals read again.
	if lists.Load() != 3 || totals.Load() != 2 {
		t.Fatalf("%d listings and %d storage reads after the refresh, want 3 and 2", lists.Load(), totals.Load())
	}
	fail.Store(true)
	if _, err := s.Refresh(ctx, "t"); err == nil {
		t.Fatal("Refresh succeeded with the store failing")
	}
}
