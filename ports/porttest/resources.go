package porttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// AdminWorld is what the suites of the admin API's ports (ResourceStore, GroupStore,
// MessageStore, TraceStore) arrange their state with: the hot path's ports of the same
// implementation, over the same state as the port under test, so that queues,
// partitions, segments, cursors, leases, subscriptions and dead letters are made the way
// producers and consumers make them; and hooks for what no port expresses.
type AdminWorld struct {
	Segments ports.SegmentStore
	Consume  ports.ConsumeStore
	// Configure creates the queue cfg.Name when needed and sets its namespace, task and
	// every option to cfg's, marking it configured (a replace-mode configure).
	Configure func(t *testing.T, tenant string, cfg ports.QueueConfig)
	// EmptyPartition creates tenant/queue/partition (and the queue) with nothing stored,
	// and returns its id.
	EmptyPartition func(t *testing.T, tenant, queue, partition string) (partitionID string)
	// Age makes everything stored in the partition older by d: its segments, their hash
	// sidecar entries and its last write. The partition's own creation time stays.
	Age func(t *testing.T, partitionID string, d time.Duration)
	// Trim advances the partition's retention watermarks as retention does: offsets
	// below logStart are no longer retained (log_start), transaction-id hashes below
	// txnsStart no longer resolvable (txns_start). The segments stay stored: readers
	// must honour the watermarks.
	Trim func(t *testing.T, partitionID string, logStart, txnsStart int64)
	// ExpireLease moves the expiry of (partition, group)'s lease into the past; it fails
	// the test when there is no lease.
	ExpireLease func(t *testing.T, partitionID, group string)
	// DeleteQueue deletes the tenant's queue with everything in it, as
	// ports.QueueAdmin's DeleteQueue does; it fails the test when there is no such queue.
	DeleteQueue func(t *testing.T, tenant, queue string)
}

// ResourceFixture is a fresh, empty ports.ResourceStore and its world.
type ResourceFixture struct {
	Store ports.ResourceStore
	AdminWorld
}

// adminKit runs a case of the admin suites: the world, and the commit times of what the
// case pushed (partition id/base offset), kept in step with Age.
type adminKit struct {
	t  *testing.T
	w  AdminWorld
	mu *sync.Mutex
	at map[string]time.Time
}

func newAdminKit(t *testing.T, w AdminWorld) adminKit {
	return adminKit{t: t, w: w, mu: new(sync.Mutex), at: map[string]time.Time{}}
}

// segOf is a segment of tenant's queue/partition whose frames carry txns; its blob is
// opaque and differs from any other segment's.
func segOf(tenant, queue, partition string, txns ...string) ports.Segment {
	var hs []byte
	for _, t := range txns {
		hs = append(hs, hash(t)...)
	}
	return ports.Segment{Tenant: tenant, Queue: queue, Partition: partition, Count: len(txns), Hashes: hs,
		Verified: -1, Blob: []byte(fmt.Sprint("blob:", tenant[len(tenant)-1:], queue, "/", partition, txns))}
}

