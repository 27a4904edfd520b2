package porttest

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// ConsumeFixture is a fresh, empty store that pushes, pops and acks over one state, plus
// the hooks the consume suites need to arrange what the ports cannot express.
type ConsumeFixture struct {
	Segments     ports.SegmentStore
	Consume      ports.ConsumeStore
	Transactions ports.TransactionStore // needed by the TransactionStore suite only
	Streams      ports.StreamStore      // needed by the StreamStore suite only
	TwoPhase     ports.TwoPhaseStore    // needed by the TwoPhaseStore suite only
	// Configure creates the queue cfg.Name when needed and sets every option to cfg's
	// value, marking the queue configured (as a replace-mode /api/v1/configure does).
	Configure func(t *testing.T, tenant string, cfg ports.QueueConfig)
	// Age makes everything stored in the partition older by d: segments, their hash
	// sidecar entries and the partition's last write.
	Age func(t *testing.T, partitionID string, d time.Duration)
	// ExpireLease moves the expiry of (partition, group)'s lease into the past; it fails
	// the test when there is no lease.
	ExpireLease func(t *testing.T, partitionID, group string)
	// DeadLetters lists the partition's dead letters in offset order.
	DeadLetters func(t *testing.T, partitionID string) []ports.DeadLetter
	// HoldCursor holds (partition, group)'s cursor as another transaction would (a pop or
	// an ack under way on the row; the row's creation when there is none) until release
	// is called (at the latest when the test ends). Pops must answer busy for it.
	HoldCursor func(t *testing.T, partitionID, group string) (release func())
	// EmptyPartition creates tenant/queue/partition (and the queue) with nothing stored,
	// as a push provisions a partition before it allocates (or as retention leaves one),
	// and returns its id.
	EmptyPartition func(t *testing.T, tenant, queue, partition string) (partitionID string)
	// Hotlist is the store's ports.HotlistStore, over the same state (needed by the
	// HotlistStore suite only).
	Hotlist ports.HotlistStore
}

// The per-item errors of an ack, as the SQL function words them (they reach clients).
const (
	errNoConsumer = "consumer not found"
	errLease      = "invalid or expired lease"
	errNotFound   = "transactionId not found in partition"
	errCommitted  = "already committed: the cursor moved past this message before this ack"
	errNoBatch    = "no leased batch"
	errBeyond     = "position beyond leased batch"
)

// unknownID is a well-formed id (partition or lease) that names nothing.
const unknownID = "00000000-0000-4000-8000-00000000dead"

// newLease returns a random UUID (version 4), as a pop's lease id.
func newLease() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// queueConfig is a queue with the column defaults of queen.queues (what a push or a pop
// creates), namespace and task derived from a dotted name, then changed by set.
func queueConfig(name string, set func(*ports.QueueConfig)) ports.QueueConfig {
	cfg := ports.QueueConfig{Name: name, QueueOptions: ports.QueueOptions{LeaseTime: 300, RetryLimit: 3,
		RetryDelay: 1000, TTL: 3600, DeadLetterQueue: true, DLQAfterMaxRetries: true, DedupWindowSeconds: 3600,
		RetentionSinkHoldMaxSeconds: 604800}}
	if parts := strings.Split(name, "."); len(parts) > 1 {
		cfg.Namespace, cfg.Task = parts[0], parts[1]
	}
	if set != nil {
		set(&cfg)
	}
	return cfg
}

// popOpt changes a pop request.
type popOpt func(*ports.PopRequest)

