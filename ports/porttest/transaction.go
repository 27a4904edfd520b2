package porttest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// TransactionStore runs the conformance suite of ports.TransactionStore;
// newFixture must return an isolated store whose Transactions, Segments and Consume
// share one state.
func TransactionStore(t *testing.T, newFixture func(t *testing.T) ConsumeFixture) {
	tests := []struct {
		name string
		run  func(k kit)
	}{
		{"segments and acks commit together", testTxnCommit},
		{"results in input order", testTxnOrder},
		{"an unknown transactionId rolls everything back", testTxnUnknown},
		{"an ack of a group that never popped rolls back", testTxnNoConsumer},
		{"a lease failure rolls back", testTxnLease},
		{"the lease hint", testTxnHint},
		{"a duplicate of stored history rolls back", testTxnDuplicate},
		{"other item errors are answered and the rest commits", testTxnItemErrors},
		{"a misaligned segment commits nothing", testTxnMisaligned},
		{"an empty transaction", testTxnEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(newKit(t, newFixture(t)))
		})
	}
}

// txn runs a transaction that must commit, and records its queued segments so that pops
// can check their blobs.
func (k kit) txn(segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult) {
	k.t.Helper()
	pushed, acked, err := k.f.Transactions.Transaction(context.Background(), segs, acks, hint)
	if err != nil || len(pushed) != len(segs) || len(acked) != len(acks) {
		k.t.Fatalf("Transaction: %d segment and %d ack results for %d and %d, %v", len(pushed), len(acked), len(segs), len(acks), err)
	}
	for i, r := range pushed {
		if r.Status == ports.SegmentQueued {
			k.pushed.Store(fmt.Sprint(r.PartitionID, "/", r.BaseOffset), string(segs[i].Blob))
		}
	}
	return pushed, acked
}

// rollback runs a transaction that must roll back with reason and message msg.
func (k kit) rollback(segs []ports.Segment, acks []ports.AckItem, hint, reason, msg string) {
	k.t.Helper()
	pushed, acked, err := k.f.Transactions.Transaction(context.Background(), segs, acks, hint)
	var rb *ports.RollbackError
	if !errors.As(err, &rb) || rb.Reason != reason || rb.Msg != msg || rb.Error() != msg || pushed != nil || acked != nil {
		k.t.Fatalf("Transaction: %+v, %+v, %v; want a rollback (%s) %q", pushed, acked, err, reason, msg)
	}
}

// leased pushes m0..m(n-1) to queue/p and claims them all under a lease.
func (k kit) leased(queue string, n int) (ports.Claim, ports.PopRequest) {
	k.t.Helper()
	k.push(queue, "p", txns("m", n)...)
	r := req(queue)
	return k.popOne(r), r
}

// wantUntouched checks that out/p holds nothing and the claim on in/p is still leased
// and whole: a rolled-back transaction left no trace.
func (k kit) wantUntouched(c ports.Claim, r ports.PopRequest) {
	k.t.Helper()
	k.popNone(req("out"))
	wantQueued(k.t, k.push("out", "p", "after"), 0)
	k.popNone(req("in"))
	wantResults(k.t, k.ack(of(c, r, fmt.Sprint("m", c.End), ports.AckCompleted)), ok("in", "p", true))
}

func testTxnCommit(k kit) {
	c, r := k.leased("in", 1)
	pushed, acked := k.txn([]ports.Segment{seg("out", "p2", "o1", "o2"), seg("out", "Default", "o3")},
		[]ports.AckItem{of(c, r, "m0", ports.AckCompleted)}, r.LeaseID)
	wantQueued(k.t, pushed[0], 0)
	wantQueued(k.t, pushed[1], 0)
	wantResults(k.t, acked, ok("in", "p", true))
	k.popNone(req("in"))
	if got := k.popOne(req("out", pinned("p2"))); got.PartitionID != pushed[0].PartitionID || got.End != 1 {
		k.t.Fatalf("claimed %s, want out/p2 0..1", spans([]ports.Claim{got}))
	}
	wantSpan(k.t, k.popOne(req("out", pinned("Default"))), 0, 0, 1)
}

