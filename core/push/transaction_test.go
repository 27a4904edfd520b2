package push

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/ports"
)

// TestTransactionReportsItsAcks: the acks a transaction committed are handed to
// AcksApplied with their results (dead-letter moves and released leases reach the
// consume side as an ack's would); a transaction without acks reports nothing.
func TestTransactionReportsItsAcks(t *testing.T) {
	t.Parallel()
	pid := "0190b3c2-8f6e-7a11-9c1d-2f3e4a5b6c7d"
	tests := []struct {
		name string
		ops  []TxnOp
		want int // acks reported
	}{
		{name: "acks", want: 2, ops: []TxnOp{
			{Push: &TxnPush{Item: Item{Queue: "q", Payload: []byte(`1`)}}},
			{Ack: &consume.AckInput{TransactionID: "a", PartitionID: pid, Status: "failed"}},
			{Ack: &consume.AckInput{TransactionID: "b", PartitionID: pid}},
		}},
		{name: "pushes only", want: 0, ops: []TxnOp{{Push: &TxnPush{Item: Item{Queue: "q", Payload: []byte(`1`)}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Options{})
			var gotItems []ports.AckItem
			var gotRes []ports.AckResult
			calls := 0
			f.svc.opts.Codec, f.svc.opts.Transactions = f.codec, ackingTxn{}
			f.svc.opts.AcksApplied = func(tenant string, items []ports.AckItem, res []ports.AckResult) {
				calls++
				gotItems, gotRes = items, res
			}
			if _, err := f.svc.Transaction(context.Background(), tenant, "", tc.ops, ""); err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				if calls != 0 {
					t.Fatalf("AcksApplied called %d times for a transaction without acks", calls)
				}
				return
			}
			if calls != 1 || len(gotItems) != tc.want || len(gotRes) != tc.want {
				t.Fatalf("AcksApplied: %d calls, %d items, %d results; want 1 call with %d", calls, len(gotItems), len(gotRes), tc.want)
			}
			if gotItems[0].TransactionID != "a" || gotItems[0].Status != ports.AckFailed || !gotRes[0].DLQ || !gotRes[1].LeaseReleased {
				t.Fatalf("reported %+v with %+v", gotItems, gotRes)
			}
		})
	}
}

// ackingTxn commits every segment at offset 0 and answers each ack applied: the first
// dead-lettered, the last releasing its lease.
type ackingTxn struct{}

func (ackingTxn) Transaction(_ context.Context, segs []ports.Segment, acks []ports.AckItem, _ string) ([]ports.SegmentResult, []ports.AckResult, error) {
	pushed := make([]ports.SegmentResult, len(segs))
	for i := range pushed {
		pushed[i] = ports.SegmentResult{Status: ports.SegmentQueued, PartitionID: "p"}
	}
	acked := make([]ports.AckResult, len(acks))
	for i := range acked {
		acked[i] = ports.AckResult{OK: true, Queue: "q", Partition: "Default"}
	}
	if len(acked) > 0 {
		acked[0].DLQ = true
		acked[len(acked)-1].LeaseReleased = true
	}
	return pushed, acked, nil
}

// TestTransactionRefusesAnAckThatNamesNothing: an ack operation that cannot name a
// message is the request's mistake (a *consume.InputError, a 400 at the HTTP edge), not
// a rollback, and nothing reaches the store.
func TestTransactionRefusesAnAckThatNamesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	store := &countingTxn{}
	f.svc.opts.Codec, f.svc.opts.Transactions = f.codec, store
	ops := []TxnOp{
		{Push: &TxnPush{Item: Item{Queue: "q", Payload: []byte(`1`)}}},
		{Ack: &consume.AckInput{TransactionID: "a", PartitionID: "not-a-uuid"}},
	}
	_, err := f.svc.Transaction(context.Background(), tenant, "", ops, "")
	var ie *consume.InputError
	var rb *ports.RollbackError
	if !errors.As(err, &ie) || errors.As(err, &rb) || !strings.Contains(err.Error(), "operation 1") {
		t.Fatalf("err %v, want a consume.InputError naming operation 1, not a rollback", err)
	}
	if store.calls != 0 {
		t.Fatalf("the store was called %d times", store.calls)
	}
}

// countingTxn counts the transactions it is given, and applies none.
type countingTxn struct{ calls int }

func (c *countingTxn) Transaction(context.Context, []ports.Segment, []ports.AckItem, string) ([]ports.SegmentResult, []ports.AckResult, error) {
	c.calls++
	return nil, nil, errors.New("not expected")
}