// commit pushes segs in one bundle, fails unless every one is queued, and records their
// commit times.
func (k adminKit) commit(segs ...ports.Segment) []ports.SegmentResult {
	k.t.Helper()
	res, err := k.w.Segments.PushSegments(context.Background(), segs)
	if err != nil || len(res) != len(segs) {
		k.t.Fatalf("PushSegments: %d results for %d segments, %v", len(res), len(segs), err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, r := range res {
		if r.Status != ports.SegmentQueued || r.CreatedAt.IsZero() {
			k.t.Fatalf("push of %s/%s: %+v, want queued", segs[i].Queue, segs[i].Partition, r)
		}
		k.at[fmt.Sprint(r.PartitionID, "/", r.BaseOffset)] = r.CreatedAt
	}
	return res
}

// push commits one segment of txns to the default tenant's queue/partition.
func (k adminKit) push(queue, partition string, txns ...string) ports.SegmentResult {
	k.t.Helper()
	return k.commit(segOf(tenant, queue, partition, txns...))[0]
}

// pushEach commits one single-message segment per txn, in order, and returns the
// partition id.
func (k adminKit) pushEach(queue, partition string, txns ...string) string {
	k.t.Helper()
	var pid string
	for _, x := range txns {
		pid = k.push(queue, partition, x).PartitionID
	}
	return pid
}

// committed is the commit time of the segment of pid at base, as pushed and aged.
func (k adminKit) committed(pid string, base int64) time.Time {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	at, ok := k.at[fmt.Sprint(pid, "/", base)]
	if !ok {
		k.t.Fatalf("no segment of %s at %d was pushed", pid, base)
	}
	return at
}

// age ages the partition and the commit times recorded for it.
func (k adminKit) age(pid string, d time.Duration) {
	k.t.Helper()
	k.w.Age(k.t, pid, d)
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, at := range k.at {
		if strings.HasPrefix(key, pid+"/") {
			k.at[key] = at.Add(-d)
		}
	}
}

// pop pops r and fails on an error.
func (k adminKit) pop(r ports.PopRequest) []ports.Claim {
	k.t.Helper()
	claims, _, err := k.w.Consume.Pop(context.Background(), r)
	if err != nil {
		k.t.Fatalf("Pop(%+v): %v", r, err)
	}
	return claims
}

// popSpan pops r and fails unless it claims exactly start..end.
func (k adminKit) popSpan(r ports.PopRequest, start, end int64) ports.Claim {
	k.t.Helper()
	claims := k.pop(r)
	if len(claims) != 1 || claims[0].Start != start || claims[0].End != end {
		k.t.Fatalf("pop of %s/%s as %s claimed %s, want %d..%d", r.Queue, r.Partition, r.Group, spans(claims), start, end)
	}
	return claims[0]
}

// take pops batch messages of queue/partition as group (pinned, a 10-minute lease, or
// none with autoAck) and fails unless the span is start..end. It returns the request
// (its lease) and the claim.
func (k adminKit) take(queue, partition, g string, start, end int64, auto bool) (ports.PopRequest, ports.Claim) {
	k.t.Helper()
	r := req(queue, pinned(partition), group(g), batch(int(end-start+1)), leaseSecs(600))
	if auto {
		autoAck()(&r)
	}
	return r, k.popSpan(r, start, end)
}

// ackOne acks txn of the claim under r's lease and returns the result.
func (k adminKit) ackOne(c ports.Claim, r ports.PopRequest, txn string, st ports.AckStatus) ports.AckResult {
	k.t.Helper()
	it := of(c, r, txn, st)
	it.Error = "failed " + txn
	res, err := k.w.Consume.Ack(context.Background(), []ports.AckItem{it})
	if err != nil || len(res) != 1 {
		k.t.Fatalf("Ack: %v, %v", res, err)
	}
	return res[0]
}

// dlq pops txn (offset off) of queue/partition as group and dead-letters it.
func (k adminKit) dlq(queue, partition, g, txn string, off int64) {
	k.t.Helper()
	r, c := k.take(queue, partition, g, off, off, false)
	if res := k.ackOne(c, r, txn, ports.AckDLQ); !res.OK || !res.DLQ {
		k.t.Fatalf("dead-lettering %s as %s: %+v", txn, g, res)
	}
}

// sameTime reports whether two optional instants are equal.
func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

func fmtTime(a *time.Time) string {
	if a == nil {
		return "<nil>"
	}
	return a.String()
}

// ResourceStore runs the conformance suite of ports.ResourceStore; newFixture must return
// an empty store of its own on every call.
func ResourceStore(t *testing.T, newFixture func(t *testing.T) ResourceFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f ResourceFixture)
	}{
		{"counts by watermark arithmetic: every rule, per partition and summed", testResourceCounts},
		{"leases: live ones are processing, expired and released ones are not", testResourceLeases},
		{"the commit times of the first and last retained segments", testResourceRetainedSpan},
		{"listing: filters, name order, pages and the matching count", testResourceListing},
		{"namespaces and tasks: non-empty keys in name order, paged", testResourceKeys},
		{"overview sums the tenant and counts its named groups once", testResourceOverview},
		{"status: filters by queue, namespace and task", testResourceStatusFilters},
		{"partition pages in name order, totals over all of them", testResourcePartitionPages},
		{"a configured queue: its row, and zeros without partitions", testResourceConfigured},
		{"unknown queues and other tenants' queues are not found", testResourceNotFound},
		{"storage totals count every tenant's retained messages", testResourceStorage},
		{"a deleted queue is gone from every read", testResourceDeletedQueue},
		{"a cancelled context fails", testResourceCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// resScenario builds queue q, whose partitions exercise every rule of the counts (a
// 10-minute lease unless said otherwise):
//
//	a: a0..a4, one segment each. g1 autoAcked 0..1; g2 autoAcked 0..3 and leases 4;
//	   queue mode autoAcked 0..2 and its lease on 3..4 expired. Worst = g1's 1 (named
//	   groups win): pending 3, processing 1 (g2's live span), consumed 2+4+3.
//	b: b0..b2. Queue mode alone: autoAcked 0, leases 1..2: pending 2, processing 2.
//	c: c0, c1, no cursor: everything pending.
//	d: [d0] [d1 d2] [d3]. g2 and h dead-letter d0, g1 autoAcks it; retention then
//	   removes 0..1 (log_start 2): total 2, pending 2, consumed 0, 2 dead letters.
//	e: nothing stored.
//	f: f0, f1, all removed by retention (log_start 2): nothing retained.
func resScenario(k adminKit) map[string]string {
	k.t.Helper()
	pids := map[string]string{
		"a": k.pushEach("q", "a", "a0", "a1", "a2", "a3", "a4"),
		"b": k.pushEach("q", "b", "b0", "b1", "b2"),
		"c": k.pushEach("q", "c", "c0", "c1"),
	}
	k.push("q", "d", "d0")
	k.push("q", "d", "d1", "d2")
	pids["d"] = k.push("q", "d", "d3").PartitionID
	pids["e"] = k.w.EmptyPartition(k.t, tenant, "q", "e")
	pids["f"] = k.pushEach("q", "f", "f0", "f1")

	k.take("q", "a", "g1", 0, 1, true)
	k.take("q", "a", "g2", 0, 3, true)
	k.take("q", "a", "g2", 4, 4, false)
	k.take("q", "a", ports.QueueModeGroup, 0, 2, true)
	k.take("q", "a", ports.QueueModeGroup, 3, 4, false)
	k.w.ExpireLease(k.t, pids["a"], ports.QueueModeGroup)
	k.take("q", "b", ports.QueueModeGroup, 0, 0, true)
	k.take("q", "b", ports.QueueModeGroup, 1, 2, false)
	k.dlq("q", "d", "g2", "d0", 0)
	k.dlq("q", "d", "h", "d0", 0)
	k.take("q", "d", "g1", 0, 0, true)
	k.w.Trim(k.t, pids["d"], 2, 2)
	k.w.Trim(k.t, pids["f"], 2, 2)
	return pids
}

func resPage(limit, offset int) ports.ResourcePage {
	return ports.ResourcePage{Limit: limit, Offset: offset}
}

func testResourceCounts(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pids := resScenario(k)
	ctx := context.Background()
	totals := ports.WatermarkCounts{Total: 12, Pending: 9, Processing: 3, DeadLetter: 2}

	t.Run("detail", func(t *testing.T) {
		d, found, err := f.Store.QueueDetail(ctx, tenant, "q", resPage(10, 0))
		if err != nil || !found {
			t.Fatalf("QueueDetail = %v, %v", found, err)
		}
		if d.Config.Name != "q" || d.Config.ID == "" || d.CreatedAt.IsZero() || d.Partitions != 6 || d.Totals != totals {
			t.Fatalf("queue %+v (created %v), %d partitions, totals %+v; want 6 partitions, totals %+v",
				d.Config, d.CreatedAt, d.Partitions, d.Totals, totals)
		}
		want := []struct {
			name     string
			counts   ports.WatermarkCounts
			consumed int64
			active   bool
		}{
			{"a", ports.WatermarkCounts{Total: 5, Pending: 3, Processing: 1}, 9, true},
			{"b", ports.WatermarkCounts{Total: 3, Pending: 2, Processing: 2}, 1, true},
			{"c", ports.WatermarkCounts{Total: 2, Pending: 2}, 0, false},
			{"d", ports.WatermarkCounts{Total: 2, Pending: 2, DeadLetter: 2}, 0, true},
			{"e", ports.WatermarkCounts{}, 0, false},
			{"f", ports.WatermarkCounts{}, 0, false},
		}
		if len(d.Page) != len(want) {
			t.Fatalf("%d partitions on the page, want %d", len(d.Page), len(want))
		}
		for i, p := range d.Page {
			w := want[i]
			if p.Name != w.name || p.ID != pids[w.name] || p.CreatedAt.IsZero() || p.Counts != w.counts ||
				p.Consumed != w.consumed || (p.LastActivity != nil) != w.active {
				t.Errorf("partition %d: %s (%s) counts %+v consumed %d last activity %v; want %s (%s) %+v consumed %d, activity %v",
					i, p.Name, p.ID, p.Counts, p.Consumed, fmtTime(p.LastActivity), w.name, pids[w.name], w.counts, w.consumed, w.active)
			}
		}
	})
	t.Run("list", func(t *testing.T) {
		qs, n, err := f.Store.ListQueues(ctx, tenant, ports.ResourceFilter{}, resPage(10, 0))
		if err != nil || n != 1 || len(qs) != 1 {
			t.Fatalf("ListQueues = %+v, %d, %v", qs, n, err)
		}
		if q := qs[0]; q.Name != "q" || q.ID == "" || q.Partitions != 6 || q.Counts != totals {
			t.Fatalf("queue %+v, want 6 partitions and %+v", q, totals)
		}
	})
	depths := []struct {
		name, group    string
		totals         ports.WatermarkCounts
		pending, ready int64
		page           [6][2]int64 // pending, processing of a..f
	}{
		{"the worst cursor of every group", "", ports.WatermarkCounts{Pending: 9, Processing: 3}, 4, 3,
			[6][2]int64{{3, 1}, {2, 2}, {2, 0}, {2, 0}, {0, 0}, {0, 0}}},
		// g2 owes what it never popped whole (what is retained of it).
		{"one group's own cursors", "g2", ports.WatermarkCounts{Pending: 8, Processing: 1}, 4, 3,
			[6][2]int64{{1, 1}, {3, 0}, {2, 0}, {2, 0}, {0, 0}, {0, 0}}},
		// Queue mode's expired lease on a is no processing.
		{"queue mode", ports.QueueModeGroup, ports.WatermarkCounts{Pending: 8, Processing: 2}, 4, 3,
			[6][2]int64{{2, 0}, {2, 2}, {2, 0}, {2, 0}, {0, 0}, {0, 0}}},
		{"an unknown group owes everything retained", "nobody", ports.WatermarkCounts{Pending: 12}, 4, 4,
			[6][2]int64{{5, 0}, {3, 0}, {2, 0}, {2, 0}, {0, 0}, {0, 0}}},
	}
	for _, tt := range depths {
		t.Run("depth: "+tt.name, func(t *testing.T) {
			d, found, err := f.Store.QueueDepth(ctx, tenant, "q", tt.group, resPage(10, 0))
			if err != nil || !found {
				t.Fatalf("QueueDepth = %v, %v", found, err)
			}
			if d.Totals != tt.totals || d.PartitionsPending != tt.pending || d.PartitionsReady != tt.ready {
				t.Errorf("totals %+v, %d pending, %d ready; want %+v, %d, %d", d.Totals, d.PartitionsPending,
					d.PartitionsReady, tt.totals, tt.pending, tt.ready)
			}
			if len(d.Page) != 6 {
				t.Fatalf("%d partitions, want 6", len(d.Page))
			}
			for i, p := range d.Page {
				want := ports.PartitionDepth{Name: string(rune('a' + i)),
					Counts: ports.WatermarkCounts{Pending: tt.page[i][0], Processing: tt.page[i][1]}}
				if p != want {
					t.Errorf("partition %d: %+v, want %+v", i, p, want)
				}
			}
		})
	}
	t.Run("status", func(t *testing.T) {
		st, err := f.Store.Status(ctx, tenant, ports.ResourceFilter{})
		if err != nil {
			t.Fatal(err)
		}
		want := ports.ResourceStatus{Queues: 1, Partitions: 6, Counts: totals,
			Leases:      ports.LeaseSummary{Active: 2, Partitions: 2, Messages: 3},
			DeadLetters: ports.DeadLetterSummary{Current: 2, Partitions: 1}}
		if st != want {
			t.Fatalf("status\n got %+v\nwant %+v", st, want)
		}
	})
	t.Run("overview", func(t *testing.T) {
		o, err := f.Store.Overview(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		want := ports.ResourceOverview{Queues: 1, Partitions: 6, ConsumerGroups: 3, Counts: totals}
		if o != want {
			t.Fatalf("overview\n got %+v\nwant %+v", o, want)
		}
	})
}

func testResourceLeases(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	ctx := context.Background()
	k.pushEach("q", "p", "m0", "m1", "m2")
	check := func(step string, counts ports.WatermarkCounts, leases ports.LeaseSummary) {
		t.Helper()
		st, err := f.Store.Status(ctx, tenant, ports.ResourceFilter{Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		if st.Counts != counts || st.Leases != leases {
			t.Fatalf("%s: counts %+v leases %+v, want %+v and %+v", step, st.Counts, st.Leases, counts, leases)
		}
	}
	check("before any pop", ports.WatermarkCounts{Total: 3, Pending: 3}, ports.LeaseSummary{})
	r, c := k.take("q", "p", "g", 0, 2, false)
	check("leased", ports.WatermarkCounts{Total: 3, Pending: 3, Processing: 3}, ports.LeaseSummary{Active: 1, Partitions: 1, Messages: 3})
	if res := k.ackOne(c, r, "m0", ports.AckCompleted); !res.OK || res.LeaseReleased {
		t.Fatalf("ack of the first message: %+v", res)
	}
	check("one acked, the lease goes on", ports.WatermarkCounts{Total: 3, Pending: 2, Processing: 2},
		ports.LeaseSummary{Active: 1, Partitions: 1, Messages: 2})
	if res := k.ackOne(c, r, "m2", ports.AckCompleted); !res.OK || !res.LeaseReleased {
		t.Fatalf("ack of the last message: %+v", res)
	}
	check("released", ports.WatermarkCounts{Total: 3}, ports.LeaseSummary{})

	k.push("q", "p", "m3")
	k.take("q", "p", "g", 3, 3, false)
	k.w.ExpireLease(t, c.PartitionID, "g")
	check("expired", ports.WatermarkCounts{Total: 4, Pending: 1}, ports.LeaseSummary{})
}

func testResourceRetainedSpan(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	pids := resScenario(k)
	d, _, err := f.Store.QueueDetail(context.Background(), tenant, "q", resPage(10, 0))
	if err != nil {
		t.Fatal(err)
	}
	at := func(p string, base int64) *time.Time { v := k.committed(pids[p], base); return &v }
	want := map[string][2]*time.Time{
		"a": {at("a", 0), at("a", 4)},
		"b": {at("b", 0), at("b", 2)},
		"c": {at("c", 0), at("c", 1)},
		// log_start 2 falls inside the segment of d1 and d2: it is the first retained one.
		"d": {at("d", 1), at("d", 3)},
		"e": {nil, nil}, // nothing stored
		"f": {nil, nil}, // nothing retained
	}
	if len(d.Page) != len(want) {
		t.Fatalf("%d partitions, want %d", len(d.Page), len(want))
	}
	for _, p := range d.Page {
		w := want[p.Name]
		if !sameTime(p.Oldest, w[0]) || !sameTime(p.Newest, w[1]) {
			t.Errorf("%s: oldest %s newest %s, want %s %s", p.Name, fmtTime(p.Oldest), fmtTime(p.Newest), fmtTime(w[0]), fmtTime(w[1]))
		}
	}
}

// resListingWorld is queues a.x (partitions p: 1 message, p2: 2), a.y, b.x and plain (1
// each); namespace and task come from the dotted names. Another tenant has a.z.
func resListingWorld(k adminKit) {
	k.t.Helper()
	for _, q := range []string{"a.x", "a.y", "b.x", "plain"} {
		k.push(q, "p", "m0")
	}
	k.pushEach("a.x", "p2", "m0", "m1")
	k.commit(segOf(otherTenant, "a.z", "p", "m0"))
}

func queueNames(qs []ports.QueueResource) []string {
	var out []string
	for _, q := range qs {
		out = append(out, q.Name)
	}
	return out
}

func testResourceListing(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	resListingWorld(k)
	ctx := context.Background()
	tests := []struct {
		name     string
		tenant   string
		f        ports.ResourceFilter
		p        ports.ResourcePage
		want     []string
		matching int64
	}{
		{"all", tenant, ports.ResourceFilter{}, resPage(10, 0), []string{"a.x", "a.y", "b.x", "plain"}, 4},
		{"namespace", tenant, ports.ResourceFilter{Namespace: "a"}, resPage(10, 0), []string{"a.x", "a.y"}, 2},
		{"task", tenant, ports.ResourceFilter{Task: "x"}, resPage(10, 0), []string{"a.x", "b.x"}, 2},
		{"namespace and task", tenant, ports.ResourceFilter{Namespace: "a", Task: "y"}, resPage(10, 0), []string{"a.y"}, 1},
		{"queue", tenant, ports.ResourceFilter{Queue: "plain"}, resPage(10, 0), []string{"plain"}, 1},
		{"queue and a namespace it is not in", tenant, ports.ResourceFilter{Queue: "plain", Namespace: "a"}, resPage(10, 0), nil, 0},
		{"first page", tenant, ports.ResourceFilter{}, resPage(2, 0), []string{"a.x", "a.y"}, 4},
		{"second page", tenant, ports.ResourceFilter{}, resPage(2, 2), []string{"b.x", "plain"}, 4},
		{"a page across the end", tenant, ports.ResourceFilter{}, resPage(3, 3), []string{"plain"}, 4},
		{"past the end: the count still comes", tenant, ports.ResourceFilter{}, resPage(2, 9), nil, 4},
		{"limit 0: the count alone", tenant, ports.ResourceFilter{}, resPage(0, 0), nil, 4},
		{"no match", tenant, ports.ResourceFilter{Namespace: "zzz"}, resPage(10, 0), nil, 0},
		{"the other tenant's", otherTenant, ports.ResourceFilter{}, resPage(10, 0), []string{"a.z"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs, n, err := f.Store.ListQueues(ctx, tt.tenant, tt.f, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if got := queueNames(qs); !slices.Equal(got, tt.want) || n != tt.matching {
				t.Fatalf("queues %v (%d matching), want %v (%d)", got, n, tt.want, tt.matching)
			}
		})
	}
	t.Run("fields", func(t *testing.T) {
		qs, _, err := f.Store.ListQueues(ctx, tenant, ports.ResourceFilter{Queue: "a.x"}, resPage(1, 0))
		if err != nil || len(qs) != 1 {
			t.Fatalf("ListQueues = %+v, %v", qs, err)
		}
		q := qs[0]
		if q.ID == "" || q.Namespace != "a" || q.Task != "x" || q.CreatedAt.IsZero() || q.Partitions != 2 ||
			q.Counts != (ports.WatermarkCounts{Total: 3, Pending: 3}) {
			t.Fatalf("queue %+v", q)
		}
		// The listing's id is the detail's.
		d, _, err := f.Store.QueueDetail(ctx, tenant, "a.x", resPage(0, 0))
		if err != nil || d.Config.ID != q.ID || !d.CreatedAt.Equal(q.CreatedAt) {
			t.Fatalf("detail of a.x: %+v created %v (%v), want id %s created %v", d.Config, d.CreatedAt, err, q.ID, q.CreatedAt)
		}
	})
}

func testResourceKeys(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	resListingWorld(k)
	ctx := context.Background()
	a := ports.KeyCounts{Key: "a", Queues: 2, Partitions: 3, Counts: ports.WatermarkCounts{Total: 4, Pending: 4}}
	b := ports.KeyCounts{Key: "b", Queues: 1, Partitions: 1, Counts: ports.WatermarkCounts{Total: 1, Pending: 1}}
	x := ports.KeyCounts{Key: "x", Queues: 2, Partitions: 3, Counts: ports.WatermarkCounts{Total: 4, Pending: 4}}
	y := ports.KeyCounts{Key: "y", Queues: 1, Partitions: 1, Counts: ports.WatermarkCounts{Total: 1, Pending: 1}}
	tests := []struct {
		name   string
		tenant string
		key    ports.ResourceKey
		p      ports.ResourcePage
		want   []ports.KeyCounts
	}{
		{"namespaces", tenant, ports.ByNamespace, resPage(10, 0), []ports.KeyCounts{a, b}},
		{"tasks", tenant, ports.ByTask, resPage(10, 0), []ports.KeyCounts{x, y}},
		{"second page of tasks", tenant, ports.ByTask, resPage(1, 1), []ports.KeyCounts{y}},
		{"past the end", tenant, ports.ByNamespace, resPage(10, 2), nil},
		{"limit 0", tenant, ports.ByNamespace, resPage(0, 0), nil},
		{"the other tenant's", otherTenant, ports.ByTask, resPage(10, 0),
			[]ports.KeyCounts{{Key: "z", Queues: 1, Partitions: 1, Counts: ports.WatermarkCounts{Total: 1, Pending: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.Store.CountsBy(ctx, tt.tenant, tt.key, tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) || (len(got) > 0 && !slices.Equal(got, tt.want)) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func testResourceOverview(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	resListingWorld(k)
	ctx := context.Background()
	// g1 reads two queues and counts once; queue mode is no named group; a group of
	// another tenant is not this one's.
	k.take("a.x", "p", "g1", 0, 0, true)
	k.take("a.y", "p", "g1", 0, 0, true)
	k.take("a.x", "p", "g2", 0, 0, false)
	k.take("b.x", "p", ports.QueueModeGroup, 0, 0, true)
	k.popSpan(ports.PopRequest{Tenant: otherTenant, Queue: "a.z", Partition: "p", Group: "g9", Batch: 1, Partitions: 1,
		AutoAck: true, SubscribeMode: ports.SubscribeAll}, 0, 0)
	o, err := f.Store.Overview(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	// Pending: a.x/p is g2's (leased), a.y/p and b.x/p consumed, a.x/p2 and plain whole.
	want := ports.ResourceOverview{Queues: 4, Partitions: 5, Namespaces: 2, Tasks: 2, ConsumerGroups: 2,
		Counts: ports.WatermarkCounts{Total: 6, Pending: 4, Processing: 1}}
	if o != want {
		t.Fatalf("overview\n got %+v\nwant %+v", o, want)
	}
	o, err = f.Store.Overview(ctx, otherTenant)
	want = ports.ResourceOverview{Queues: 1, Partitions: 1, Namespaces: 1, Tasks: 1, ConsumerGroups: 1,
		Counts: ports.WatermarkCounts{Total: 1}}
	if err != nil || o != want {
		t.Fatalf("the other tenant's overview\n got %+v (%v)\nwant %+v", o, err, want)
	}
	o, err = f.Store.Overview(ctx, "00000000-0000-0000-0000-000000000003")
	if err != nil || o != (ports.ResourceOverview{}) {
		t.Fatalf("an empty tenant's overview %+v, %v", o, err)
	}
}

func testResourceStatusFilters(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	resListingWorld(k)
	ctx := context.Background()
	tests := []struct {
		name                             string
		tenant                           string
		f                                ports.ResourceFilter
		queues, partitions, total, dlqed int64
	}{
		{"everything", tenant, ports.ResourceFilter{}, 4, 5, 6, 0},
		{"namespace", tenant, ports.ResourceFilter{Namespace: "a"}, 2, 3, 4, 0},
		{"task", tenant, ports.ResourceFilter{Task: "x"}, 2, 3, 4, 0},
		{"queue", tenant, ports.ResourceFilter{Queue: "plain"}, 1, 1, 1, 0},
		{"no match", tenant, ports.ResourceFilter{Queue: "nope"}, 0, 0, 0, 0},
		{"the other tenant's", otherTenant, ports.ResourceFilter{Namespace: "a"}, 1, 1, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := f.Store.Status(ctx, tt.tenant, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			want := ports.ResourceStatus{Queues: tt.queues, Partitions: tt.partitions,
				Counts: ports.WatermarkCounts{Total: tt.total, Pending: tt.total}}
			if st != want {
				t.Fatalf("status\n got %+v\nwant %+v", st, want)
			}
		})
	}
}

func testResourcePartitionPages(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	for _, p := range []string{"p3", "p1", "p4", "p2"} {
		k.push("pages", p, "m")
	}
	ctx := context.Background()
	tests := []struct {
		name string
		p    ports.ResourcePage
		want []string
	}{
		{"all", resPage(10, 0), []string{"p1", "p2", "p3", "p4"}},
		{"middle", resPage(2, 1), []string{"p2", "p3"}},
		{"across the end", resPage(2, 3), []string{"p4"}},
		{"past the end", resPage(2, 4), nil},
		{"limit 0", resPage(0, 0), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, found, err := f.Store.QueueDetail(ctx, tenant, "pages", tt.p)
			if err != nil || !found {
				t.Fatalf("QueueDetail = %v, %v", found, err)
			}
			var got []string
			for _, p := range d.Page {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) || d.Partitions != 4 || d.Totals.Total != 4 {
				t.Errorf("detail page %v (%d partitions, %d messages), want %v of 4", got, d.Partitions, d.Totals.Total, tt.want)
			}
			dp, found, err := f.Store.QueueDepth(ctx, tenant, "pages", "", tt.p)
			if err != nil || !found {
				t.Fatalf("QueueDepth = %v, %v", found, err)
			}
			got = nil
			for _, p := range dp.Page {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tt.want) || dp.Totals.Pending != 4 || dp.PartitionsPending != 4 || dp.PartitionsReady != 4 {
				t.Errorf("depth page %v (%+v), want %v of 4", got, dp, tt.want)
			}
		})
	}
}

func testResourceConfigured(t *testing.T, f ResourceFixture) {
	ctx := context.Background()
	cfg := configA("configured")
	f.Configure(t, tenant, cfg)
	d, found, err := f.Store.QueueDetail(ctx, tenant, "configured", resPage(10, 0))
	if err != nil || !found {
		t.Fatalf("QueueDetail = %v, %v", found, err)
	}
	wantConfig(t, "the detail's configuration", d.Config, cfg)
	if d.CreatedAt.IsZero() || d.Partitions != 0 || d.Totals != (ports.WatermarkCounts{}) || len(d.Page) != 0 {
		t.Fatalf("a queue without partitions: %+v", d)
	}
	dp, found, err := f.Store.QueueDepth(ctx, tenant, "configured", "", resPage(10, 0))
	if err != nil || !found || dp.Totals != (ports.WatermarkCounts{}) || dp.PartitionsPending != 0 ||
		dp.PartitionsReady != 0 || len(dp.Page) != 0 {
		t.Fatalf("QueueDepth = %+v, %v, %v", dp, found, err)
	}
	qs, n, err := f.Store.ListQueues(ctx, tenant, ports.ResourceFilter{Namespace: "ns-a", Task: "task-a"}, resPage(10, 0))
	if err != nil || n != 1 || len(qs) != 1 || qs[0].ID != d.Config.ID || qs[0].Partitions != 0 ||
		qs[0].Counts != (ports.WatermarkCounts{}) {
		t.Fatalf("ListQueues = %+v, %d, %v", qs, n, err)
	}
	ns, err := f.Store.CountsBy(ctx, tenant, ports.ByNamespace, resPage(10, 0))
	if err != nil || len(ns) != 1 || ns[0] != (ports.KeyCounts{Key: "ns-a", Queues: 1}) {
		t.Fatalf("namespaces %+v, %v: a queue without partitions counts as a queue", ns, err)
	}
	// A configured queue's options come with the detail after a push too.
	k := newAdminKit(t, f.AdminWorld)
	k.push("configured", "p", "m")
	after, _, err := f.Store.QueueDetail(ctx, tenant, "configured", resPage(10, 0))
	if err != nil || after.Partitions != 1 {
		t.Fatalf("after a push: %+v, %v", after, err)
	}
	wantConfig(t, "the configuration after a push", after.Config, d.Config)
}

func testResourceNotFound(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	k.push("q", "p", "m")
	ctx := context.Background()
	for _, tc := range []struct{ tenant, queue string }{{tenant, "nope"}, {otherTenant, "q"}, {tenant, "Q"}} {
		if d, found, err := f.Store.QueueDetail(ctx, tc.tenant, tc.queue, resPage(10, 0)); found || err != nil {
			t.Errorf("QueueDetail(%s, %s) = %+v, %v, %v; want not found", tc.tenant, tc.queue, d, found, err)
		}
		if d, found, err := f.Store.QueueDepth(ctx, tc.tenant, tc.queue, "", resPage(10, 0)); found || err != nil {
			t.Errorf("QueueDepth(%s, %s) = %+v, %v, %v; want not found", tc.tenant, tc.queue, d, found, err)
		}
	}
	if qs, n, err := f.Store.ListQueues(ctx, otherTenant, ports.ResourceFilter{}, resPage(10, 0)); err != nil || n != 0 || len(qs) != 0 {
		t.Errorf("another tenant lists %v (%d), %v", queueNames(qs), n, err)
	}
	if st, err := f.Store.Status(ctx, otherTenant, ports.ResourceFilter{}); err != nil || st != (ports.ResourceStatus{}) {
		t.Errorf("another tenant's status %+v, %v", st, err)
	}
}

func testResourceStorage(t *testing.T, f ResourceFixture) {
	ctx := context.Background()
	st, err := f.Store.StorageTotals(ctx)
	if err != nil || st.Messages != 0 || st.Segments < 0 || st.SegmentBytes < 0 {
		t.Fatalf("an empty store's totals %+v, %v", st, err)
	}
	k := newAdminKit(t, f.AdminWorld)
	pid := k.pushEach("st", "a", "m0", "m1", "m2")
	k.push("st", "b", "m0", "m1")
	k.commit(segOf(otherTenant, "st", "a", "m0"))
	st, err = f.Store.StorageTotals(ctx)
	// The segment count and size are the database's bookkeeping, which may lag behind.
	if err != nil || st.Messages != 6 || st.SegmentBytes <= 0 || st.Segments < 0 || st.Segments > 5 {
		t.Fatalf("storage totals %+v, %v; want 6 messages, some bytes, 0 to 5 segments", st, err)
	}
	k.w.Trim(t, pid, 2, 2)
	if st, err = f.Store.StorageTotals(ctx); err != nil || st.Messages != 4 {
		t.Fatalf("after retention removed 2 messages: %+v, %v; want 4 messages", st, err)
	}
}

func testResourceDeletedQueue(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	resListingWorld(k)
	k.dlq("a.x", "p", "g", "m0", 0)
	ctx := context.Background()
	k.w.DeleteQueue(t, tenant, "a.x")
	if qs, n, err := f.Store.ListQueues(ctx, tenant, ports.ResourceFilter{}, resPage(10, 0)); err != nil || n != 3 ||
		!slices.Equal(queueNames(qs), []string{"a.y", "b.x", "plain"}) {
		t.Fatalf("after the deletion ListQueues = %v (%d), %v", queueNames(qs), n, err)
	}
	if _, found, err := f.Store.QueueDetail(ctx, tenant, "a.x", resPage(10, 0)); found || err != nil {
		t.Fatalf("QueueDetail of the deleted queue = %v, %v", found, err)
	}
	want := ports.ResourceOverview{Queues: 3, Partitions: 3, Namespaces: 2, Tasks: 2, Counts: ports.WatermarkCounts{Total: 3, Pending: 3}}
	if o, err := f.Store.Overview(ctx, tenant); err != nil || o != want {
		t.Fatalf("overview %+v (%v), want %+v: the queue's group and dead letter went with it", o, err, want)
	}
	if st, err := f.Store.StorageTotals(ctx); err != nil || st.Messages != 4 {
		t.Fatalf("storage totals %+v, %v; want the 4 messages left (3 and the other tenant's)", st, err)
	}
}

func testResourceCancelled(t *testing.T, f ResourceFixture) {
	k := newAdminKit(t, f.AdminWorld)
	k.push("q", "p", "m")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() error{
		"ListQueues": func() error {
			_, _, err := f.Store.ListQueues(ctx, tenant, ports.ResourceFilter{}, resPage(1, 0))
			return err
		},
		"QueueDetail": func() error { _, _, err := f.Store.QueueDetail(ctx, tenant, "q", resPage(1, 0)); return err },
		"QueueDepth":  func() error { _, _, err := f.Store.QueueDepth(ctx, tenant, "q", "", resPage(1, 0)); return err },
		"CountsBy":    func() error { _, err := f.Store.CountsBy(ctx, tenant, ports.ByTask, resPage(1, 0)); return err },
		"Overview":    func() error { _, err := f.Store.Overview(ctx, tenant); return err },
		"Status":      func() error { _, err := f.Store.Status(ctx, tenant, ports.ResourceFilter{}); return err },
		"StorageTotals": func() error {
			_, err := f.Store.StorageTotals(ctx)
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s with a cancelled context succeeded", name)
		}
	}
}
