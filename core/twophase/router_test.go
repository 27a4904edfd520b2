package twophase

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/ports"
)

// shards returns n memory stores, each playing its shard, and a Locate that places
// queue "qN..." on shard N.
func shards(n int) ([]*memory.Store, []ShardStore, Locate) {
	mem := make([]*memory.Store, n)
	stores := make([]ShardStore, n)
	for i := range mem {
		mem[i] = memory.NewStore()
		mem[i].Shard = i
		stores[i] = mem[i]
	}
	locate := func(_ context.Context, _, queue string) (int, error) {
		if queue == "" || queue[0] != 'q' || int(queue[1]-'0') >= n {
			return 0, errors.New("no such queue")
		}
		return int(queue[1] - '0'), nil
	}
	return mem, stores, locate
}

// leased pushes one message to queue on s, pops it for group g and returns an ack of it.
func leased(t *testing.T, s *memory.Store, queue, txn string) ports.AckItem {
	t.Helper()
	ctx := context.Background()
	if _, err := s.PushSegments(ctx, []ports.Segment{segment(queue, txn)}); err != nil {
		t.Fatal(err)
	}
	claims, _, err := s.Pop(ctx, ports.PopRequest{Tenant: "t", Queue: queue, Partition: "p", Group: "g", Batch: 1,
		Partitions: 1, LeaseID: "lease-" + txn})
	if err != nil || len(claims) != 1 {
		t.Fatalf("pop %s: %v, %v", queue, claims, err)
	}
	return ports.AckItem{PartitionID: claims[0].PartitionID, Group: "g", Hash: dedup.Hash(txn), TransactionID: txn, Status: ports.AckCompleted,
		LeaseID: "lease-" + txn}
}

func TestRouterOneShardRunsAsToday(t *testing.T) {
	t.Parallel()
	mem, stores, locate := shards(3)
	r := NewRouter(stores, locate, NewCoordinator(&log{}, Options{}))
	pushed, _, err := r.Transaction(context.Background(), []ports.Segment{segment("q2a", "x"), segment("q2b", "y")}, nil, "")
	if err != nil || len(pushed) != 2 {
		t.Fatalf("Transaction: %+v, %v", pushed, err)
	}
	if len(inDoubt(t, mem[2])) != 0 {
		t.Fatal("a one-shard transaction went through two-phase commit")
	}
	if !stored(t, mem[2], "q2a", "x") || !stored(t, mem[2], "q2b", "y") {
		t.Fatal("the pushes did not land on shard 2")
	}
}

// A transaction pushing to two shards and acking on a third commits everywhere, with
// each result in its input position; the ack went to the shard its partition id names.
func TestRouterAcrossShards(t *testing.T) {
	t.Parallel()
	mem, stores, locate := shards(3)
	ack := leased(t, mem[2], "q2in", "m")
	id, err := uuid.Parse(ack.PartitionID)
	if err != nil || shard.Of(id) != 2 {
		t.Fatalf("shard 2's partition id %s names shard %d (%v)", ack.PartitionID, shard.Of(id), err)
	}
	r := NewRouter(stores, locate, NewCoordinator(&log{}, Options{}))
	pushed, acked, err := r.Transaction(context.Background(),
		[]ports.Segment{segment("q1out", "a"), segment("q0out", "b"), segment("q1out", "c")}, []ports.AckItem{ack}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != 3 || pushed[0].BaseOffset != 0 || pushed[2].BaseOffset != 1 || pushed[1].BaseOffset != 0 {
		t.Fatalf("segment results out of place: %+v", pushed)
	}
	if len(acked) != 1 || !acked[0].OK {
		t.Fatalf("ack results: %+v", acked)
	}
	if !stored(t, mem[1], "q1out", "a") || !stored(t, mem[1], "q1out", "c") || !stored(t, mem[0], "q0out", "b") {
		t.Fatal("a push did not land on its shard")
	}
}

// A part the client's input refuses (a duplicate on shard 1) rolls the whole
// transaction back on every shard.
func TestRouterRollsBackAcrossShards(t *testing.T) {
	t.Parallel()
	mem, stores, locate := shards(2)
	if _, err := mem[1].PushSegments(context.Background(), []ports.Segment{segment("q1out", "dup")}); err != nil {
		t.Fatal(err)
	}
	r := NewRouter(stores, locate, NewCoordinator(&log{}, Options{}))
	_, _, err := r.Transaction(context.Background(), []ports.Segment{segment("q0out", "a"), segment("q1out", "dup")}, nil, "")
	var rb *ports.RollbackError
	if !errors.As(err, &rb) || rb.Reason != "duplicate" {
		t.Fatalf("Transaction: %v, want the duplicate's rollback", err)
	}
	if stored(t, mem[0], "q0out", "a") {
		t.Fatal("shard 0's part landed although the transaction rolled back")
	}
}

func TestRouterUnknownQueue(t *testing.T) {
	t.Parallel()
	_, stores, locate := shards(2)
	r := NewRouter(stores, locate, NewCoordinator(&log{}, Options{}))
	if _, _, err := r.Transaction(context.Background(), []ports.Segment{segment("x", "a")}, nil, ""); err == nil {
		t.Fatal("a queue Locate does not know was pushed")
	}
}