// req is a leased queue-mode wildcard pop of queue (batch 100, one partition) with opts.
func req(queue string, opts ...popOpt) ports.PopRequest {
	r := ports.PopRequest{Tenant: tenant, Queue: queue, Group: ports.QueueModeGroup, Batch: 100, Partitions: 1,
		LeaseID: newLease(), SubscribeMode: ports.SubscribeAll}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func pinned(p string) popOpt { return func(r *ports.PopRequest) { r.Partition = p } }
func batch(n int) popOpt     { return func(r *ports.PopRequest) { r.Batch = n } }
func parts(n int) popOpt     { return func(r *ports.PopRequest) { r.Partitions = n } }
func leaseSecs(n int) popOpt { return func(r *ports.PopRequest) { r.LeaseSeconds = n } }
func autoAck() popOpt        { return func(r *ports.PopRequest) { r.AutoAck, r.LeaseID = true, "" } }
func group(g string) popOpt  { return func(r *ports.PopRequest) { r.Group = g } }

// cands sets the candidates; none at all is an empty list, not nil (nil scans).
func cands(ids ...string) popOpt {
	return func(r *ports.PopRequest) { r.Candidates = append([]string{}, ids...) }
}

// mode sets the subscription mode (and instant, for SubscribeTimestamp).
func mode(m string, from time.Time) popOpt {
	return func(r *ports.PopRequest) { r.SubscribeMode, r.SubscribeFrom = m, from }
}

// discover turns the pop into a discovery pop by namespace and task.
func discover(ns, task string) popOpt {
	return func(r *ports.PopRequest) { r.Queue, r.Namespace, r.Task = "", ns, task }
}

// kit runs a case: the fixture, the test, and what was pushed (partition id/base ->
// blob) so that claims can be checked against it.
type kit struct {
	t      *testing.T
	f      ConsumeFixture
	pushed *sync.Map
}

func newKit(t *testing.T, f ConsumeFixture) kit { return kit{t: t, f: f, pushed: new(sync.Map)} }

// with is the same kit for a subtest.
func (k kit) with(t *testing.T) kit { k.t = t; return k }

func (k kit) configure(queue string, set func(*ports.QueueConfig)) {
	k.t.Helper()
	k.f.Configure(k.t, tenant, queueConfig(queue, set))
}

// push stores one segment of txns in queue/partition and returns its (queued) result.
func (k kit) push(queue, partition string, txns ...string) ports.SegmentResult {
	k.t.Helper()
	sg := seg(queue, partition, txns...)
	r := push(k.t, k.f.Segments, sg)[0]
	if r.Status != ports.SegmentQueued {
		k.t.Fatalf("push %v to %s/%s: %+v, want queued", txns, queue, partition, r)
	}
	k.pushed.Store(fmt.Sprint(r.PartitionID, "/", r.BaseOffset), string(sg.Blob))
	return r
}

// pop pops r and checks the shape of every claim (see popV).
func (k kit) pop(r ports.PopRequest) []ports.Claim {
	k.t.Helper()
	claims, _ := k.popV(r)
	return claims
}

// popV pops r and checks the shape of every claim: a span with attempt, a lease unless
// autoAck, and the pushed segments that cover it, contiguous and in offset order; and of
// the verdicts (wantVerdictShape).
func (k kit) popV(r ports.PopRequest) ([]ports.Claim, []ports.Verdict) {
	k.t.Helper()
	before := time.Now()
	claims, verdicts, err := k.f.Consume.Pop(context.Background(), r)
	if err != nil {
		k.t.Fatalf("Pop(%+v): %v", r, err)
	}
	wantVerdictShape(k.t, r, claims, verdicts)
	for _, c := range claims {
		if c.Start > c.End || c.Attempt < 1 || c.PartitionID == "" || c.Queue == "" || c.Partition == "" || len(c.Segments) == 0 {
			k.t.Fatalf("malformed claim %+v", c)
		}
		if r.AutoAck != c.LeaseExpires.IsZero() || (!r.AutoAck && !c.LeaseExpires.After(before)) {
			k.t.Fatalf("claim of %s/%s expires at %v (autoAck %v)", c.Queue, c.Partition, c.LeaseExpires, r.AutoAck)
		}
		first, last := c.Segments[0], c.Segments[len(c.Segments)-1]
		if first.BaseOffset > c.Start || last.BaseOffset+int64(last.Count)-1 < c.End {
			k.t.Fatalf("segments %s do not cover %d..%d", segList(c.Segments), c.Start, c.End)
		}
		for i, sg := range c.Segments {
			if i > 0 && sg.BaseOffset != c.Segments[i-1].BaseOffset+int64(c.Segments[i-1].Count) {
				k.t.Fatalf("segments %s are not contiguous", segList(c.Segments))
			}
			blob, ok := k.pushed.Load(fmt.Sprint(c.PartitionID, "/", sg.BaseOffset))
			if !ok || blob != string(sg.Blob) || sg.CreatedAt.IsZero() {
				k.t.Fatalf("segment at %d: blob %q, created %v; pushed %q", sg.BaseOffset, sg.Blob, sg.CreatedAt, blob)
			}
		}
	}
	return claims, verdicts
}

func segList(segs []ports.StoredSegment) string {
	var b strings.Builder
	for _, sg := range segs {
		fmt.Fprintf(&b, "[%d+%d]", sg.BaseOffset, sg.Count)
	}
	return b.String()
}

// popOne pops r and fails unless exactly one partition was claimed.
func (k kit) popOne(r ports.PopRequest) ports.Claim {
	k.t.Helper()
	claims := k.pop(r)
	if len(claims) != 1 {
		k.t.Fatalf("pop of %s claimed %d partitions, want 1: %s", r.Queue, len(claims), spans(claims))
	}
	return claims[0]
}

// popNone pops r and fails unless nothing was claimed.
func (k kit) popNone(r ports.PopRequest) {
	k.t.Helper()
	if claims := k.pop(r); len(claims) != 0 {
		k.t.Fatalf("pop of %s/%s as %s claimed %s, want nothing", r.Queue, r.Partition, r.Group, spans(claims))
	}
}

func spans(claims []ports.Claim) string {
	var b strings.Builder
	for _, c := range claims {
		fmt.Fprintf(&b, "[%s/%s %d..%d #%d]", c.Queue, c.Partition, c.Start, c.End, c.Attempt)
	}
	return b.String()
}

func wantSpan(t *testing.T, c ports.Claim, start, end int64, attempt int) {
	t.Helper()
	if c.Start != start || c.End != end || c.Attempt != attempt {
		t.Fatalf("claimed %d..%d attempt %d, want %d..%d attempt %d", c.Start, c.End, c.Attempt, start, end, attempt)
	}
}

// item acks transaction txn of partition pid for queue mode under lease ("" = none).
func item(pid, lease, txn string, st ports.AckStatus) ports.AckItem {
	return ports.AckItem{PartitionID: pid, Group: ports.QueueModeGroup, Hash: [16]byte(hash(txn)),
		TransactionID: txn, Status: st, LeaseID: lease}
}

// of acks txn under the claim's lease, for r's group.
func of(c ports.Claim, r ports.PopRequest, txn string, st ports.AckStatus) ports.AckItem {
	it := item(c.PartitionID, r.LeaseID, txn, st)
	it.Group = r.Group
	return it
}

func (k kit) ack(items ...ports.AckItem) []ports.AckResult {
	k.t.Helper()
	res, err := k.f.Consume.Ack(context.Background(), items)
	if err != nil || len(res) != len(items) {
		k.t.Fatalf("Ack: %d results for %d items, %v", len(res), len(items), err)
	}
	return res
}

// ok is a successful result for a message of queue/partition.
func ok(queue, partition string, released bool) ports.AckResult {
	return ports.AckResult{OK: true, LeaseReleased: released, Queue: queue, Partition: partition}
}

// failed is a refused item of queue/partition.
func failed(queue, partition, msg string) ports.AckResult {
	return ports.AckResult{Error: msg, Queue: queue, Partition: partition}
}

// wantResults compares results without their names (testAckOrder and testAckSignals
// check where names must be).
func wantResults(t *testing.T, got []ports.AckResult, want ...ports.AckResult) {
	t.Helper()
	for i := range want {
		g, w := got[i], want[i]
		g.Queue, g.Partition, w.Queue, w.Partition = "", "", "", ""
		if g != w {
			t.Fatalf("result %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func txns(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

// ConsumeStore runs the conformance suite of ports.ConsumeStore; newFixture must return
// an isolated store.
func ConsumeStore(t *testing.T, newFixture func(t *testing.T) ConsumeFixture) {
	tests := []struct {
		name string
		run  func(k kit)
	}{
		{"a pop claims the span after the cursor", testPopSpan},
		{"batch is shared across partitions", testPopBatch},
		{"partitions limits a wildcard pop", testPopPartitions},
		{"a pinned pop claims only its partition", testPopPinned},
		{"candidates are tried in order", testPopCandidates},
		{"verdict took", testVerdictTook},
		{"verdict empty", testVerdictEmpty},
		{"verdict leased", testVerdictLeased},
		{"verdict busy", testVerdictBusy},
		{"verdict gone", testVerdictGone},
		{"verdict skipped", testVerdictSkipped},
		{"verdicts follow the candidate order", testVerdictOrder},
		{"an empty candidate list claims nothing", testCandidatesNone},
		{"a live lease hides the partition from its group only", testLeaseExclusive},
		{"concurrent pops of one partition: one wins", testPopConcurrent},
		{"an expired lease redelivers with the next attempt", testLeaseExpiry},
		{"lease length", testLeaseLength},
		{"autoAck commits at delivery without a lease", testAutoAck},
		{"subscription modes at a named group's first contact", testSubscriptionModes},
		{"existing cursors are never re-seeded", testSubscriptionKept},
		{"the first pop of a queue subscribes the group", testSubscriptionFirstContact},
		{"discovery pops by namespace and task", testDiscovery},
		{"windowBuffer keeps a recently written partition quiet", testWindowBuffer},
		{"delayedProcessing hides recent segments", testDelayedProcessing},
		{"release of a leased claim", testReleaseLeased},
		{"release of an autoAck claim", testReleaseAutoAck},
		{"extend lease", testExtendLease},
		{"implicit and explicit acks", testAckSignals},
		{"retry budget, then dead letter or drop", testAckBudget},
		{"completing a batch resets the retry budget", testAckBudgetReset},
		{"lease fencing", testAckFencing},
		{"acks below the cursor", testAckBelowCursor},
		{"acks the store cannot place", testAckUnplaced},
		{"repeated transaction ids take the n-th copy", testAckRepeated},
		{"results in input order across partitions and groups", testAckOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(newKit(t, newFixture(t)))
		})
	}
}

func testPopSpan(k kit) {
	a := k.push("q", "p", "a", "b")
	k.push("q", "p", "c")
	k.push("q", "p", "d", "e")
	r := req("q", batch(3))
	c := k.popOne(r)
	wantSpan(k.t, c, 0, 2, 1)
	if c.Queue != "q" || c.Partition != "p" || c.PartitionID != a.PartitionID || len(c.Segments) != 2 {
		k.t.Fatalf("claim %s/%s (%s) with segments %s", c.Queue, c.Partition, c.PartitionID, segList(c.Segments))
	}
	// Ack the first message only: the next span starts inside the first segment, which
	// the claim carries whole.
	wantResults(k.t, k.ack(of(c, r, "a", ports.AckCompleted)), ok("q", "p", false))
	wantResults(k.t, k.ack(item(c.PartitionID, "", "a", ports.AckRetry)), failed("q", "p", errCommitted))
	wantResults(k.t, k.ack(of(c, r, "b", ports.AckRetry)), ok("q", "p", true))
	c = k.popOne(req("q", batch(3)))
	wantSpan(k.t, c, 1, 3, 2) // b was delivered before: a redelivery
	if segList(c.Segments) != "[0+2][2+1][3+2]" {
		k.t.Fatalf("segments %s, want the three covering 1..3", segList(c.Segments))
	}
}

func testPopBatch(k kit) {
	for _, p := range []string{"p1", "p2", "p3"} {
		k.push("q", p, txns(p+"-", 2)...)
	}
	claims := k.pop(req("q", parts(3), batch(3)))
	if len(claims) != 2 || claims[0].End-claims[0].Start+1 != 2 || claims[1].Start != 0 || claims[1].End != 0 {
		k.t.Fatalf("batch 3 over partitions of 2 claimed %s, want 2 messages then 1", spans(claims))
	}
	one := k.pop(req("q", parts(3), batch(1)))
	if len(one) != 1 || one[0].Start != 0 || one[0].End != 0 {
		k.t.Fatalf("batch 1 claimed %s", spans(one))
	}
	k.popNone(req("q", parts(3)))
}

func testPopPartitions(k kit) {
	for _, p := range []string{"p1", "p2", "p3"} {
		k.push("q", p, txns(p+"-", 2)...)
	}
	r := req("q", parts(2))
	first := k.pop(r)
	if len(first) != 2 || first[0].PartitionID == first[1].PartitionID {
		k.t.Fatalf("partitions=2 claimed %s", spans(first))
	}
	for _, c := range first {
		wantSpan(k.t, c, 0, 1, 1)
		if !c.LeaseExpires.Equal(first[0].LeaseExpires) {
			k.t.Fatalf("one pop, two expiries: %v, %v", c.LeaseExpires, first[0].LeaseExpires)
		}
	}
	rest := k.popOne(req("q", parts(5)))
	if rest.Partition == first[0].Partition || rest.Partition == first[1].Partition {
		k.t.Fatalf("claimed %s again while leased", rest.Partition)
	}
	k.popNone(req("q", parts(5)))
}

func testPopPinned(k kit) {
	for _, p := range []string{"p1", "p2", "p3"} {
		k.push("q", p, txns(p+"-", 2)...)
	}
	c := k.popOne(req("q", pinned("p2"), parts(3)))
	if c.Partition != "p2" {
		k.t.Fatalf("pinned pop of p2 claimed %s", c.Partition)
	}
	wantSpan(k.t, c, 0, 1, 1)
	k.popNone(req("q", pinned("p2")))
	k.popNone(req("q", pinned("nope")))
	k.popNone(req("other", pinned("p1")))
	wantSpan(k.t, k.popOne(req("q", pinned("p3"))), 0, 1, 1)
}

func testPopCandidates(k kit) {
	p1 := k.push("q", "p1", "a")
	p2 := k.push("q", "p2", "b")
	p3 := k.push("q", "p3", "c")
	elsewhere := k.push("other", "p1", "x")
	claims := k.pop(req("q", parts(2), cands(unknownID, elsewhere.PartitionID, p3.PartitionID, p1.PartitionID, p2.PartitionID)))
	if len(claims) != 2 || claims[0].PartitionID != p3.PartitionID || claims[1].PartitionID != p1.PartitionID {
		k.t.Fatalf("claimed %s, want p3 then p1 (unknown and foreign candidates skipped)", spans(claims))
	}
	// Candidates without work (leased here) are skipped; an empty list claims nothing.
	k.popNone(req("q", cands()))
	k.popNone(req("q", parts(3), cands(p3.PartitionID, p1.PartitionID)))
	if c := k.popOne(req("q", parts(3), cands(p1.PartitionID, p2.PartitionID))); c.PartitionID != p2.PartitionID {
		k.t.Fatalf("claimed %s, want p2", c.Partition)
	}
	// A pinned pop ignores candidates.
	if c := k.popOne(req("other", pinned("p1"), cands(p3.PartitionID))); c.PartitionID != elsewhere.PartitionID {
		k.t.Fatalf("pinned pop claimed %s/%s", c.Queue, c.Partition)
	}
}

func testLeaseExclusive(k kit) {
	for _, g := range []string{ports.QueueModeGroup, "g"} {
		k.t.Run(g, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			queue := "excl-" + g
			k.push(queue, "p1", txns("one", 3)...)
			k.push(queue, "p2", txns("two", 3)...)
			r := req(queue, pinned("p1"), batch(1), group(g))
			first := k.popOne(r)
			wantSpan(t, first, 0, 0, 1)
			// p1 is leased, though only part of it was delivered.
			k.popNone(req(queue, pinned("p1"), group(g)))
			second := k.popOne(req(queue, parts(5), group(g)))
			if second.Partition != "p2" {
				t.Fatalf("second pop claimed %s", second.Partition)
			}
			k.popNone(req(queue, parts(5), group(g)))
			// Another group is not fenced by this group's leases.
			wantSpan(t, k.popOne(req(queue, pinned("p1"), group("other"))), 0, 2, 1)
			// The ack releases the lease: the next pop gets the rest.
			wantResults(t, k.ack(of(first, r, "one0", ports.AckCompleted)), ok(queue, "p1", true))
			wantSpan(t, k.popOne(req(queue, pinned("p1"), group(g))), 1, 2, 1)
		})
	}
}

func testPopConcurrent(k kit) {
	k.push("q", "p", txns("r", 4)...)
	const consumers = 8
	var wg sync.WaitGroup
	results := make([][]ports.Claim, consumers)
	errs := make([]error, consumers)
	for i := range consumers {
		wg.Go(func() { results[i], _, errs[i] = k.f.Consume.Pop(context.Background(), req("q")) })
	}
	wg.Wait()
	wins := 0
	for i := range consumers {
		if errs[i] != nil {
			k.t.Fatal(errs[i])
		}
		wins += len(results[i])
	}
	if wins != 1 {
		k.t.Fatalf("%d claims of one partition by concurrent pops, want 1", wins)
	}
}

func testLeaseExpiry(k kit) {
	k.push("q", "p", txns("e", 3)...)
	r1 := req("q", batch(2), leaseSecs(30))
	first := k.popOne(r1)
	k.popNone(req("q"))
	k.f.ExpireLease(k.t, first.PartitionID, ports.QueueModeGroup)
	// The expired lease no longer holds: the span is delivered again, under a new lease.
	wantResults(k.t, k.ack(of(first, r1, "e1", ports.AckCompleted)), failed("q", "p", errLease))
	r2 := req("q", batch(2))
	again := k.popOne(r2)
	wantSpan(k.t, again, 0, 1, 2)
	wantResults(k.t, k.ack(of(first, r1, "e1", ports.AckCompleted)), failed("q", "p", errLease))
	wantResults(k.t, k.ack(of(again, r2, "e1", ports.AckCompleted)), ok("q", "p", true))
	// The next span is a first delivery.
	wantSpan(k.t, k.popOne(req("q")), 2, 2, 1)
}

func testLeaseLength(k kit) {
	tests := []struct {
		name       string
		configured int // leaseTime; 0 = never configured
		secs       int // the pop's leaseSeconds
		want       time.Duration
	}{
		{"unconfigured queue: 60 s", 0, 0, 60 * time.Second},
		{"configured queue: its leaseTime", 120, 0, 120 * time.Second},
		{"leaseSeconds overrides an unconfigured queue", 0, 7, 7 * time.Second},
		{"leaseSeconds overrides leaseTime", 120, 7, 7 * time.Second},
	}
	for i, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			queue := fmt.Sprint("len", i)
			if tt.configured > 0 {
				k.configure(queue, func(c *ports.QueueConfig) { c.LeaseTime = tt.configured })
			}
			k.push(queue, "p", "x")
			before := time.Now()
			c := k.popOne(req(queue, leaseSecs(tt.secs)))
			if c.LeaseExpires.Before(before.Add(tt.want-2*time.Second)) || c.LeaseExpires.After(time.Now().Add(tt.want+2*time.Second)) {
				t.Fatalf("lease expires at %v, want %v after %v", c.LeaseExpires, tt.want, before)
			}
		})
	}
}

