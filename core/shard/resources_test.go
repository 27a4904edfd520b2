package shard

import (
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// otherTenant has a queue named as one of tenant's, on another shard, that no read of
// tenant may count.
const otherTenant = "00000000-0000-4000-8000-0000000000b2"

// adminFleet holds the same queues twice: all in one memory store (what a single
// database answers) and spread over three memory stores, one per shard, each queue on
// the shard the test placed it on. Every change goes to both through the stores' own
// methods, on one stopped clock, so the two differ only in where rows are and in ids.
type adminFleet struct {
	t      *testing.T
	now    time.Time // the stores' clock; moved only while seeding
	whole  *memory.Store
	shards []*memory.Store
	placer *Placer
	pushed map[string]int // tenant/queue/partition -> messages pushed

	mu    sync.Mutex
	calls []map[string]int // by shard: admin calls by method name
	down  []error          // by shard: what its admin calls fail with (nil: they work)
}

// newAdminFleet returns a fleet of three shards seeded by seed.
func newAdminFleet(t *testing.T) *adminFleet {
	t.Helper()
	f := &adminFleet{t: t, now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		placer: NewPlacer(&memory.Placements{}, 3, nil), pushed: map[string]int{}}
	clock := func() time.Time { return f.now }
	f.whole = memory.NewStore()
	f.whole.Now = clock
	for n := range 3 {
		s := memory.NewStore()
		s.Now, s.Shard = clock, n
		s.AdminFault = func(op string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.calls[n][op]++
			return f.down[n]
		}
		f.shards = append(f.shards, s)
		f.calls = append(f.calls, map[string]int{})
		f.down = append(f.down, nil)
	}
	f.seed()
	return f
}

// seed arranges, over three shards (the shard after each queue):
//
//	billing.a (0), billing.b (2), crm.a (1), zulu.x (2): namespaces billing, crm, zulu
//	and tasks a (on shards 0 and 1), b, x; alpha (1), delta (2), eta (0) have neither;
//	otherTenant's alpha (0) is in namespace billing.
//	g1 consumed alpha, billing.b and crm.a (a live lease on crm.a), on shards 1 and 2;
//	g2 dead-lettered a message of eta and of billing.b, on shards 0 and 2;
//	g3 subscribed to billing.a in mode new, before its last two messages;
//	the queue-mode group holds a lease on delta.
func (f *adminFleet) seed() {
	for _, q := range []struct {
		tenant, name, namespace, task string
		shard                         int
	}{
		{tenant, "alpha", "", "", 1}, {tenant, "billing.a", "billing", "a", 0},
		{tenant, "billing.b", "billing", "b", 2}, {tenant, "crm.a", "crm", "a", 1},
		{tenant, "delta", "", "", 2}, {tenant, "eta", "", "", 0}, {tenant, "zulu.x", "zulu", "x", 2},
		{otherTenant, "alpha", "billing", "", 0},
	} {
		f.configure(q.tenant, q.name, q.namespace, q.task, q.shard)
	}
	f.push(tenant, "alpha", "p0", 3)
	f.now = f.now.Add(10 * time.Minute)
	f.push(tenant, "alpha", "p1", 2)
	f.push(tenant, "billing.a", "p0", 4)
	f.push(tenant, "billing.b", "p0", 2)
	f.push(tenant, "billing.b", "p1", 1)
	f.now = f.now.Add(time.Hour)
	f.push(tenant, "crm.a", "p0", 5)
	f.push(tenant, "delta", "p0", 2)
	f.push(tenant, "eta", "p0", 3)
	f.push(otherTenant, "alpha", "p0", 2)
	f.now = f.now.Add(5 * time.Minute)
	f.consume(tenant, "alpha", "p0", "g1", 2, ports.AckCompleted)
	f.consume(tenant, "billing.b", "p0", "g1", 1, ports.AckCompleted)
	f.consume(tenant, "crm.a", "p0", "g1", 2, "") // leased
	f.consume(tenant, "delta", "p0", ports.QueueModeGroup, 1, "")
	f.consume(tenant, "eta", "p0", "g2", 1, ports.AckDLQ)
	f.consume(tenant, "billing.b", "p1", "g2", 1, ports.AckDLQ)
	f.subscribeNew(tenant, "billing.a", "g3")
	f.now = f.now.Add(time.Minute)
	f.push(tenant, "billing.a", "p0", 2)
	f.push(tenant, "zulu.x", "p0", 1)
}

// both returns the whole store and the shard holding tenant/queue.
func (f *adminFleet) both(tenant, queue string) []*memory.Store {
	f.t.Helper()
	n, ok, err := f.placer.Find(context.Background(), tenant, queue)
	if err != nil || !ok {
		f.t.Fatalf("queue %s is not placed: %v", queue, err)
	}
	return []*memory.Store{f.whole, f.shards[n]}
}

func (f *adminFleet) configure(tenant, queue, namespace, task string, shard int) {
	f.t.Helper()
	if _, err := f.placer.PlaceExplicit(context.Background(), tenant, queue, namespace, shard); err != nil {
		f.t.Fatal(err)
	}
	cfg := queues.Defaults(queue)
	cfg.Namespace, cfg.Task = namespace, task
	for _, s := range f.both(tenant, queue) {
		s.SetQueueConfig(tenant, cfg)
	}
}

// txn is the transaction id of a message, by its offset in its partition.
func msgTxn(queue, partition string, off int64) string {
	return fmt.Sprintf("%s/%s#%d", queue, partition, off)
}

func txnHash(id string) [16]byte { return md5.Sum([]byte(id)) }

// push commits one segment of k messages to the partition.
func (f *adminFleet) push(tenant, queue, partition string, k int) {
	f.t.Helper()
	at := tenant + "/" + queue + "/" + partition
	seg := ports.Segment{Tenant: tenant, Queue: queue, Partition: partition, Count: k, Verified: -1}
	for i := range k {
		h := txnHash(msgTxn(queue, partition, int64(f.pushed[at]+i)))
		seg.Hashes = append(seg.Hashes, h[:]...)
	}
	seg.Blob = []byte(fmt.Sprint(at, f.pushed[at], k))
	f.pushed[at] += k
	for _, s := range f.both(tenant, queue) {
		res, err := s.PushSegments(context.Background(), []ports.Segment{seg})
		if err != nil || len(res) != 1 || res[0].Status != ports.SegmentQueued {
			f.t.Fatalf("push to %s: %+v, %v", at, res, err)
		}
	}
}

// consume pops batch messages of the partition as group under a 10-minute lease and
// acks each with status ("": none, the lease stays live).
func (f *adminFleet) consume(tenant, queue, partition, group string, batch int, status ports.AckStatus) {
	f.t.Helper()
	ctx := context.Background()
	req := ports.PopRequest{Tenant: tenant, Queue: queue, Partition: partition, Group: group, Batch: batch,
		Partitions: 1, LeaseSeconds: 600, LeaseID: uuid.NewString()}
	for _, s := range f.both(tenant, queue) {
		claims, _, err := s.Pop(ctx, req)
		if err != nil || len(claims) != 1 || claims[0].End-claims[0].Start+1 != int64(batch) {
			f.t.Fatalf("pop of %s/%s as %s: %+v, %v", queue, partition, group, claims, err)
		}
		if status == "" {
			continue
		}
		var items []ports.AckItem
		for off := claims[0].Start; off <= claims[0].End; off++ {
			id := msgTxn(queue, partition, off)
			items = append(items, ports.AckItem{PartitionID: claims[0].PartitionID, Group: group, Hash: txnHash(id),
				TransactionID: id, Status: status, LeaseID: req.LeaseID, Error: "failed " + id})
		}
		res, err := s.Ack(ctx, items)
		if err != nil || len(res) != len(items) || !res[0].OK {
			f.t.Fatalf("ack of %s/%s as %s: %+v, %v", queue, partition, group, res, err)
		}
	}
}

// subscribeNew makes group's first contact with the queue in mode new: it claims
// nothing.
func (f *adminFleet) subscribeNew(tenant, queue, group string) {
	f.t.Helper()
	req := ports.PopRequest{Tenant: tenant, Queue: queue, Group: group, Batch: 10, Partitions: 10,
		LeaseSeconds: 600, LeaseID: uuid.NewString(), SubscribeMode: ports.SubscribeNew}
	for _, s := range f.both(tenant, queue) {
		if claims, _, err := s.Pop(context.Background(), req); err != nil || len(claims) != 0 {
			f.t.Fatalf("first contact of %s with %s in mode new: %+v, %v", group, queue, claims, err)
		}
	}
}

func (f *adminFleet) resources() *Resources {
	stores := make([]ports.ResourceStore, len(f.shards))
	for n, s := range f.shards {
		stores[n] = s
	}
	return NewResources(stores, f.placer)
}

func (f *adminFleet) groups() *Groups {
	stores := make([]ports.GroupStore, len(f.shards))
	for n, s := range f.shards {
		stores[n] = s
	}
	return NewGroups(stores, f.placer)
}

// callsOf returns how many times each shard was called for op.
func (f *adminFleet) callsOf(op string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, len(f.calls))
	for n, c := range f.calls {
		out[n] = c[op]
	}
	return out
}

