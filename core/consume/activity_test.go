package consume

import (
	"context"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

const tn = ports.DefaultTenant

// claimAt is a claim of queue's partition pid with payloads, pushed at createdAt.
func claimAt(t *testing.T, codec *segment.Codec, queue, pid string, createdAt time.Time, payloads ...string) ports.Claim {
	c := claimOf(t, codec, payloads...)
	c.Queue, c.PartitionID = queue, pid
	c.Segments[0].CreatedAt = createdAt
	return c
}

// TestPopActivity: an answered pop counts once per queue it delivered from, with the
// messages' lag; an empty long poll counts once however often it re-checked; a pop whose
// client left counts nothing.
func TestPopActivity(t *testing.T) {
	t.Parallel()
	codec, _ := segment.NewCodec(3)
	const pa, pb = "00000000-0000-0000-0000-0000000000aa", "00000000-0000-0000-0000-0000000000bb"
	tests := []struct {
		name   string
		query  PopQuery
		claims func(now time.Time) []ports.Claim
		want   []string
	}{
		{"one queue", PopQuery{Queue: "q", Batch: 10}, func(now time.Time) []ports.Claim {
			return []ports.Claim{claimAt(t, codec, "q", pa, now.Add(-1500*time.Millisecond), "1", "2")}
		}, []string{"popped " + tn + "/q 2 lag 3000/1500"}},
		{"discovery across queues", PopQuery{Namespace: "ns", Batch: 10, Partitions: 3}, func(now time.Time) []ports.Claim {
			return []ports.Claim{
				claimAt(t, codec, "q", pa, now.Add(-time.Second), "1"),
				claimAt(t, codec, "r", pb, now.Add(-2*time.Second), "1", "2"),
			}
		}, []string{"popped " + tn + "/q 1 lag 1000/1000", "popped " + tn + "/r 2 lag 4000/2000"}},
		{"an empty long poll", PopQuery{Queue: "q", Wait: true, Timeout: 3 * time.Second}, func(time.Time) []ports.Claim {
			return nil
		}, []string{"popped " + tn + "/q 0 lag 0/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				act := &memory.ActivityLog{}
				polls := 0
				st := &fakeStore{claims: tt.claims(time.Now()), onPop: func() { polls++ }}
				s := New(st, codec, Options{Activity: act})
				if _, err := s.Pop(context.Background(), tt.query); err != nil {
					t.Fatal(err)
				}
				if tt.query.Wait && polls < 2 {
					t.Fatalf("the long poll claimed %d times, want re-checks", polls)
				}
				if got := act.Take(); !slices.Equal(got, tt.want) {
					t.Errorf("activity %q, want %q", got, tt.want)
				}
			})
		})
	}
	t.Run("a client that left", func(t *testing.T) {
		t.Parallel()
		act := &memory.ActivityLog{}
		ctx, cancel := context.WithCancel(context.Background())
		st := &fakeStore{claims: []ports.Claim{claimOf(t, codec, "1")}, onPop: cancel}
		if _, err := New(st, codec, Options{Activity: act}).Pop(ctx, PopQuery{Queue: "q"}); err == nil {
			t.Fatal("pop of a client that left succeeded")
		}
		if got := act.Take(); len(got) != 0 {
			t.Errorf("activity %q, want none", got)
		}
	})
}

// TestAckActivity: committed acks count per queue: a result that names its queue names
// its partition's other items too, a partition this broker delivered from is known, and
// an unknown one counts under queue "" (the broker's totals).
func TestAckActivity(t *testing.T) {
	t.Parallel()
	codec, _ := segment.NewCodec(3)
	const pa, pb, pc = "00000000-0000-0000-0000-0000000000aa", "00000000-0000-0000-0000-0000000000bb", "00000000-0000-0000-0000-0000000000cc"
	act := &memory.ActivityLog{}
	st := &fakeStore{claims: []ports.Claim{claimAt(t, codec, "r", pb, time.Now(), "1")}}
	s := New(st, codec, Options{Activity: act})
	if _, err := s.Pop(context.Background(), PopQuery{Queue: "r"}); err != nil {
		t.Fatal(err)
	}
	act.Take()
	items := []ports.AckItem{
		{PartitionID: pa, Status: ports.AckCompleted}, {PartitionID: pa, Status: ports.AckCompleted},
		{PartitionID: pa, Status: ports.AckFailed},
		{PartitionID: pb, Status: ports.AckCompleted}, {PartitionID: pb, Status: ports.AckDLQ},
		{PartitionID: pb, Status: ports.AckCompleted},
		{PartitionID: pc, Status: ports.AckRetry},
	}
	res := []ports.AckResult{
		{OK: true}, {OK: true, LeaseReleased: true, Queue: "q", Partition: "p"}, {OK: true},
		{OK: true}, {OK: true, DLQ: true, Queue: "r", Partition: "p"}, {Error: "invalid lease"},
		{OK: true},
	}
	s.Applied(tn, items, res)
	want := []string{"acked " + tn + "/ 0/1/0", "acked " + tn + "/q 2/1/0", "acked " + tn + "/r 1/1/1"}
	if got := act.Take(); !slices.Equal(got, want) {
		t.Errorf("activity %q, want %q", got, want)
	}
}

// TestActivityNoAllocations: counting a pop and an ack of known partitions allocates
// nothing.
func TestActivityNoAllocations(t *testing.T) {
	codec, _ := segment.NewCodec(3)
	s := New(&fakeStore{}, codec, Options{Activity: nopActivity{}})
	const pa = "00000000-0000-0000-0000-0000000000aa"
	b := &Batch{Messages: []Message{{Queue: "q", PartitionID: pa, CreatedAt: time.Now()}, {Queue: "q", PartitionID: pa}}}
	items := []ports.AckItem{{PartitionID: pa, Status: ports.AckCompleted}}
	res := []ports.AckResult{{OK: true}}
	req := ports.PopRequest{Tenant: tn, Queue: "q"}
	s.countPop(req, b)
	if n := testing.AllocsPerRun(100, func() {
		s.countPop(req, b)
		s.countAcks(tn, items, res)
	}); n != 0 {
		t.Errorf("%v allocations per counted pop and ack, want 0", n)
	}
}

type nopActivity struct{}

func (nopActivity) Pushed(string, string, int)               {}
func (nopActivity) Popped(string, string, int, int64, int64) {}
func (nopActivity) Acked(string, string, int, int, int)      {}
func (nopActivity) Transacted(string, string)                {}
func (nopActivity) PartitionsCreated(string, string, int)    {}
func (nopActivity) PartitionsDeleted(string, string, int)    {}

func TestEachParked(t *testing.T) {
	t.Parallel()
	w := NewWaker()
	kq, kr := notify.QueueKey("t", "q"), notify.QueueKey("u", "r")
	waits := []*Wait{w.Wait(kq, "g", ""), w.Wait(kq, "h", "p"), w.Wait(kr, "g", ""), w.WaitAny("g")}
	got := map[string]int{}
	w.EachParked(func(tenant, queue string, n int) { got[tenant+"/"+queue] = n })
	if want := map[string]int{"t/q": 2, "u/r": 1}; !maps.Equal(got, want) {
		t.Errorf("parked %v, want %v", got, want)
	}
	w.Notify(kq, "p") // wakes both pops of q
	clear(got)
	w.EachParked(func(tenant, queue string, n int) { got[tenant+"/"+queue] = n })
	if want := map[string]int{"u/r": 1}; !maps.Equal(got, want) {
		t.Errorf("parked after a wake %v, want %v", got, want)
	}
	for _, x := range waits {
		x.Done(false)
	}
}