func testAutoAck(k kit) {
	for _, g := range []string{ports.QueueModeGroup, "g"} {
		k.t.Run(g, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			queue := "auto-" + g
			k.push(queue, "p", txns("a", 3)...)
			c := k.popOne(req(queue, autoAck(), batch(2), group(g)))
			wantSpan(t, c, 0, 1, 1)
			// Committed at delivery: nothing can expire into a redelivery.
			next := k.popOne(req(queue, group(g)))
			wantSpan(t, next, 2, 2, 1)
			it := item(c.PartitionID, "", "a0", ports.AckCompleted)
			it.Group = g
			want := ok(queue, "p", false)
			want.Noop = true
			wantResults(t, k.ack(it), want)
		})
	}
}

func testSubscriptionModes(k kit) {
	// Each case pushes b0, b1 (and, for timestamps, an aged a0 before them), has group g
	// pop first with the mode, then pushes n0 and pops again.
	type seen struct{ start, end int64 } // the first pop's span; start > end = nothing
	tests := []struct {
		name  string
		group string
		mode  string
		from  func(old, b ports.SegmentResult) time.Time
		first seen
	}{
		{"all reads the backlog", "g", ports.SubscribeAll, nil, seen{0, 2}},
		{"new skips the backlog", "g", ports.SubscribeNew, nil, seen{3, 2}},
		{"an unknown mode is all", "g", "NEW", nil, seen{0, 2}},
		{"queue mode ignores the mode", ports.QueueModeGroup, ports.SubscribeNew, nil, seen{0, 2}},
		{"a timestamp before the backlog reads it", "g", ports.SubscribeTimestamp,
			func(old, _ ports.SegmentResult) time.Time { return old.CreatedAt.Add(-2 * time.Hour) }, seen{0, 2}},
		{"a timestamp between segments starts at the next one", "g", ports.SubscribeTimestamp,
			func(old, _ ports.SegmentResult) time.Time { return old.CreatedAt.Add(-30 * time.Minute) }, seen{1, 2}},
		{"a timestamp equal to a segment's includes it", "g", ports.SubscribeTimestamp,
			func(_, b ports.SegmentResult) time.Time { return b.CreatedAt }, seen{1, 2}},
		{"a timestamp just after a segment excludes it", "g", ports.SubscribeTimestamp,
			func(_, b ports.SegmentResult) time.Time { return b.CreatedAt.Add(time.Microsecond) }, seen{3, 2}},
	}
	for i, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := k.with(t)
			queue := fmt.Sprint("sub", i)
			old := k.push(queue, "p", "a0")
			k.f.Age(t, old.PartitionID, time.Hour)
			b := k.push(queue, "p", "b0", "b1")
			var from time.Time
			if tt.from != nil {
				from = tt.from(old, b)
			}
			r := req(queue, group(tt.group), mode(tt.mode, from))
			if tt.first.start > tt.first.end {
				k.popNone(r)
			} else {
				c := k.popOne(r)
				wantSpan(t, c, tt.first.start, tt.first.end, 1)
				wantResults(t, k.ack(of(c, r, "b1", ports.AckCompleted)), ok(queue, "p", true))
			}
			k.push(queue, "p", "n0")
			wantSpan(t, k.popOne(req(queue, group(tt.group), mode(tt.mode, from))), 3, 3, 1)
		})
	}
}