func testTxnOrder(k kit) {
	k.push("out", "a", "a0")
	k.push("in", "p1", "m0", "m1")
	k.push("in", "p2", "n0")
	r := req("in", parts(2))
	claims := k.pop(r)
	if len(claims) != 2 {
		k.t.Fatalf("claimed %s", spans(claims))
	}
	byName := map[string]ports.Claim{claims[0].Partition: claims[0], claims[1].Partition: claims[1]}
	p1, p2 := byName["p1"], byName["p2"]
	pushed, acked := k.txn([]ports.Segment{seg("out", "b", "b0"), seg("out", "a", "a1", "a2"), seg("other", "c", "c0")},
		[]ports.AckItem{of(p2, r, "n0", ports.AckCompleted), of(p1, r, "m0", ports.AckCompleted), of(p1, r, "m1", ports.AckFailed)}, "")
	wantQueued(k.t, pushed[0], 0)
	wantQueued(k.t, pushed[1], 1)
	wantQueued(k.t, pushed[2], 0)
	if pushed[0].PartitionID == pushed[1].PartitionID || !pushed[0].CreatedAt.Equal(pushed[2].CreatedAt) {
		k.t.Fatalf("segment results %+v: want distinct partitions and one commit time", pushed)
	}
	wantResults(k.t, acked, ok("in", "p2", true), ok("in", "p1", true), ok("in", "p1", true))
	wantSpan(k.t, k.popOne(req("in", pinned("p1"))), 1, 1, 2) // m1 failed: delivered again
	k.popNone(req("in", pinned("p2")))
	wantSpan(k.t, k.popOne(req("out", pinned("a"))), 0, 2, 1)
}

func testTxnUnknown(k kit) {
	c, r := k.leased("in", 1)
	k.rollback([]ports.Segment{seg("out", "p", "o1")},
		[]ports.AckItem{of(c, r, "m0", ports.AckCompleted), of(c, r, "never", ports.AckCompleted)}, "",
		"ack_rejected", "QTXN ack references unknown transactionId never; transaction rolled back")
	k.wantUntouched(c, r)
}

func testTxnNoConsumer(k kit) {
	c, r := k.leased("in", 1)
	other := of(c, r, "m0", ports.AckCompleted)
	other.Group, other.LeaseID = "never-popped", ""
	k.rollback([]ports.Segment{seg("out", "p", "o1")}, []ports.AckItem{of(c, r, "m0", ports.AckCompleted), other}, "",
		"ack_rejected", fmt.Sprintf("QTXN ack references unknown transactionId; transaction rolled back (no consumer for partition %s group never-popped)", c.PartitionID))
	k.wantUntouched(c, r)
}

func testTxnLease(k kit) {
	c, r := k.leased("in", 1)
	stale := of(c, r, "m0", ports.AckCompleted)
	stale.LeaseID = unknownID
	k.rollback([]ports.Segment{seg("out", "p", "o1")}, []ports.AckItem{stale}, r.LeaseID,
		"ack_rejected", "QLEASE invalid or expired lease for transactionId m0; transaction rolled back")
	k.wantUntouched(c, r)
}

