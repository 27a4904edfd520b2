package fusion

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/ports"
)

// watermarks records the Verified claim of every pushed segment, per queue.
type watermarks struct {
	mu   sync.Mutex
	sent map[string][]int64
}

func (w *watermarks) before(segs []ports.Segment) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, sg := range segs {
		w.sent[sg.Queue] = append(w.sent[sg.Queue], sg.Verified)
	}
	return nil
}

func (w *watermarks) of(queue string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprint(w.sent[queue])
}

func TestForgetQueueDropsOnlyThatQueue(t *testing.T) {
	t.Parallel()
	store := memory.NewStore()
	marks := &watermarks{sent: map[string][]int64{}}
	store.BeforePush = marks.before
	b := newBatcher(t, store, Options{Shards: 2})
	var wg sync.WaitGroup
	push := func(txn string) {
		// "qq" shares the prefix "q" as a string, not as a queue name.
		for _, q := range []string{"q", "qq", "other"} {
			b.Submit(request(&wg, q, "p", txn))
		}
		wg.Wait()
	}
	push("a")
	push("b")
	b.ForgetQueue(tenant, "q")
	push("c")
	// First push: nothing known. Second: the cache covers offset 0. Third: "q" forgot its
	// history (a full probe), the others still claim offset 1.
	for queue, want := range map[string]string{"q": "[-1 0 -1]", "qq": "[-1 0 1]", "other": "[-1 0 1]"} {
		if got := marks.of(queue); got != want {
			t.Errorf("queue %q: verified watermarks sent = %s, want %s", queue, got, want)
		}
	}
}

func TestForgetQueueOnClosedBatcherReturns(t *testing.T) {
	t.Parallel()
	b := New(memory.NewStore(), testCodec(t), Options{Shards: 2})
	b.Start()
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.ForgetQueue(tenant, "q") // must not block on shards that have stopped
}

// gatedRecent holds the first warm-up read until gate is closed.
type gatedRecent struct {
	*memory.Store
	gate chan struct{}
	once sync.Once
}

func (g *gatedRecent) RecentHashes(ctx context.Context, pid string, maxSegments int) (ports.RecentHashes, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ports.RecentHashes{}, ctx.Err()
		}
	}
	return g.Store.RecentHashes(ctx, pid, maxSegments)
}

func TestForgetQueueDiscardsPendingWarmUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gatedRecent{Store: memory.NewStore(), gate: make(chan struct{})}
		// History written before this broker existed, so its first commit starts a warm-up.
		for _, txn := range []string{"a", "b", "c"} {
			h := dedup.Hash(txn)
			if _, err := store.PushSegments(t.Context(), []ports.Segment{{Tenant: tenant, Queue: "q", Partition: "p",
				Count: 1, Hashes: h[:], Verified: -1, Blob: []byte{1}}}); err != nil {
				t.Fatal(err)
			}
		}
		marks := &watermarks{sent: map[string][]int64{}}
		store.BeforePush = marks.before
		b := New(store, testCodec(t), Options{Shards: 1})
		b.Start()
		defer func() {
			if err := b.Stop(t.Context()); err != nil {
				t.Error(err)
			}
		}()
		var wg sync.WaitGroup
		b.Submit(request(&wg, "q", "p", "x"))
		wg.Wait()
		synctest.Wait() // the warm-up read is now held at the gate
		b.ForgetQueue(tenant, "q")
		close(store.gate)
		synctest.Wait() // the stale read lands and is discarded
		for _, txn := range []string{"y", "z"} {
			b.Submit(request(&wg, "q", "p", txn))
			wg.Wait()
			synctest.Wait() // "y"'s commit starts a fresh warm-up at once; let it land
		}
		// "x": unknown history. "y": the read pending at ForgetQueue was dropped, so still
		// a full probe (it would have claimed 3). "z": the fresh read covers offsets 0-4.
		if got, want := marks.of("q"), "[-1 -1 4]"; got != want {
			t.Errorf("verified watermarks sent = %s, want %s", got, want)
		}
	})
}
