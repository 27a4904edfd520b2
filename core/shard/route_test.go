package shard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/ports"
)

// epoch is the clock of shard 0's store; shard n's runs n seconds ahead, so an expiry
// says which shard set it.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// errDown is what a shard that does not answer returns.
var errDown = errors.New("shard down")

// world is n shards of in-memory stores behind one Router, each store minting the
// partition ids of its shard, placed by one in-memory catalogue that can stop answering.
type world struct {
	stores    []*memory.Store
	admins    []*memory.QueueAdmin
	spies     []*spy
	catalogue *memory.Placements
	down      *atomic.Bool
	placer    *Placer
	router    *Router
}

// newWorld returns a world of n shards; the consume and admin ports of the shards in
// unreachable fail every call.
func newWorld(t *testing.T, n int, unreachable ...int) *world {
	t.Helper()
	m, down := fakeCatalogue()
	w := &world{catalogue: m, down: down, placer: NewPlacer(m, n, nil)}
	shards := make([]Stores, n)
	for i := range n {
		s := memory.NewStore()
		s.Shard = i
		now := epoch.Add(time.Duration(i) * time.Second)
		s.Now = func() time.Time { return now }
		a := memory.NewQueueAdmin()
		sp := &spy{ConsumeStore: s}
		w.stores, w.admins, w.spies = append(w.stores, s), append(w.admins, a), append(w.spies, sp)
		shards[i] = Stores{Consume: sp, Hot: s, Settings: s, Queues: a}
		if slices.Contains(unreachable, i) {
			shards[i].Consume, shards[i].Queues = downShard{}, downShard{}
		}
	}
	w.router = NewRouter(shards, w.placer)
	return w
}

// fakeCatalogue is an in-memory placement map that stops answering while down is set.
func fakeCatalogue() (*memory.Placements, *atomic.Bool) {
	down := new(atomic.Bool)
	m := &memory.Placements{Fault: func() error {
		if down.Load() {
			return ports.ErrUnavailable
		}
		return nil
	}}
	return m, down
}

// place records queue on shard in the catalogue (another broker placed it: this one's
// copy does not know it yet).
func (w *world) place(t *testing.T, queue string, shard int) {
	t.Helper()
	if _, err := w.catalogue.Place(context.Background(), ports.Placement{Tenant: tenant, Queue: queue, Shard: shard}); err != nil {
		t.Fatal(err)
	}
}

// put stores one segment holding the messages txns in queue/partition on shard's store
// and returns the partition's id.
func (w *world) put(t *testing.T, shard int, queue, partition string, txns ...string) string {
	t.Helper()
	var hashes []byte
	for _, x := range txns {
		h := hashOf(x)
		hashes = append(hashes, h[:]...)
	}
	res, err := w.stores[shard].PushSegments(context.Background(), []ports.Segment{{Tenant: tenant, Queue: queue,
		Partition: partition, Count: len(txns), Hashes: hashes, Verified: -1, Blob: []byte("frames")}})
	if err != nil || res[0].Status != ports.SegmentQueued {
		t.Fatalf("push to shard %d: %+v, %v", shard, res, err)
	}
	return res[0].PartitionID
}

// pop pops through the router and fails the test on an error.
func (w *world) pop(t *testing.T, req ports.PopRequest) []ports.Claim {
	t.Helper()
	req.Tenant = tenant
	if req.Group == "" {
		req.Group = ports.QueueModeGroup
	}
	claims, _, err := w.router.Pop(context.Background(), req)
	if err != nil {
		t.Fatalf("pop %+v: %v", req, err)
	}
	return claims
}

// hashOf stands in for a transaction id's xxh3-128: the store only compares hashes.
func hashOf(txn string) [16]byte {
	var h [16]byte
	copy(h[:], txn)
	return h
}

// idOf is a new partition id naming shard n.
func idOf(t *testing.T, n int) string {
	t.Helper()
	id, err := Mint(n)
	if err != nil {
		t.Fatal(err)
	}
	return uuid.UUID(id).String()
}

