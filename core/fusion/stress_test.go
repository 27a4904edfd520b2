package fusion

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/ports"
)

// sub is one submitted group and its transaction ids, in submission order.
type sub struct {
	g    *Group
	txns []string
}

// stressRun pushes rounds of random groups from submitters that each own a set of
// partitions (so the submission order of a partition is defined) through a Batcher of 16
// shards with a fixed limit, bundles of 3 and one own bundle per shard, then checks the
// verdicts against the submission order. failEvery > 0 fails every failEvery-th bundle;
// hold is the tick.
func stressRun(t *testing.T, seed uint64, limit int, hold time.Duration, failEvery int64, rounds int) {
	store := memory.NewStore()
	var pushes atomic.Int64
	store.BeforePush = func(segs []ports.Segment) error {
		n := pushes.Add(1)
		if n%3 == 0 {
			runtime.Gosched()
		}
		if failEvery > 0 && n%failEvery == 0 {
			return errors.New("injected")
		}
		return nil
	}
	b := New(store, testCodec(t), Options{Shards: 16, BundleMax: 3, MaxInflight: 1, Hold: hold,
		Limiter: vegas.New(vegas.Options{Initial: limit, Min: limit, Max: limit})})
	b.Start()
	const submitters = 12
	const partitions = 48
	perPart := make([][]sub, partitions) // submission order per partition
	var mu sync.Mutex
	for round := range rounds {
		var wg sync.WaitGroup
		var sw sync.WaitGroup
		for w := range submitters {
			sw.Add(1)
			go func() {
				defer sw.Done()
				r := rand.New(rand.NewPCG(seed, uint64(round*1000+w)))
				for range 20 {
					var gs []*Group
					var subs []sub
					for range 1 + r.IntN(3) {
						p := w + submitters*r.IntN(partitions/submitters)
						g := &Group{Tenant: tenant, Queue: "q", Partition: fmt.Sprint("p", p), Done: wg.Done}
						var txns []string
						for range 1 + r.IntN(4) {
							// a small txn space per partition: many duplicates
							txn := fmt.Sprintf("t%d-%d", r.IntN(400), round)
							if r.IntN(4) == 0 {
								txn = fmt.Sprintf("t%d", r.IntN(50))
							}
							txns = append(txns, txn)
							g.Frames = append(g.Frames, segment.Frame{ID: [16]byte{byte(p), byte(len(txns))}, TransactionID: txn, Payload: []byte(`{}`)})
							g.Hashes = append(g.Hashes, dedup.Hash(txn))
						}
						wg.Add(1)
						gs = append(gs, g)
						subs = append(subs, sub{g, txns})
					}
					mu.Lock()
					for _, s := range subs {
						var p int
						fmt.Sscanf(s.g.Partition, "p%d", &p)
						perPart[p] = append(perPart[p], s)
					}
					b.Submit(gs...) // under mu: a partition's order == perPart order
					mu.Unlock()
					if r.IntN(3) == 0 {
						runtime.Gosched()
					}
				}
			}()
		}
		sw.Wait()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: groups never completed (offered=%d limiter inflight=%d)", round, b.nOffered.Load(), b.opts.Limiter.InFlight())
		}
	}
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := b.opts.Limiter.InFlight(); n != 0 {
		t.Fatalf("limiter holds %d permits after close", n)
	}
	for _, s := range b.shards {
		if s.inflight != 0 || s.bundles != 0 || s.pending != 0 {
			t.Fatalf("shard accounting: inflight=%d bundles=%d pending=%d", s.inflight, s.bundles, s.pending)
		}
	}
	// Per partition: Queued offsets gapless and increasing in submission order; every
	// Duplicate points at an earlier queued frame with the same txn.
	for p, subs := range perPart {
		next := int64(0)
		byOff := map[int64]string{}
		for _, s := range subs {
			for i, r := range s.g.Results {
				switch r.Status {
				case Queued:
					if r.Offset != next {
						t.Fatalf("p%d: queued frame %s at %d, want %d", p, s.txns[i], r.Offset, next)
					}
					byOff[r.Offset] = s.txns[i]
					next++
				case Duplicate:
					if got, ok := byOff[r.Offset]; !ok || got != s.txns[i] {
						t.Fatalf("p%d: duplicate %s points at %d (%q, known %v)", p, s.txns[i], r.Offset, got, ok)
					}
				case Error:
					if failEvery == 0 {
						t.Fatalf("p%d: error without failures", p)
					}
				default:
					t.Fatalf("p%d: frame without verdict", p)
				}
			}
		}
		if segs := store.Segments(tenant, "q", fmt.Sprint("p", p)); len(segs) > 0 {
			last := segs[len(segs)-1]
			if last.BaseOffset+int64(last.Count) != next {
				t.Fatalf("p%d: store holds %d frames, results say %d", p, last.BaseOffset+int64(last.Count), next)
			}
		}
	}
}

// Offers and cross-shard bundles under stress: many shards, one or two permits, tiny
// bundles, random partitions, duplicate transaction ids (remainders), injected bundle
// failures, and with the hold tick effectively off (a lost wake-up would strand offers).
// Every group must complete; per partition, queued offsets are gapless in submission
// order and every duplicate points at an earlier frame with its transaction id; after
// Close no permit, partition or frame is left accounted.
func TestStressOffers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		limit     int
		hold      time.Duration
		failEvery int64
	}{
		{name: "limit-1", limit: 1, hold: 5 * time.Millisecond},
		{name: "limit-2", limit: 2, hold: 5 * time.Millisecond},
		{name: "limit-1-failures", limit: 1, hold: 5 * time.Millisecond, failEvery: 7},
		{name: "limit-2-failures", limit: 2, hold: 5 * time.Millisecond, failEvery: 7},
		{name: "limit-1-no-tick", limit: 1, hold: time.Hour},
		{name: "limit-3-no-tick", limit: 3, hold: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for seed := range uint64(3) {
				stressRun(t, seed, tc.limit, tc.hold, tc.failEvery, 10)
			}
		})
	}
}