func testSubscriptionKept(k kit) {
	k.push("q", "p", txns("b", 3)...)
	k.push("q", "untouched", "u0")
	// Started at the backlog: asking for new later does not skip the rest.
	r := req("q", pinned("p"), batch(1), group("from-all"))
	c := k.popOne(r)
	wantSpan(k.t, c, 0, 0, 1)
	wantResults(k.t, k.ack(of(c, r, "b0", ports.AckCompleted)), ok("q", "p", true))
	wantSpan(k.t, k.popOne(req("q", pinned("p"), batch(1), group("from-all"), mode(ports.SubscribeNew, time.Time{}))), 1, 1, 1)
	// Started after the backlog: asking for all or an old timestamp later does not rewind,
	// on the partition or on the queue's partitions the group has not touched yet.
	k.popNone(req("q", pinned("p"), group("from-new"), mode(ports.SubscribeNew, time.Time{})))
	k.popNone(req("q", pinned("p"), group("from-new")))
	k.popNone(req("q", pinned("p"), group("from-new"), mode(ports.SubscribeTimestamp, time.Unix(0, 0))))
	k.popNone(req("q", pinned("untouched"), group("from-new")))
}

func testSubscriptionFirstContact(k kit) {
	k.t.Run("an empty queue", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		for _, queue := range []string{"empty-wild", "empty-pinned"} {
			r := req(queue, group("g"), mode(ports.SubscribeNew, time.Time{}))
			if queue == "empty-pinned" {
				r.Partition = "p"
			}
			k.popNone(r)
			k.push(queue, "p", "n0", "n1")
			r.LeaseID = newLease()
			wantSpan(t, k.popOne(r), 0, 1, 1)
		}
	})
	k.t.Run("partitions created later are read from their start", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		for _, pin := range []string{"", "old"} {
			queue := "later-" + pin
			k.push(queue, "old", "o0", "o1")
			k.push(queue, "untouched", "u0", "u1")
			sub := req(queue, pinned(pin), group("g"), mode(ports.SubscribeNew, time.Time{}))
			k.popNone(sub)
			// The backlog of a partition the group had not touched predates the
			// subscription too.
			k.popNone(req(queue, pinned("untouched"), group("g"), mode(ports.SubscribeNew, time.Time{})))
			k.push(queue, "later", "l0", "l1")
			c := k.popOne(req(queue, parts(5), group("g"), mode(ports.SubscribeNew, time.Time{})))
			if c.Partition != "later" {
				t.Fatalf("claimed %s, want later", c.Partition)
			}
			wantSpan(t, c, 0, 1, 1)
		}
	})
}