// spy passes one shard's consume calls on, counting pops and recording the partition
// ids acks and releases name.
type spy struct {
	ports.ConsumeStore

	mu   sync.Mutex
	pops int
	ids  []string
}

func (s *spy) Pop(ctx context.Context, req ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	s.mu.Lock()
	s.pops++
	s.mu.Unlock()
	return s.ConsumeStore.Pop(ctx, req)
}

func (s *spy) Ack(ctx context.Context, items []ports.AckItem) ([]ports.AckResult, error) {
	s.mu.Lock()
	for _, it := range items {
		s.ids = append(s.ids, it.PartitionID)
	}
	s.mu.Unlock()
	return s.ConsumeStore.Ack(ctx, items)
}

func (s *spy) Release(ctx context.Context, group, leaseID string, autoAck bool, claims []ports.Claim) error {
	s.mu.Lock()
	for _, c := range claims {
		s.ids = append(s.ids, c.PartitionID)
	}
	s.mu.Unlock()
	return s.ConsumeStore.Release(ctx, group, leaseID, autoAck, claims)
}

// named returns the partition ids the shard was asked about, in arrival order.
func (s *spy) named() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// downShard is a shard that does not answer.
type downShard struct{}

func (downShard) Pop(context.Context, ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	return nil, nil, errDown
}
func (downShard) Ack(context.Context, []ports.AckItem) ([]ports.AckResult, error) {
	return nil, errDown
}
func (downShard) Release(context.Context, string, string, bool, []ports.Claim) error { return errDown }
func (downShard) ExtendLease(context.Context, string, time.Duration) (int, time.Time, error) {
	return 0, time.Time{}, errDown
}
func (downShard) Configure(context.Context, string, ports.QueueConfig, ports.QueueOption) (ports.QueueConfig, error) {
	return ports.QueueConfig{}, errDown
}
func (downShard) DeleteQueue(context.Context, string, string) (bool, error) { return false, errDown }
func (downShard) DeadLetters(context.Context, string, ports.DeadLetterFilter) ([]ports.DeadLetter, error) {
	return nil, errDown
}

