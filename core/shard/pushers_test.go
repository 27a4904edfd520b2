package shard

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/core/spool/spooltest"
	"github.com/queen-go/queen/ports"
)

// pushWorld is n shards, each a memory store behind its own fusion batcher and push
// service, and a transaction service on a store of its own (core/twophase's place).
type pushWorld struct {
	codec     *segment.Codec
	stores    []*memory.Store
	services  []*push.Service
	txnStore  *memory.Store
	catalogue *memory.Placements
	down      *atomic.Bool
	placer    *Placer
	pushers   *Pushers
	// service builds a push service over a store, its batcher stopped at the cleanup.
	service func(s *memory.Store, opts push.Options) *push.Service
}

func newPushWorld(t *testing.T, n int) *pushWorld {
	t.Helper()
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	m, down := fakeCatalogue()
	w := &pushWorld{codec: codec, catalogue: m, down: down, placer: NewPlacer(m, n, nil), txnStore: memory.NewStore()}
	w.service = func(s *memory.Store, opts push.Options) *push.Service {
		b := fusion.New(s, codec, fusion.Options{})
		b.Start()
		t.Cleanup(func() {
			if err := b.Stop(context.Background()); err != nil {
				t.Errorf("stop the batcher: %v", err)
			}
		})
		return push.New(b, opts)
	}
	for i := range n {
		s := memory.NewStore()
		s.Shard = i
		w.stores = append(w.stores, s)
		w.services = append(w.services, w.service(s, push.Options{}))
	}
	txn := w.service(w.txnStore, push.Options{Transactions: w.txnStore, Codec: codec})
	w.pushers = NewPushers(w.services, txn, w.placer)
	return w
}

// place records queue on shard in the catalogue.
func (w *pushWorld) place(t *testing.T, queue string, shard int) {
	t.Helper()
	if _, err := w.catalogue.Place(context.Background(), ports.Placement{Tenant: tenant, Queue: queue, Shard: shard}); err != nil {
		t.Fatal(err)
	}
}

// payloads are the payloads store holds in queue's default partition, in offset order.
func (w *pushWorld) payloads(t *testing.T, store *memory.Store, queue string) []string {
	t.Helper()
	var out []string
	for _, sg := range store.Segments(tenant, queue, push.DefaultPartition) {
		frames, err := w.codec.Decode(sg.Blob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			out = append(out, string(f.Payload))
		}
	}
	return out
}

func TestPushersPush(t *testing.T) {
	t.Parallel()
	item := func(queue, payload string) push.Item { return push.Item{Queue: queue, Payload: []byte(payload)} }
	cases := []struct {
		name   string
		items  []push.Item
		failed map[int]bool // items whose queue cannot be placed
	}{
		{name: "one shard", items: []push.Item{item("q1", "1"), item("q1", "2")}},
		{name: "three shards interleaved", items: []push.Item{item("q2", "1"), item("q0", "2"), item("q1", "3"),
			item("q2", "4"), item("q0", "5")}},
		{name: "an unplaceable queue among placed ones", items: []push.Item{item("q0", "1"), item("new", "2"),
			item("q2", "3"), item("q0", "4")}, failed: map[int]bool{1: true}},
		{name: "only unplaceable queues", items: []push.Item{item("new", "1"), item("newer", "2")},
			failed: map[int]bool{0: true, 1: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newPushWorld(t, 3)
			shardOf := map[string]int{"q0": 0, "q1": 1, "q2": 2}
			for q, n := range shardOf {
				w.place(t, q, n)
				if _, err := w.placer.ShardOf(ctx, tenant, q, ""); err != nil { // the copy knows it
					t.Fatal(err)
				}
			}
			w.down.Store(c.failed != nil)
			res := w.pushers.Push(ctx, tenant, "", c.items)
			if len(res) != len(c.items) {
				t.Fatalf("%d results for %d items", len(res), len(c.items))
			}
			want := make(map[string][]string) // queue -> payloads, in request order
			for i, r := range res {
				it := c.items[i]
				if r.Index != i || r.Queue != it.Queue || r.Partition != push.DefaultPartition {
					t.Fatalf("result %d = %+v, want item %d of queue %s", i, r, i, it.Queue)
				}
				if c.failed[i] {
					if r.Status != push.StatusFailed || !errors.Is(r.Err, ports.ErrUnavailable) ||
						!strings.Contains(r.Err.Error(), "catalogue") || r.TransactionID == "" {
						t.Fatalf("result %d = %+v (%v), want failed naming the catalogue", i, r, r.Err)
					}
					continue
				}
				if r.Status != push.StatusQueued || OfID(r.PartitionID) != shardOf[it.Queue] || r.Err != nil {
					t.Fatalf("result %d = %+v, want queued on shard %d", i, r, shardOf[it.Queue])
				}
				if int(r.Offset) != len(want[it.Queue]) {
					t.Fatalf("result %d at offset %d, want %d", i, r.Offset, len(want[it.Queue]))
				}
				want[it.Queue] = append(want[it.Queue], string(it.Payload))
			}
			for _, q := range []string{"q0", "q1", "q2", "new", "newer"} {
				for n, s := range w.stores {
					got := w.payloads(t, s, q)
					if n != shardOf[q] || want[q] == nil {
						if got != nil {
							t.Errorf("shard %d holds %v of queue %s", n, got, q)
						}
						continue
					}
					if strings.Join(got, ",") != strings.Join(want[q], ",") {
						t.Errorf("queue %s on shard %d holds %v, want %v", q, n, got, want[q])
					}
				}
			}
		})
	}
}