func testDiscovery(k kit) {
	for _, q := range []string{"shop.orders.eu", "shop.billing.x", "mail.orders.y", "plain", "other"} {
		k.push(q, "p", q)
	}
	k.configure("other", func(c *ports.QueueConfig) { c.Namespace, c.Task = "ops", "audit" })
	tests := []struct {
		name, ns, task string
		want           []string // queues, sorted
	}{
		{"namespace", "shop", "", []string{"shop.billing.x", "shop.orders.eu"}},
		{"task", "", "orders", []string{"mail.orders.y", "shop.orders.eu"}},
		{"namespace and task", "shop", "billing", []string{"shop.billing.x"}},
		{"configured namespace", "ops", "", []string{"other"}},
		{"no match", "nope", "", nil},
	}
	for i, tt := range tests {
		k.t.Run(tt.name, func(t *testing.T) {
			k := k.with(t)
			g := fmt.Sprint("d", i)
			claims := k.pop(req("", discover(tt.ns, tt.task), parts(10), group(g)))
			var got []string
			for _, c := range claims {
				wantSpan(t, c, 0, 0, 1)
				got = append(got, c.Queue)
			}
			slices.Sort(got)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("discovered %v, want %v", got, tt.want)
			}
			k.popNone(req("", discover(tt.ns, tt.task), parts(10), group(g)))
		})
	}
}