func testTxnHint(k kit) {
	// The hint stands in for the lease of acks that give none, when the row has no live
	// holder: then there is nothing it can match, and the transaction rolls back.
	const fenced = "QLEASE invalid or expired lease for transactionId m0; transaction rolled back"
	k.t.Run("a live holder: the hint is not used", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		c, _ := k.leased("live", 1)
		_, acked := k.txn(nil, []ports.AckItem{item(c.PartitionID, "", "m0", ports.AckCompleted)}, unknownID)
		wantResults(t, acked, ok("live", "p", true))
	})
	k.t.Run("an expired lease: the hint fences", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		c, r := k.leased("expired", 1)
		k.f.ExpireLease(t, c.PartitionID, ports.QueueModeGroup)
		k.rollback([]ports.Segment{seg("expired-out", "p", "o1")},
			[]ports.AckItem{item(c.PartitionID, "", "m0", ports.AckCompleted)}, r.LeaseID, "ack_rejected", fenced)
		k.popNone(req("expired-out"))
		// Without a hint the same ack is lease-less and commits.
		_, acked := k.txn(nil, []ports.AckItem{item(c.PartitionID, "", "m0", ports.AckCompleted)}, "")
		wantResults(t, acked, ok("expired", "p", true))
	})
	k.t.Run("no lease at all: the hint fences", func(t *testing.T) {
		t.Parallel()
		k := k.with(t)
		k.push("auto", "p", "m0", "m1")
		c := k.popOne(req("auto", autoAck(), batch(1)))
		k.rollback(nil, []ports.AckItem{item(c.PartitionID, "", "m0", ports.AckCompleted)}, unknownID, "ack_rejected", fenced)
		_, acked := k.txn(nil, []ports.AckItem{item(c.PartitionID, "", "m0", ports.AckCompleted)}, "")
		noop := ok("auto", "p", false)
		noop.Noop = true
		wantResults(t, acked, noop)
	})
}

func testTxnDuplicate(k kit) {
	c, r := k.leased("in", 1)
	taken := k.push("dup", "p", "taken")
	k.rollback([]ports.Segment{seg("out", "p", "o1"), seg("dup", "p", "fresh", "taken")},
		[]ports.AckItem{of(c, r, "m0", ports.AckCompleted)}, "",
		"duplicate", "QDUP transactionId already exists in partition dup/p (frame 1); transaction rolled back")
	// Nothing of it was allocated: the next push to dup/p takes offset 1.
	wantQueued(k.t, k.push("dup", "p", "fresh"), 1)
	k.wantUntouched(c, r)
	// History older than the dedup window (3600 s) is not a duplicate.
	k.f.Age(k.t, taken.PartitionID, 2*time.Hour)
	pushed, _ := k.txn([]ports.Segment{seg("dup", "p", "taken")}, nil, "")
	wantQueued(k.t, pushed[0], 2)
}

func testTxnItemErrors(k kit) {
	k.push("in", "p", "m0", "m1", "m2")
	r := req("in", batch(1))
	c := k.popOne(r)
	wantResults(k.t, k.ack(of(c, r, "m0", ports.AckCompleted)), ok("in", "p", true))
	r = req("in", batch(1))
	c = k.popOne(r)
	pushed, acked := k.txn([]ports.Segment{seg("out", "p", "o1")}, []ports.AckItem{of(c, r, "m2", ports.AckCompleted),
		item(c.PartitionID, "", "m0", ports.AckFailed), of(c, r, "m1", ports.AckCompleted)}, "")
	wantQueued(k.t, pushed[0], 0)
	wantResults(k.t, acked, failed("in", "p", errBeyond), failed("in", "p", errCommitted), ok("in", "p", true))
	wantSpan(k.t, k.popOne(req("in")), 2, 2, 1)
	wantSpan(k.t, k.popOne(req("out")), 0, 0, 1)
}

func testTxnMisaligned(k kit) {
	c, r := k.leased("in", 1)
	bad := seg("out", "q", "a", "b")
	bad.Hashes = bad.Hashes[:20]
	_, _, err := k.f.Transactions.Transaction(context.Background(), []ports.Segment{seg("out", "p", "o1"), bad},
		[]ports.AckItem{of(c, r, "m0", ports.AckCompleted)}, "")
	if !errors.Is(err, ports.ErrInvalid) {
		k.t.Fatalf("Transaction error = %v, want ErrInvalid", err)
	}
	k.wantUntouched(c, r)
}

func testTxnEmpty(k kit) {
	pushed, acked := k.txn(nil, nil, "")
	if len(pushed) != 0 || len(acked) != 0 {
		k.t.Fatalf("empty transaction answered %+v, %+v", pushed, acked)
	}
}