// fail makes shard n's admin calls fail with err.
func (f *adminFleet) fail(n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[n] = err
}

// sameAnswer fails unless the sharded store's answer equals the whole store's. Ids are
// blanked by the reads (a shard mints its own), and an empty slice equals a nil one.
func sameAnswer(t *testing.T, got, want any, gotErr, wantErr error) {
	t.Helper()
	if gotErr != nil || wantErr != nil {
		t.Fatalf("sharded: %v; one store: %v", gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sharded answer\n%+v\nwant (one store)\n%+v", got, want)
	}
}

// emptyNil is rows, nil when empty.
func emptyNil[T any](rows []T) []T {
	if len(rows) == 0 {
		return nil
	}
	return rows
}

// resourcePages are the pages every listing is read in.
var resourcePages = []ports.ResourcePage{
	{Limit: 3}, {Limit: 3, Offset: 3}, {Limit: 4, Offset: 2}, {Limit: 10, Offset: 6},
	{Limit: 1, Offset: 1}, {Limit: 0}, {Limit: 100}, {Limit: 5, Offset: 100},
}

// storeRead is one read of a store S, its answer with what the shards mint differently
// (ids) blanked.
type storeRead[S any] struct {
	name string
	read func(ctx context.Context, s S) (any, error)
}

type resourceRead = storeRead[ports.ResourceStore]

// answersAsOneStore runs every read on the store holding everything and on the sharded
// one, in parallel subtests: the answers must be the same.
func answersAsOneStore[S any](t *testing.T, reads []storeRead[S], whole, sharded S) {
	t.Helper()
	for _, r := range reads {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			want, wantErr := r.read(ctx, whole)
			got, gotErr := r.read(ctx, sharded)
			sameAnswer(t, got, want, gotErr, wantErr)
		})
	}
}