func testWindowBuffer(k kit) {
	k.configure("q", func(c *ports.QueueConfig) { c.WindowBuffer = 60 })
	a := k.push("q", "p", "a0", "a1")
	k.popNone(req("q"))
	k.popNone(req("q", pinned("p")))
	k.f.Age(k.t, a.PartitionID, 2*time.Minute)
	c := k.popOne(req("q", batch(1)))
	wantSpan(k.t, c, 0, 0, 1)
	k.f.ExpireLease(k.t, a.PartitionID, ports.QueueModeGroup)
	// A new write makes the whole partition quiet again, its older messages too.
	k.push("q", "p", "b0")
	k.popNone(req("q"))
	k.f.Age(k.t, a.PartitionID, 2*time.Minute)
	wantSpan(k.t, k.popOne(req("q")), 0, 2, 2)
}

func testDelayedProcessing(k kit) {
	k.configure("q", func(c *ports.QueueConfig) { c.DelayedProcessing = 60 })
	a := k.push("q", "p", "a0", "a1")
	k.popNone(req("q"))
	k.f.Age(k.t, a.PartitionID, 2*time.Minute)
	k.push("q", "p", "b0")
	// Only the aged segment is visible.
	r := req("q")
	c := k.popOne(r)
	wantSpan(k.t, c, 0, 1, 1)
	wantResults(k.t, k.ack(of(c, r, "a1", ports.AckCompleted)), ok("q", "p", true))
	k.popNone(req("q", pinned("p")))
	k.f.Age(k.t, a.PartitionID, 2*time.Minute)
	wantSpan(k.t, k.popOne(req("q")), 2, 2, 1)
}

