package push

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/ports"
)

// TestPushActivity: a push request counts once per queue it named, with the messages it
// stored there (queued or buffered, not a duplicate nor a follower) and the partitions
// whose first message it committed; a second push creates none.
func TestPushActivity(t *testing.T) {
	t.Parallel()
	items := []Item{
		{Queue: "q", Partition: "a", Payload: []byte(`1`), TransactionID: "x"},
		{Queue: "r", Payload: []byte(`2`)},
		{Queue: "q", Partition: "a", Payload: []byte(`3`), TransactionID: "x"}, // a follower of the first
		{Queue: "q", Partition: "b", Payload: []byte(`4`)},
	}
	want := []string{"pushed " + tenant + "/q 2", "pushed " + tenant + "/r 1"}
	t.Run("queued", func(t *testing.T) {
		t.Parallel()
		act := &memory.ActivityLog{}
		f := newFixture(t, Options{Activity: act})
		f.svc.Push(context.Background(), tenant, "", items)
		created := append([]string{"created " + tenant + "/q 2", "created " + tenant + "/r 1"}, want...)
		if got := act.Take(); !slices.Equal(got, created) {
			t.Errorf("activity %q, want %q", got, created)
		}
		f.svc.Push(context.Background(), tenant, "", items[3:])
		if got, want := act.Take(), []string{"pushed " + tenant + "/q 1"}; !slices.Equal(got, want) {
			t.Errorf("activity of a push to an existing partition %q, want %q", got, want)
		}
	})
	t.Run("buffered", func(t *testing.T) {
		t.Parallel()
		var divert atomic.Bool
		divert.Store(true)
		f, _, _, _ := spoolFixture(t, &divert)
		act := &memory.ActivityLog{}
		f.svc.opts.Activity = act
		res := f.svc.Push(context.Background(), tenant, "", items)
		if got := statuses(res); got != "buffered buffered buffered buffered " {
			t.Fatalf("statuses %s", got)
		}
		if got := act.Take(); !slices.Equal(got, want) {
			t.Errorf("activity %q, want %q", got, want)
		}
	})
}

// TestTransactionActivity: a committed transaction counts, per queue it pushed to, a
// push request with its messages and a transaction; a refused one counts nothing.
func TestTransactionActivity(t *testing.T) {
	t.Parallel()
	act := &memory.ActivityLog{}
	f := newFixture(t, Options{Activity: act})
	f.svc.opts.Codec, f.svc.opts.Transactions = f.codec, ackingTxn{}
	ops := []TxnOp{
		{Push: &TxnPush{Item: Item{Queue: "q", Payload: []byte(`1`)}}},
		{Push: &TxnPush{Item: Item{Queue: "r", Payload: []byte(`2`)}}},
		{Push: &TxnPush{Item: Item{Queue: "q", Partition: "p", Payload: []byte(`3`)}}},
		{Ack: &consume.AckInput{TransactionID: "a", PartitionID: "0190b3c2-8f6e-7a11-9c1d-2f3e4a5b6c7d"}},
	}
	if _, err := f.svc.Transaction(context.Background(), tenant, "", ops, ""); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"created " + tenant + "/q 2", "created " + tenant + "/r 1",
		"pushed " + tenant + "/q 2", "pushed " + tenant + "/r 1",
		"transacted " + tenant + "/q", "transacted " + tenant + "/r",
	}
	if got := act.Take(); !slices.Equal(got, want) {
		t.Errorf("activity %q, want %q", got, want)
	}
	bad := []TxnOp{ops[0], {Ack: &consume.AckInput{TransactionID: "a"}}} // no partition id
	if _, err := f.svc.Transaction(context.Background(), tenant, "", bad, ""); err == nil {
		t.Fatal("a transaction with an invalid ack succeeded")
	}
	if got := act.Take(); len(got) != 0 {
		t.Errorf("activity of a refused transaction %q, want none", got)
	}
}

// TestSinkActivity: a streams sink's settled pushes count per queue, with the partitions
// their segments opened (base offset 0).
func TestSinkActivity(t *testing.T) {
	t.Parallel()
	act := &memory.ActivityLog{}
	f := newFixture(t, Options{Activity: act})
	f.svc.opts.Codec = f.codec
	sink, err := f.svc.PrepareSink(context.Background(), tenant, "", []SinkItem{
		{TxnPush: TxnPush{Item: Item{Queue: "q", Payload: []byte(`1`)}}},
		{TxnPush: TxnPush{Item: Item{Queue: "q", Payload: []byte(`2`)}}},
		{TxnPush: TxnPush{Item: Item{Queue: "r", Payload: []byte(`3`), TransactionID: "t"}}},
		{TxnPush: TxnPush{Item: Item{Queue: "r", Payload: []byte(`4`), TransactionID: "t"}}}, // a repeat
	})
	if err != nil {
		t.Fatal(err)
	}
	res := make([]ports.SegmentResult, len(sink.Segments()))
	for k := range res {
		res[k] = ports.SegmentResult{Status: ports.SegmentQueued, PartitionID: fmt.Sprint("p", k)}
	}
	sink.Settle(res)
	want := []string{
		"created " + tenant + "/q 1", "created " + tenant + "/r 1",
		"pushed " + tenant + "/q 2", "pushed " + tenant + "/r 1",
	}
	if got := act.Take(); !slices.Equal(got, want) {
		t.Errorf("activity %q, want %q", got, want)
	}
}

// TestPushActivityNoAllocations: counting a push request allocates nothing, for one
// queue or a few.
func TestPushActivityNoAllocations(t *testing.T) {
	s := New(nil, Options{Activity: nopActivity{}})
	one := []Result{{Queue: "q", Status: StatusQueued}}
	few := []Result{{Queue: "q", Status: StatusQueued}, {Queue: "r", Status: StatusBuffered}, {Queue: "q", Status: StatusDuplicate}}
	slots := []slot{{leader: 0}, {leader: 1}, {leader: 2}}
	if n := testing.AllocsPerRun(100, func() {
		s.countPushed(tenant, one, slots[:1])
		s.countPushed(tenant, few, slots)
	}); n != 0 {
		t.Errorf("%v allocations per counted push, want 0", n)
	}
}

type nopActivity struct{}

func (nopActivity) Pushed(string, string, int)               {}
func (nopActivity) Popped(string, string, int, int64, int64) {}
func (nopActivity) Acked(string, string, int, int, int)      {}
func (nopActivity) Transacted(string, string)                {}
func (nopActivity) PartitionsCreated(string, string, int)    {}
func (nopActivity) PartitionsDeleted(string, string, int)    {}
