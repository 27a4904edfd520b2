package fusion

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/ports"
)

// heldRecent holds every warm-up read until gate is closed, and counts them.
type heldRecent struct {
	*memory.Store
	gate  chan struct{}
	reads atomic.Int32
}

func (h *heldRecent) RecentHashes(ctx context.Context, pid string, maxSegments int) (ports.RecentHashes, error) {
	h.reads.Add(1)
	select {
	case <-h.gate:
	case <-ctx.Done():
		return ports.RecentHashes{}, ctx.Err()
	}
	return h.Store.RecentHashes(ctx, pid, maxSegments)
}

// coldBatcher is a Batcher over partitions p0..p{parts-1} of queue q that hold history
// written before it started, whose warm-up reads are held by the returned store; every
// partition has committed once (one bundle), so each has asked for a warm-up.
func coldBatcher(t *testing.T, parts int) (*Batcher, *heldRecent) {
	store := &heldRecent{Store: memory.NewStore(), gate: make(chan struct{})}
	for i := range parts {
		h := dedup.Hash("old")
		if _, err := store.PushSegments(t.Context(), []ports.Segment{{Tenant: tenant, Queue: "q", Partition: fmt.Sprint("p", i),
			Count: 1, Hashes: h[:], Verified: -1, Blob: []byte{1}}}); err != nil {
			t.Fatal(err)
		}
	}
	b := New(store, testCodec(t), Options{Shards: 1})
	b.Start()
	t.Cleanup(func() {
		if err := b.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	var wg sync.WaitGroup
	groups := make([]*Group, parts)
	for i := range groups {
		groups[i] = request(&wg, "q", fmt.Sprint("p", i), "new")
	}
	b.Submit(groups...)
	wg.Wait()
	synctest.Wait()
	if got := store.reads.Load(); got != warmParallel {
		t.Fatalf("%d reads started while every slot is held, want %d", got, warmParallel)
	}
	return b, store
}

// TestWarmUpsQueueForSlots is the restart case: many partitions turn cold at once. Those
// that find no free slot wait in the shard's queue and are read as slots free, with no
// further pushes asking.
func TestWarmUpsQueueForSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const parts = 5 * warmParallel
		b, store := coldBatcher(t, parts)
		close(store.gate)
		synctest.Wait()
		if got := store.reads.Load(); got != parts {
			t.Fatalf("%d warm-up reads after the slots freed, want one per partition (%d)", got, parts)
		}
		if got := len(b.shards[0].known); got != parts {
			t.Fatalf("%d partitions warmed, want %d", got, parts)
		}
	})
}

// TestForgetQueueDropsQueuedWarmUps: queued warm-ups of a reconfigured or deleted queue
// are dropped with its cache (their partition ids may be gone); the reads in flight land
// and are discarded.
func TestForgetQueueDropsQueuedWarmUps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, store := coldBatcher(t, 5*warmParallel)
		b.ForgetQueue(tenant, "q")
		close(store.gate)
		synctest.Wait()
		if got := store.reads.Load(); got != warmParallel {
			t.Fatalf("%d warm-up reads, want only the %d in flight at ForgetQueue", got, warmParallel)
		}
		if got := len(b.shards[0].known); got != 0 {
			t.Fatalf("%d partitions warmed from reads that predate ForgetQueue, want 0", got)
		}
	})
}