// Every shard holds a queue of the name (only one of them in earnest); a pop, the
// hot-list's floor and the encryption flag read the shard the catalogue names, shard 0
// for a queue it does not know.
func TestRouterQueueCallsReachTheQueueShard(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		placed int // -1: not in the catalogue
		down   bool
		want   int
	}{
		{name: "placed on shard 2", placed: 2, want: 2},
		{name: "placed on shard 1", placed: 1, want: 1},
		{name: "placed on shard 0", placed: 0, want: 0},
		{name: "not in the catalogue: shard 0", placed: -1, want: 0},
		{name: "placed, catalogue down after the first call", placed: 1, want: 1, down: true},
		{name: "not in the catalogue, catalogue down", placed: -1, down: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newWorld(t, 3)
			for n := range 3 {
				w.put(t, n, "q", "p", "m1", "m2")
			}
			w.stores[c.want].SetEncryption(tenant, "q", true)
			if c.placed >= 0 {
				w.place(t, "q", c.placed)
				if c.down { // the copy learns the placement while the catalogue answers
					if _, _, err := w.placer.Find(ctx, tenant, "q"); err != nil {
						t.Fatal(err)
					}
				}
			}
			w.down.Store(c.down)
			wantErr := c.down && c.placed < 0
			claims, _, err := w.router.Pop(ctx, ports.PopRequest{Tenant: tenant, Queue: "q", Group: ports.QueueModeGroup,
				Batch: 10, Partitions: 1, LeaseID: uuid.NewString()})
			page, perr := w.router.Pending(ctx, tenant, "q", ports.QueueModeGroup, "", 10)
			enc, eerr := w.router.EncryptionEnabled(ctx, tenant, "q")
			if wantErr {
				for _, err := range []error{err, perr, eerr} {
					if !errors.Is(err, ports.ErrUnavailable) {
						t.Fatalf("with the catalogue down: %v, want ErrUnavailable", err)
					}
				}
				return
			}
			if err != nil || perr != nil || eerr != nil {
				t.Fatalf("pop %v, pending %v, encryption %v", err, perr, eerr)
			}
			if len(claims) != 1 || OfID(claims[0].PartitionID) != c.want || claims[0].End != 1 {
				t.Fatalf("claims %+v, want both messages of shard %d", claims, c.want)
			}
			for n, sp := range w.spies {
				if want := b2i(n == c.want); sp.pops != want {
					t.Errorf("shard %d popped %d times, want %d", n, sp.pops, want)
				}
			}
			if !page.QueueExists || len(page.Partitions) != 1 || OfID(page.Partitions[0].ID) != c.want {
				t.Fatalf("pending %+v, want the partition of shard %d", page, c.want)
			}
			if !enc {
				t.Fatalf("encryption flag read from another shard than %d", c.want)
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nsWorld holds namespace ns's queues ns.a, ns.b, ns.c on shards 0, 1, 2, two messages
// each, and a queue of another namespace on shard 1.
func nsWorld(t *testing.T, unreachable ...int) *world {
	t.Helper()
	w := newWorld(t, 3, unreachable...)
	for n, q := range []string{"ns.a", "ns.b", "ns.c"} {
		w.place(t, q, n)
		w.put(t, n, q, "p", q+"1", q+"2")
	}
	w.place(t, "other.x", 1)
	w.put(t, 1, "other.x", "p", "x1")
	return w
}

func TestRouterNamespacePop(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name              string
		unreachable       []int
		namespace         string
		batch, partitions int
		claims, messages  int // wanted
		asked             int // shards popped
		err               error
	}{
		{name: "batch and partitions to spare: every shard", namespace: "ns", batch: 10, partitions: 10, claims: 3, messages: 6, asked: 3},
		{name: "batch used up after two shards", namespace: "ns", batch: 3, partitions: 10, claims: 2, messages: 3, asked: 2},
		{name: "partitions used up after one shard", namespace: "ns", batch: 10, partitions: 1, claims: 1, messages: 2, asked: 1},
		{name: "batch exactly one shard's", namespace: "ns", batch: 2, partitions: 10, claims: 1, messages: 2, asked: 1},
		{name: "a shard down: the others answer", unreachable: []int{1}, namespace: "ns", batch: 10, partitions: 10, claims: 2, messages: 4, asked: 2},
		{name: "every shard down", unreachable: []int{0, 1, 2}, namespace: "ns", batch: 10, partitions: 10, err: errDown},
		{name: "nothing in the namespace", namespace: "none", batch: 10, partitions: 10, asked: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := nsWorld(t, c.unreachable...)
			claims, _, err := w.router.Pop(context.Background(), ports.PopRequest{Tenant: tenant, Namespace: c.namespace,
				Group: ports.QueueModeGroup, Batch: c.batch, Partitions: c.partitions, LeaseID: uuid.NewString()})
			if !errors.Is(err, c.err) {
				t.Fatalf("pop: %v, want %v", err, c.err)
			}
			messages, shards := 0, map[int]bool{}
			for _, cl := range claims {
				messages += int(cl.End - cl.Start + 1)
				if n := OfID(cl.PartitionID); shards[n] || cl.Queue != []string{"ns.a", "ns.b", "ns.c"}[n] {
					t.Fatalf("claim %+v: a second claim of shard %d or a queue of another shard", cl, n)
				} else {
					shards[n] = true
				}
			}
			if len(claims) != c.claims || messages != c.messages {
				t.Fatalf("%d claims of %d messages, want %d of %d: %+v", len(claims), messages, c.claims, c.messages, claims)
			}
			asked := 0
			for _, sp := range w.spies {
				asked += sp.pops
			}
			if asked != c.asked {
				t.Fatalf("%d shards asked, want %d", asked, c.asked)
			}
		})
	}
}

// Three pops by three groups, each taking one partition, start at three different
// shards: the rotation spreads namespace pops instead of draining shard 0 first.
func TestRouterNamespacePopRotates(t *testing.T) {
	t.Parallel()
	w := nsWorld(t)
	seen := map[int]bool{}
	for _, g := range []string{"g1", "g2", "g3"} {
		claims := w.pop(t, ports.PopRequest{Namespace: "ns", Group: g, Batch: 10, Partitions: 1, LeaseID: uuid.NewString()})
		if len(claims) != 1 {
			t.Fatalf("group %s: %+v, want one claim", g, claims)
		}
		seen[OfID(claims[0].PartitionID)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("three pops claimed on shards %v, want all three", seen)
	}
}

// ackWorld holds queues a, b, c on shards 0, 1, 2 (two messages each, a1 a2 and so on)
// popped under one lease; it returns their partition ids by queue. A queue on an
// unreachable shard is not pushed; its id is one of its shard that nothing holds.
func ackWorld(t *testing.T, unreachable ...int) (*world, map[string]string) {
	t.Helper()
	w := newWorld(t, 3, unreachable...)
	ids := map[string]string{}
	lease := uuid.NewString()
	for n, q := range []string{"a", "b", "c"} {
		w.place(t, q, n)
		if slices.Contains(unreachable, n) {
			ids[q] = idOf(t, n)
			continue
		}
		ids[q] = w.put(t, n, q, "p", q+"1", q+"2")
		if claims := w.pop(t, ports.PopRequest{Queue: q, Batch: 10, Partitions: 1, LeaseID: lease}); len(claims) != 1 {
			t.Fatalf("pop %s: %+v", q, claims)
		}
	}
	return w, ids
}

func TestRouterAck(t *testing.T) {
	t.Parallel()
	far := idOf(t, 9) // a shard the three-shard broker does not have
	ack := func(pid, txn string) ports.AckItem {
		return ports.AckItem{PartitionID: pid, Group: ports.QueueModeGroup, Hash: hashOf(txn), TransactionID: txn,
			Status: ports.AckCompleted}
	}
	cases := []struct {
		name        string
		unreachable []int
		items       func(ids map[string]string) []ports.AckItem
		ok          []bool
		shards      []int // where each item must go
		err         error
	}{
		{name: "one shard", ok: []bool{true, true}, shards: []int{1, 1},
			items: func(ids map[string]string) []ports.AckItem {
				return []ports.AckItem{ack(ids["b"], "b1"), ack(ids["b"], "b2")}
			}},
		{name: "interleaved over three shards", ok: []bool{true, true, false, true, true}, shards: []int{2, 0, 1, 0, 2},
			items: func(ids map[string]string) []ports.AckItem {
				return []ports.AckItem{ack(ids["c"], "c1"), ack(ids["a"], "a1"), ack(ids["b"], "no such message"),
					ack(ids["a"], "a2"), ack(ids["c"], "c2")}
			}},
		{name: "an id naming a shard beyond the configured ones goes to shard 0", ok: []bool{true, false, true}, shards: []int{0, 0, 1},
			items: func(ids map[string]string) []ports.AckItem {
				return []ports.AckItem{ack(ids["a"], "a1"), ack(far, "a2"), ack(ids["b"], "b1")}
			}},
		{name: "an id that is no UUID goes to shard 0", ok: []bool{true, false}, shards: []int{2, 0},
			items: func(ids map[string]string) []ports.AckItem {
				return []ports.AckItem{ack(ids["c"], "c1"), ack("not-a-uuid", "c2")}
			}},
		{name: "a shard down fails the call", unreachable: []int{1}, err: errDown, shards: []int{0, 1},
			items: func(ids map[string]string) []ports.AckItem {
				return []ports.AckItem{ack(ids["a"], "a1"), ack(ids["b"], "b1")}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w, ids := ackWorld(t, c.unreachable...)
			items := c.items(ids)
			res, err := w.router.Ack(context.Background(), items)
			if !errors.Is(err, c.err) {
				t.Fatalf("ack: %v, want %v", err, c.err)
			}
			if c.err == nil {
				if len(res) != len(items) {
					t.Fatalf("%d results for %d items", len(res), len(items))
				}
				for i, r := range res {
					if r.OK != c.ok[i] || r.OK == (r.Error != "") {
						t.Errorf("item %d (%s): %+v, want OK %v", i, items[i].TransactionID, r, c.ok[i])
					}
				}
			}
			for n, sp := range w.spies {
				var want []string
				for i, it := range items {
					if c.shards[i] == n && !slices.Contains(c.unreachable, n) {
						want = append(want, it.PartitionID)
					}
				}
				if got := sp.named(); !slices.Equal(got, want) {
					t.Errorf("shard %d was asked about %v, want %v", n, got, want)
				}
			}
		})
	}
}

// leaseWorld is nsWorld's three queues popped by namespace under one lease: a claim on
// every shard that answers.
func leaseWorld(t *testing.T, unreachable ...int) (w *world, lease string, claims []ports.Claim) {
	t.Helper()
	w = nsWorld(t, unreachable...)
	lease = uuid.NewString()
	claims = w.pop(t, ports.PopRequest{Namespace: "ns", Batch: 10, Partitions: 10, LeaseID: lease})
	if len(claims) != 3-len(unreachable) {
		t.Fatalf("namespace pop: %+v, want a claim per shard that answers", claims)
	}
	return w, lease, claims
}

func TestRouterExtendLease(t *testing.T) {
	t.Parallel()
	const d = 10 * time.Minute
	cases := []struct {
		name        string
		unreachable []int
		other       bool // extend a lease nothing holds
		renewed     int
		first       int // the shard whose clock sets the earliest expiry
		err         error
	}{
		{name: "every shard renews its part", renewed: 3, first: 0},
		{name: "a shard down, the others renew", unreachable: []int{0}, renewed: 2, first: 1},
		{name: "a shard down and nothing renewed", unreachable: []int{1}, other: true, err: errDown},
		{name: "a lease no shard holds", other: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w, lease, _ := leaseWorld(t, c.unreachable...)
			if c.other {
				lease = uuid.NewString()
			}
			n, exp, err := w.router.ExtendLease(context.Background(), lease, d)
			if !errors.Is(err, c.err) || n != c.renewed {
				t.Fatalf("ExtendLease = %d, %v; want %d, %v", n, err, c.renewed, c.err)
			}
			want := time.Time{}
			if c.renewed > 0 {
				want = epoch.Add(time.Duration(c.first)*time.Second + d)
			}
			if !exp.Equal(want) {
				t.Fatalf("earliest expiry %v, want %v", exp, want)
			}
		})
	}
}

func TestRouterRelease(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		unreachable []int
		extra       func(t *testing.T) (ports.Claim, int) // a claim beside the pop's, and its shard
		err         error
	}{
		{name: "each claim released on its shard"},
		{name: "a claim naming a shard beyond the configured ones goes to shard 0",
			extra: func(t *testing.T) (ports.Claim, int) { return ports.Claim{PartitionID: idOf(t, 9)}, 0 }},
		{name: "a shard down fails the call", unreachable: []int{1}, err: errDown,
			extra: func(t *testing.T) (ports.Claim, int) { return ports.Claim{PartitionID: idOf(t, 1)}, 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w, lease, claims := leaseWorld(t, c.unreachable...)
			want := make([][]string, 3)
			for _, cl := range claims {
				want[OfID(cl.PartitionID)] = append(want[OfID(cl.PartitionID)], cl.PartitionID)
			}
			if c.extra != nil {
				cl, n := c.extra(t)
				claims = append(claims, cl)
				if !slices.Contains(c.unreachable, n) {
					want[n] = append(want[n], cl.PartitionID)
				}
			}
			if err := w.router.Release(ctx, ports.QueueModeGroup, lease, false, claims); !errors.Is(err, c.err) {
				t.Fatalf("Release: %v, want %v", err, c.err)
			}
			for n, sp := range w.spies {
				if got := sp.named(); !slices.Equal(got, want[n]) {
					t.Errorf("shard %d released %v, want %v", n, got, want[n])
				}
			}
			// What the shards that answer held of the lease is gone.
			if n, _, _ := w.router.ExtendLease(ctx, lease, time.Minute); n != 0 {
				t.Fatalf("%d leases left after the release", n)
			}
		})
	}
}