// A queue pushed to for the first time whose namespace (the first part of a dotted
// name, as the push SQL derives it) is placed already lands on the namespace's shard.
func TestPushersPushCoLocatesNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newPushWorld(t, 3)
	byName, err := Place(Request{Queue: "billing.b", Explicit: -1, NamespaceShard: -1}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	ns := (byName + 1) % 3 // where the hash of the name would not put it
	if _, err := w.placer.PlaceExplicit(ctx, tenant, "billing.a", "billing", ns); err != nil {
		t.Fatal(err)
	}
	res := w.pushers.Push(ctx, tenant, "", []push.Item{{Queue: "billing.b", Payload: []byte("1")}})
	if res[0].Status != push.StatusQueued || OfID(res[0].PartitionID) != ns {
		t.Fatalf("billing.b: %+v, want queued on billing's shard %d", res[0], ns)
	}
}

// Transactions go to the transaction service whatever shard their queues are on; the
// counters count the requests given (one split over shards is one).
func TestPushersTransactionAndStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newPushWorld(t, 3)
	w.place(t, "q2", 2)
	w.place(t, "q1", 1)
	ops := []push.TxnOp{{Push: &push.TxnPush{Item: push.Item{Queue: "q2", Payload: []byte("t")}}}}
	if _, err := w.pushers.Transaction(ctx, tenant, "", ops, ""); err != nil {
		t.Fatal(err)
	}
	if got := w.payloads(t, w.txnStore, "q2"); len(got) != 1 || got[0] != "t" {
		t.Fatalf("the transaction store holds %v, want the transaction's push", got)
	}
	if got := w.payloads(t, w.stores[2], "q2"); got != nil {
		t.Fatalf("shard 2's push service took %v of a transaction", got)
	}
	w.pushers.Push(ctx, tenant, "", []push.Item{{Queue: "q2", Payload: []byte("1")}, {Queue: "q1", Payload: []byte("2")},
		{Queue: "q2", Payload: []byte("3")}})
	w.pushers.Push(ctx, tenant, "", []push.Item{{Queue: "q1", Payload: []byte("4")}})
	// The first request, split over two shards, is one request.
	if got, want := w.pushers.Stats(), (push.Stats{Requests: 2, Messages: 4}); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
}

// A transaction pushing to a partition whose shard holds spooled pushes not replayed yet
// is refused whole (the transaction service asks every shard's spool: Spooled), as the
// one-shard path refuses it: committing it first would put its
// messages before older ones. Other partitions and other shards are not held up.
func TestPushersTransactionWaitsForItsShardsSpool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newPushWorld(t, 3)
	w.place(t, "q2", 2)
	w.place(t, "q1", 1)
	sp := spooltest.Open(t, memory.NewSpoolFS(), spool.Options{})
	w.services[2] = w.service(w.stores[2], push.Options{Spool: sp, Divert: func() bool { return true }})
	txn := w.service(w.txnStore, push.Options{Transactions: w.txnStore, Codec: w.codec,
		SpooledAhead: Spooled(w.placer, []*spool.Spool{nil, nil, sp})})
	w.pushers = NewPushers(w.services, txn, w.placer)
	if r := w.pushers.Push(ctx, tenant, "", []push.Item{{Queue: "q2", Payload: []byte("1")}}); r[0].Status != push.StatusBuffered {
		t.Fatalf("the push to shard 2 answered %s, want buffered", r[0].Status)
	}
	transact := func(queue, partition string) error {
		ops := []push.TxnOp{{Push: &push.TxnPush{Item: push.Item{Queue: queue, Partition: partition, Payload: []byte("t")}}}}
		_, err := w.pushers.Transaction(ctx, tenant, "", ops, "")
		return err
	}
	if err := transact("q2", ""); !errors.Is(err, push.ErrSpooledAhead) {
		t.Errorf("a transaction behind shard 2's spool: err %v, want ErrSpooledAhead", err)
	}
	if err := transact("q2", "other"); err != nil {
		t.Errorf("a transaction to another partition: %v", err)
	}
	if err := transact("q1", ""); err != nil {
		t.Errorf("a transaction to shard 1: %v", err)
	}
}
