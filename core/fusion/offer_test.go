package fusion

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/vegas"
)

// With one permit and eight shards, the partitions that wait while a bundle is out must
// leave together, whatever shard owns them: a freed permit carries every shard's offered
// partitions, not one shard's. Without offers each shard would need a bundle of its own.
func TestOffersFillBundlesAcrossShards(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		bundleMax int
		want      []int // segments per bundle after the held one
	}{
		{name: "all-in-one", bundleMax: 64, want: []int{40}},
		{name: "capped", bundleMax: 16, want: []int{16, 16, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { offersFillBundles(t, tc.bundleMax, tc.want) })
		})
	}
}

// offersFillBundles holds a bundle of one partition, submits waiting partitions to
// eight shards while it is out, and checks the bundles they leave in.
func offersFillBundles(t *testing.T, bundleMax int, want []int) {
	const waiting = 40
	store := memory.NewStore()
	gt := newGate()
	store.BeforePush = gt.before
	b := newBatcher(t, store, Options{Shards: 8, BundleMax: bundleMax,
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
	waitOffered(t, b, waiting)
	close(gt.release)
	wg.Wait()

	bundles := gt.recorded()[1:]
	if len(bundles) != len(want) {
		t.Fatalf("%d bundles after the held one, want %d", len(bundles), len(want))
	}
	seen := map[string]bool{}
	for k, segs := range bundles {
		if len(segs) != want[k] {
			t.Errorf("bundle %d has %d segments, want %d", k, len(segs), want[k])
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
}

// waitOffered waits until every goroutine of the test's bubble is blocked (the
// submissions have all been handled) and checks that n partitions are on the offer list.
func waitOffered(t *testing.T, b *Batcher, n int32) {
	t.Helper()
	synctest.Wait()
	if got := b.nOffered.Load(); got != n {
		t.Fatalf("%d partitions offered, want %d", got, n)
	}
}
