package consume

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// TestHotlistDeliversEverything is the hot-list's property test: random pushes (some of
// whose marks are lost, as a lost peer hint would be), wildcard pops of several groups
// with random batch sizes and partition counts, acks that complete, fail or are never
// sent (the lease expires), pops whose client leaves before the answer, and group rings
// dropped at random. However the operations interleave, once the producers stop every
// group receives and completes every message: the ring may be stale in excess, the
// reseed floor repairs what it lost.
func TestHotlistDeliversEverything(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runHotlistProperty(t, seed) })
		})
	}
}

func runHotlistProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	codec, err := segment.NewCodec(1)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	store := memory.NewStore()
	waker := NewWaker()
	hot := hotlist.New(store, hotlist.Options{Enabled: true, Wake: waker.Notify, Shards: 3,
		Reseed: 2 * time.Second, Stranded: 10 * time.Second, Logger: quiet})
	hot.Start()
	defer hot.Stop()
	// Commits reach the hot-list, except those the test "loses".
	var lose sync.Map // partition name -> lose its next mark
	commits := notify.NewCommits()
	commits.Subscribe(func(c notify.Commit) {
		if _, ok := lose.LoadAndDelete(c.Partition); ok {
			return
		}
		hot.Committed(c)
	})
	b := fusion.New(store, codec, fusion.Options{Shards: 2, Commits: commits, Logger: quiet})
	b.Start()
	defer b.Stop(context.Background())
	svc := New(store, codec, Options{Waker: waker, Hot: hot, Logger: quiet})

	const queue, partitions = "prop", 12
	groups := []string{"g0", "g1", ports.QueueModeGroup}
	pushed := map[string]bool{} // transaction ids
	done := map[string]map[string]bool{}
	for _, g := range groups {
		done[g] = map[string]bool{}
	}
	push := func(n int) {
		var wg sync.WaitGroup
		p := fmt.Sprintf("p%d", rng.IntN(partitions))
		if rng.IntN(5) == 0 {
			lose.Store(p, true)
		}
		g := &fusion.Group{Tenant: ports.DefaultTenant, Queue: queue, Partition: p, Done: wg.Done}
		for range n {
			txn := fmt.Sprintf("m%d", len(pushed))
			pushed[txn] = true
			g.Frames = append(g.Frames, segment.Frame{TransactionID: txn, Payload: []byte(`1`)})
			g.Hashes = append(g.Hashes, dedup.Hash(txn))
		}
		wg.Add(1)
		b.Submit(g)
		wg.Wait()
	}
	// consume pops once for group and acks as the dice say; it reports what it popped.
	consume := func(group string, finishing bool) int {
		q := PopQuery{Queue: queue, Group: group, Batch: 1 + rng.IntN(7), Partitions: 1 + rng.IntN(3),
			LeaseSeconds: 5}
		if group == ports.QueueModeGroup {
			q.Group = ""
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if !finishing && rng.IntN(10) == 0 {
			cancel() // the client leaves: the claim is released, nothing is lost
		}
		batch, err := svc.Pop(ctx, q)
		if err != nil || batch == nil {
			return 0
		}
		in := make([]AckInput, len(batch.Messages))
		for i, m := range batch.Messages {
			in[i] = AckInput{TransactionID: m.TransactionID, PartitionID: m.PartitionID, Group: q.Group,
				LeaseID: m.LeaseID}
		}
		switch r := rng.IntN(10); {
		case !finishing && r == 0:
			return len(in) // never acked: the lease expires and redelivers
		case !finishing && r == 1 && len(in) > 0:
			in[len(in)-1].Status = "retry" // the last one fails: the rest completes implicitly
		}
		res, err := svc.Ack(context.Background(), ports.DefaultTenant, in)
		if err != nil {
			t.Fatalf("ack: %v", err)
		}
		for i, r := range res {
			if r.OK && in[i].Status == "" {
				done[group][in[i].TransactionID] = true
			}
		}
		// An ack completes everything before it in its partition: the implicit prefix.
		for i, r := range res {
			if r.OK && in[i].Status == "" {
				for j := 0; j < i; j++ {
					if batch.Messages[j].PartitionID == batch.Messages[i].PartitionID {
						done[group][batch.Messages[j].TransactionID] = true
					}
				}
			}
		}
		return len(in)
	}

	for step := range 400 {
		switch r := rng.IntN(20); {
		case r < 7:
			push(1 + rng.IntN(4))
		case r == 7:
			hot.DropGroup(ports.DefaultTenant, queue, groups[rng.IntN(len(groups))])
		case r == 8:
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Millisecond) // leases expire, floors run
		default:
			consume(groups[rng.IntN(len(groups))], false)
		}
		if step%50 == 0 {
			synctest.Wait()
		}
	}
	// The producers stop; the consumers keep going until every group completed
	// everything, within a bounded (fake) time.
	deadline := time.Now().Add(10 * time.Minute)
	for {
		complete := true
		for _, g := range groups {
			if len(done[g]) < len(pushed) {
				complete = false
				if consume(g, true) == 0 {
					time.Sleep(200 * time.Millisecond) // let leases lapse, the floor run
				}
			}
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			for _, g := range groups {
				var missing []string
				for txn := range pushed {
					if !done[g][txn] {
						missing = append(missing, txn)
					}
				}
				if len(missing) > 0 {
					t.Errorf("group %s: %d of %d messages never completed (e.g. %v)", g, len(missing), len(pushed),
						missing[:min(5, len(missing))])
				}
			}
			t.FailNow()
		}
	}
}
