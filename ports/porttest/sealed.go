package porttest

import (
	"testing"

	"github.com/queen-go/queen/ports"
)

// The store's guard against plaintext for encrypted queues: a segment marked Plain
// (some frame unsealed, decided from a broker's cached flag, which may be stale) bound
// for a queue whose encryptionEnabled is on is refused, SegmentEncrypted, with nothing
// stored or allocated; a segment of sealed frames, and plain segments of other queues,
// commit as ever. A transaction or streams cycle with a refused segment rolls back.

// plain is sg marked as holding unsealed frames.
func plain(sg ports.Segment) ports.Segment { sg.Plain = true; return sg }

// encrypts configures queue with encryptionEnabled on.
func (k kit) encrypts(queue string) {
	k.t.Helper()
	k.configure(queue, func(c *ports.QueueConfig) { c.EncryptionEnabled = true })
}

// PlainRefused runs the guard's conformance cases on every path that writes segments:
// pushes, transactions and streams cycles. newFixture's store must implement all three.
func PlainRefused(t *testing.T, newFixture func(t *testing.T) ConsumeFixture) {
	tests := []struct {
		name string
		run  func(k kit)
	}{
		{"a plain segment of an encrypted queue is refused, its bundle commits", testPlainRefusedPush},
		{"a transaction with a refused segment rolls back", testPlainRefusedTxn},
		{"a streams cycle with a refused segment rolls back", testPlainRefusedCycle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(newKit(t, newFixture(t)))
		})
	}
}

func testPlainRefusedPush(k kit) {
	k.encrypts("sealed")
	k.configure("open", nil)
	res := push(k.t, k.f.Segments,
		plain(seg("sealed", "p", "a0")),        // refused
		plain(seg("open", "p", "b0")),          // a queue that does not encrypt
		seg("sealed", "p", "c0", "c1"),         // sealed frames: the same partition commits
		plain(seg("fresh", "p", "d0")),         // a queue that does not exist yet does not encrypt
		plain(seg("sealed", "p2", "e0", "e1")), // refused, a partition of its own
	)
	for i, want := range []ports.SegmentStatus{ports.SegmentEncrypted, ports.SegmentQueued, ports.SegmentQueued,
		ports.SegmentQueued, ports.SegmentEncrypted} {
		if res[i].Status != want {
			k.t.Fatalf("segment %d: %+v, want status %d", i, res[i], want)
		}
	}
	// Nothing of the refused segments was allocated: the sealed one took offset 0.
	wantQueued(k.t, res[2], 0)
	wantQueued(k.t, res[1], 0)
	wantQueued(k.t, res[3], 0)
	k.pushed.Store(segKey(res[2]), string(seg("sealed", "p", "c0", "c1").Blob))
	wantSpan(k.t, k.popOne(req("sealed")), 0, 1, 1)
	k.popNone(req("sealed"))
	// Nothing of their hashes was recorded either: a sealed push of the same ids commits.
	if r := push(k.t, k.f.Segments, seg("sealed", "p2", "e0", "e1"))[0]; r.Status != ports.SegmentQueued || r.BaseOffset != 0 {
		k.t.Fatalf("sealed push after the refusal: %+v, want queued at 0", r)
	}
}

func testPlainRefusedTxn(k kit) {
	c, r := k.leased("in", 1)
	k.encrypts("sealed")
	refused := plain(seg("sealed", "p", "s0"))
	k.rollback([]ports.Segment{seg("out", "p", "o1"), refused}, []ports.AckItem{of(c, r, "m0", ports.AckCompleted)}, "",
		"encryption", ports.PlainRefusal(refused).Msg)
	k.wantUntouched(c, r)
	// The same transaction with the segment sealed commits.
	pushed, _ := k.txn([]ports.Segment{seg("sealed", "p", "s0")}, nil, "")
	wantQueued(k.t, pushed[0], 0)
}

func testPlainRefusedCycle(k kit) {
	q := k.register("q", "h", false).Query.ID
	c, r := k.leased("in", 1)
	k.encrypts("sealed")
	refused := plain(seg("sealed", "p", "s0"))
	cy := ports.Cycle{QueryID: q, PartitionID: c.PartitionID, Ops: []ports.StateOp{upsert("w", `1`)},
		Segments: []ports.Segment{seg("out", "p", "o1"), refused}, Ack: ptr(of(c, r, "m0", ports.AckCompleted)),
		ReleaseLease: true}
	k.refused(cy, ports.PlainRefusal(refused).Msg)
	wantState(k.t, k.state(q, c.PartitionID, ports.StateFilter{}))
	k.wantUntouched(c, r)
}