func resourceReads() []resourceRead {
	reads := append(listReads(), keyReads()...)
	reads = append(reads, queueReads()...)
	return append(reads,
		resourceRead{"overview", func(ctx context.Context, s ports.ResourceStore) (any, error) { return s.Overview(ctx, tenant) }},
		resourceRead{"overview of the other tenant", func(ctx context.Context, s ports.ResourceStore) (any, error) {
			return s.Overview(ctx, otherTenant)
		}},
		resourceRead{"storage totals", func(ctx context.Context, s ports.ResourceStore) (any, error) { return s.StorageTotals(ctx) }},
	)
}

// listReads are the queue listings and statuses, by filter, every page.
func listReads() []resourceRead {
	var reads []resourceRead
	for _, fl := range []ports.ResourceFilter{{}, {Namespace: "billing"}, {Task: "a"}, {Queue: "delta"}, {Queue: "nope"}} {
		for _, p := range resourcePages {
			reads = append(reads, resourceRead{fmt.Sprintf("list queues %+v %+v", fl, p), func(ctx context.Context, s ports.ResourceStore) (any, error) {
				rows, total, err := s.ListQueues(ctx, tenant, fl, p)
				for i := range rows {
					rows[i].ID = ""
				}
				return []any{emptyNil(rows), total}, err
			}})
		}
		reads = append(reads, resourceRead{fmt.Sprintf("status %+v", fl), func(ctx context.Context, s ports.ResourceStore) (any, error) {
			return s.Status(ctx, tenant, fl)
		}})
	}
	return reads
}

