package fusion

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/vegas"
)

// With one permit and eight shards, the partitions that wait while a bundle is out must
// leave together, whatever shard owns them: a freed permit carries every waiting shard's
// ready partitions (rides), not one shard's. Without rides each shard would need a
// bundle of its own.
func TestRidersFillBundlesAcrossShards(t *testing.T) {
	t.Parallel()
	const waiting = 40
	for _, tc := range []struct {
		name      string
		bundleMax int
		exact     bool // all waiting partitions fit one bundle: exactly one must follow
	}{
		{name: "all-in-one", bundleMax: 64, exact: true},
		// A shard left with ready partitions after its ride registers again in its own
		// loop, which may come after the next gathering: the count then varies, but it
		// stays below one bundle per shard.
		{name: "capped", bundleMax: 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := memory.NewStore()
			gt := newGate()
			store.BeforePush = gt.before
			b := newBatcher(t, store, Options{Shards: 8, BundleMax: tc.bundleMax,
				Limiter: vegas.New(vegas.Options{Initial: 1, Min: 1, Max: 1})})

			var wg sync.WaitGroup
			b.Submit(request(&wg, "q", "held", "a"))
			<-gt.entered
			shards := map[int]bool{}
			for i := range waiting {
				g := request(&wg, "q", fmt.Sprint("p", i), "x")
				shards[b.shardOf(g)] = true
				b.Submit(g)
			}
			if len(shards) < 6 {
				t.Fatalf("the %d partitions landed on %d shards only: the test needs several", waiting, len(shards))
			}
			waitTotalBacklog(t, b, waiting)
			close(gt.release)
			wg.Wait()

			bundles := gt.recorded()[1:]
			switch {
			case tc.exact && len(bundles) != 1:
				t.Errorf("%d bundles after the held one, want 1", len(bundles))
			case len(bundles) >= len(shards):
				t.Errorf("%d bundles after the held one for partitions of %d shards: no rides", len(bundles), len(shards))
			}
			seen := map[string]bool{}
			for k, segs := range bundles {
				if len(segs) > tc.bundleMax {
					t.Errorf("bundle %d has %d segments, above BundleMax %d", k, len(segs), tc.bundleMax)
				}
				for _, sg := range segs {
					if seen[sg.Partition] {
						t.Errorf("partition %s in two bundles", sg.Partition)
					}
					seen[sg.Partition] = true
				}
			}
			if len(seen) != waiting {
				t.Errorf("%d partitions committed, want %d", len(seen), waiting)
			}
		})
	}
}

// waitTotalBacklog waits until the shards together hold n accumulated frames (each has
// then also asked for a permit: dispatch runs before the backlog is published).
func waitTotalBacklog(t *testing.T, b *Batcher, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var total int64
		for _, s := range b.shards {
			total += s.backlog.Load()
		}
		if total == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("total backlog %d, want %d", total, n)
		}
		time.Sleep(time.Millisecond)
	}
}