func testReleaseLeased(k kit) {
	ctx := context.Background()
	k.push("q", "p", txns("m", 3)...)
	r := req("q", batch(2))
	c := k.popOne(r)
	if err := k.f.Consume.Release(ctx, r.Group, r.LeaseID, false, []ports.Claim{c}); err != nil {
		k.t.Fatal(err)
	}
	// The delivery is not counted and the lease is gone.
	wantResults(k.t, k.ack(of(c, r, "m0", ports.AckCompleted)), failed("q", "p", errLease))
	r2 := req("q", batch(2), leaseSecs(30))
	again := k.popOne(r2)
	wantSpan(k.t, again, 0, 1, 1)
	// Releasing under a lease that no longer holds changes nothing.
	k.f.ExpireLease(k.t, c.PartitionID, ports.QueueModeGroup)
	r3 := req("q", batch(2))
	third := k.popOne(r3)
	wantSpan(k.t, third, 0, 1, 2)
	if err := k.f.Consume.Release(ctx, r2.Group, r2.LeaseID, false, []ports.Claim{again}); err != nil {
		k.t.Fatal(err)
	}
	k.popNone(req("q"))
	wantResults(k.t, k.ack(of(third, r3, "m1", ports.AckCompleted)), ok("q", "p", true))
}

func testReleaseAutoAck(k kit) {
	ctx := context.Background()
	release := func(t *testing.T, g string, c ports.Claim) {
		t.Helper()
		if err := k.f.Consume.Release(ctx, g, "", true, []ports.Claim{c}); err != nil {
			t.Fatal(err)
		}
	}
	k.t.Run("the cursor goes back", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		k.push("back", "p", txns("m", 3)...)
		c := k.popOne(req("back", autoAck(), group("g"), batch(2)))
		release(t, "g", c)
		wantSpan(t, k.popOne(req("back", autoAck(), group("g"))), 0, 2, 1)
	})
	k.t.Run("not when a later autoAck pop moved it", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		k.push("moved", "p", txns("m", 3)...)
		c := k.popOne(req("moved", autoAck(), batch(2)))
		wantSpan(t, k.popOne(req("moved", autoAck())), 2, 2, 1)
		release(t, ports.QueueModeGroup, c)
		k.popNone(req("moved"))
	})
	k.t.Run("not when a lease was taken since", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		k.push("leased", "p", txns("m", 3)...)
		c := k.popOne(req("leased", autoAck(), batch(2)))
		r := req("leased")
		l := k.popOne(r)
		wantSpan(t, l, 2, 2, 1)
		release(t, ports.QueueModeGroup, c)
		wantResults(t, k.ack(of(l, r, "m2", ports.AckCompleted)), ok("leased", "p", true))
		k.popNone(req("leased"))
	})
}