// keyReads are the namespace and task listings, every page.
func keyReads() []resourceRead {
	var reads []resourceRead
	for key, name := range map[ports.ResourceKey]string{ports.ByNamespace: "namespace", ports.ByTask: "task"} {
		for _, p := range resourcePages {
			reads = append(reads, resourceRead{fmt.Sprintf("counts by %s %+v", name, p), func(ctx context.Context, s ports.ResourceStore) (any, error) {
				rows, err := s.CountsBy(ctx, tenant, key, p)
				return emptyNil(rows), err
			}})
		}
	}
	return reads
}

// queueReads are the detail and depth of queues of each shard and of none.
func queueReads() []resourceRead {
	var reads []resourceRead
	for _, q := range []string{"alpha", "billing.a", "crm.a", "delta", "nope"} {
		for _, p := range []ports.ResourcePage{{Limit: 1}, {Limit: 5, Offset: 1}} {
			reads = append(reads, resourceRead{fmt.Sprintf("detail %s %+v", q, p), func(ctx context.Context, s ports.ResourceStore) (any, error) {
				d, found, err := s.QueueDetail(ctx, tenant, q, p)
				d.Config.ID = ""
				for i := range d.Page {
					d.Page[i].ID = ""
				}
				d.Page = emptyNil(d.Page)
				return []any{d, found}, err
			}})
			for _, g := range []string{"", "g1"} {
				reads = append(reads, resourceRead{fmt.Sprintf("depth %s %q %+v", q, g, p), func(ctx context.Context, s ports.ResourceStore) (any, error) {
					d, found, err := s.QueueDepth(ctx, tenant, q, g, p)
					d.Page = emptyNil(d.Page)
					return []any{d, found}, err
				}})
			}
		}
	}
	return reads
}

// The key property: over three shards, every read answers what one store holding the
// same queues answers: the same rows in the same order, the same totals, for every page.
func TestResourcesAnswerAsOneStore(t *testing.T) {
	t.Parallel()
	f := newAdminFleet(t)
	answersAsOneStore[ports.ResourceStore](t, resourceReads(), f.whole, f.resources())
}

