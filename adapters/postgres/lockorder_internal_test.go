package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// oneFrame is a single-message segment of queue/partition whose transaction-id hash is
// txn's bytes; the blob is opaque to the store.
func oneFrame(queue, partition, txn string) ports.Segment {
	h := make([]byte, 16)
	copy(h, txn)
	return ports.Segment{Tenant: ports.DefaultTenant, Queue: queue, Partition: partition, Count: 1,
		Hashes: h, Verified: -1, Blob: []byte("blob:" + txn)}
}

// TestPushLockDoesNotBlockReferences: a push bundle's partition lock (held until its
// transaction ends, as in POST /api/v1/transaction) must not block inserts that merely
// reference the partition, such as a pop creating its consumer row: those take KEY SHARE
// locks, and a conflict there closes a deadlock cycle with the transaction's acks.
// (Moved from the root package's HTTP tests: no client can hold a push transaction open.)
func TestPushLockDoesNotBlockReferences(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 4})
	ctx := context.Background()
	if _, err := s.PushSegments(ctx, []ports.Segment{oneFrame("locks", "x", "first")}); err != nil {
		t.Fatal(err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := pushBundle(ctx, tx, []ports.Segment{oneFrame("locks", "x", "second")}); err != nil {
		t.Fatal(err)
	}
	// The bundle's transaction is open and holds the partition: a pop's first contact
	// with it (a new consumer row of group g) must still go through.
	popCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	claims, _, err := s.Pop(popCtx, ports.PopRequest{Tenant: ports.DefaultTenant, Queue: "locks", Partition: "x",
		Group: "g", Batch: 10, Partitions: 1, LeaseID: "0191d7a2-0000-7000-8000-000000000001",
		SubscribeMode: ports.SubscribeAll})
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(popCtx.Err(), context.DeadlineExceeded) {
		t.Fatal("a pop's consumer-row insert waited for a push bundle's partition lock")
	}
	if err != nil {
		t.Fatal(err)
	}
	// It sees what was committed, not the open bundle.
	if len(claims) != 1 || claims[0].Start != 0 || claims[0].End != 0 {
		t.Fatalf("claims %+v, want offset 0 alone", claims)
	}
}