func testExtendLease(k kit) {
	ctx := context.Background()
	k.push("q", "p1", "a")
	k.push("q", "p2", "b")
	r := req("q", parts(2), leaseSecs(5))
	claims := k.pop(r)
	if len(claims) != 2 {
		k.t.Fatalf("claimed %s", spans(claims))
	}
	before := time.Now()
	n, exp, err := k.f.Consume.ExtendLease(ctx, r.LeaseID, 120*time.Second)
	if err != nil || n != 2 || exp.Before(before.Add(118*time.Second)) || exp.After(time.Now().Add(122*time.Second)) {
		k.t.Fatalf("extend by 120 s: %d, %v, %v; want 2 renewed to about %v", n, exp, err, before.Add(120*time.Second))
	}
	// Never shortened: a shorter extension renews both and keeps the expiry.
	n2, exp2, err := k.f.Consume.ExtendLease(ctx, r.LeaseID, 60*time.Second)
	if err != nil || n2 != 2 || !exp2.Equal(exp) {
		k.t.Fatalf("extend by 60 s: %d, %v, %v; want 2 at %v", n2, exp2, err, exp)
	}
	// The extension holds: the partitions stay leased.
	k.popNone(req("q", parts(2)))
	// An expired lease is not revived.
	k.f.ExpireLease(k.t, claims[0].PartitionID, ports.QueueModeGroup)
	if n, _, err := k.f.Consume.ExtendLease(ctx, r.LeaseID, 300*time.Second); err != nil || n != 1 {
		k.t.Fatalf("extend with one partition expired: %d, %v; want 1", n, err)
	}
	if n, exp, err := k.f.Consume.ExtendLease(ctx, unknownID, time.Minute); err != nil || n != 0 || !exp.IsZero() {
		k.t.Fatalf("extend an unknown lease: %d, %v, %v", n, exp, err)
	}
	// A lease released by its ack is not renewed either.
	txn := map[string]string{"p1": "a", "p2": "b"}[claims[1].Partition]
	wantResults(k.t, k.ack(of(claims[1], r, txn, ports.AckCompleted)), ok("q", claims[1].Partition, true))
	if n, _, err := k.f.Consume.ExtendLease(ctx, r.LeaseID, 300*time.Second); err != nil || n != 0 {
		k.t.Fatalf("extend with every partition expired or acked: %d, %v; want 0", n, err)
	}
}