// The seed spreads what the distinct counts count over several shards: summing the
// shards' own counts would be wrong, so the test above checks the merge of names.
func TestResourcesSeedSplitsNames(t *testing.T) {
	t.Parallel()
	f := newAdminFleet(t)
	var namespaces, tasks, groups int64
	for _, s := range f.shards {
		o, err := s.Overview(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		namespaces, tasks, groups = namespaces+o.Namespaces, tasks+o.Tasks, groups+o.ConsumerGroups
	}
	o, err := f.whole.Overview(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	if namespaces == o.Namespaces || tasks == o.Tasks || groups == o.ConsumerGroups {
		t.Fatalf("shards' sums %d namespaces, %d tasks, %d groups; one store %+v: a name should be on two shards",
			namespaces, tasks, groups, o)
	}
}

// A read naming one queue runs on that queue's shard alone; a queue the catalogue does
// not know is asked of shard 0.
func TestResourcesRouteOneQueue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, op string
		shard    int
		call     func(ctx context.Context, r *Resources) error
	}{
		{"detail", "QueueDetail", 2, func(ctx context.Context, r *Resources) error {
			_, _, err := r.QueueDetail(ctx, tenant, "delta", ports.ResourcePage{Limit: 10})
			return err
		}},
		{"depth", "QueueDepth", 1, func(ctx context.Context, r *Resources) error {
			_, _, err := r.QueueDepth(ctx, tenant, "crm.a", "g1", ports.ResourcePage{Limit: 10})
			return err
		}},
		{"list by name", "ListQueues", 2, func(ctx context.Context, r *Resources) error {
			_, _, err := r.ListQueues(ctx, tenant, ports.ResourceFilter{Queue: "zulu.x"}, ports.ResourcePage{Limit: 10})
			return err
		}},
		{"status by name", "Status", 1, func(ctx context.Context, r *Resources) error {
			_, err := r.Status(ctx, tenant, ports.ResourceFilter{Queue: "alpha"})
			return err
		}},
		{"unknown queue", "QueueDetail", 0, func(ctx context.Context, r *Resources) error {
			_, found, err := r.QueueDetail(ctx, tenant, "nope", ports.ResourcePage{Limit: 10})
			if found {
				return errors.New("found a queue that does not exist")
			}
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newAdminFleet(t)
			if err := c.call(context.Background(), f.resources()); err != nil {
				t.Fatal(err)
			}
			want := make([]int, 3)
			want[c.shard] = 1
			if got := f.callsOf(c.op); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s calls by shard %v, want %v", c.op, got, want)
			}
		})
	}
}

// A shard that fails fails every read that needs it with *UnreachableError naming it;
// a read of a queue on another shard still answers.
func TestResourcesUnreachableShard(t *testing.T) {
	t.Parallel()
	down := errors.New("shard 1 is down")
	f := newAdminFleet(t)
	f.fail(1, down)
	r := f.resources()
	page := ports.ResourcePage{Limit: 10}
	cases := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"list", func(ctx context.Context) error {
			_, _, err := r.ListQueues(ctx, tenant, ports.ResourceFilter{}, page)
			return err
		}},
		{"list by name", func(ctx context.Context) error {
			_, _, err := r.ListQueues(ctx, tenant, ports.ResourceFilter{Queue: "alpha"}, page)
			return err
		}},
		{"detail", func(ctx context.Context) error { _, _, err := r.QueueDetail(ctx, tenant, "crm.a", page); return err }},
		{"depth", func(ctx context.Context) error { _, _, err := r.QueueDepth(ctx, tenant, "alpha", "", page); return err }},
		{"counts by", func(ctx context.Context) error { _, err := r.CountsBy(ctx, tenant, ports.ByTask, page); return err }},
		{"overview", func(ctx context.Context) error { _, err := r.Overview(ctx, tenant); return err }},
		{"status", func(ctx context.Context) error { _, err := r.Status(ctx, tenant, ports.ResourceFilter{}); return err }},
		{"storage", func(ctx context.Context) error { _, err := r.StorageTotals(ctx); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wantUnreachable(t, c.call(context.Background()), 1, down)
		})
	}
	t.Run("another shard's queue", func(t *testing.T) {
		t.Parallel()
		if _, found, err := r.QueueDetail(context.Background(), tenant, "delta", page); err != nil || !found {
			t.Fatalf("detail of a queue on shard 2: found %v, %v", found, err)
		}
	})
}

// wantUnreachable fails unless err is an *UnreachableError naming shard and wrapping
// cause.
func wantUnreachable(t *testing.T, err error, shard int, cause error) {
	t.Helper()
	var u *UnreachableError
	if !errors.As(err, &u) || u.Shard != shard || !errors.Is(err, cause) {
		t.Fatalf("error %v, want *UnreachableError of shard %d wrapping %v", err, shard, cause)
	}
}
