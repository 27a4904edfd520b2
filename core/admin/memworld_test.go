package admin

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// memWorld is the in-memory store the services are tested over (adapters/memory passes
// the same conformance suites as the PostgreSQL adapter), on a clock the test moves, with
// helpers that make data the way producers and consumers do: pushes of real segments,
// pops and acks.
type memWorld struct {
	t     testing.TB
	s     *memory.Store
	codec *segment.Codec

	mu  sync.Mutex
	now time.Time

	calls atomic.Int64 // calls of the admin ports (see count)
}

// newMemWorld returns an empty store whose clock reads now.
func newMemWorld(t testing.TB, now time.Time) *memWorld {
	t.Helper()
	w := &memWorld{t: t, s: memory.NewStore(), codec: msgCodec(t), now: now}
	w.s.Now = w.clock
	w.s.AdminFault = func(string) error { w.calls.Add(1); return nil }
	return w
}

func (w *memWorld) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// at sets the clock.
func (w *memWorld) at(t time.Time) *memWorld {
	w.mu.Lock()
	w.now = t
	w.mu.Unlock()
	return w
}

// count is the number of calls of the admin ports so far.
func (w *memWorld) count() int { return int(w.calls.Load()) }

// fail makes every call of the admin ports named op ("" = every one) fail with err.
func (w *memWorld) fail(op string, err error) {
	w.s.AdminFault = func(got string) error {
		w.calls.Add(1)
		if op == "" || got == op {
			return err
		}
		return nil
	}
}

// configure configures queue: the schema's defaults changed by set.
func (w *memWorld) configure(tenant, queue string, set func(*ports.QueueConfig)) {
	cfg := ports.QueueConfig{Name: queue, QueueOptions: ports.QueueOptions{LeaseTime: 300, RetryLimit: 3,
		RetryDelay: 1000, TTL: 3600, DeadLetterQueue: true, DLQAfterMaxRetries: true, DedupWindowSeconds: 3600,
		RetentionSinkHoldMaxSeconds: 604800}}
	if set != nil {
		set(&cfg)
	}
	w.s.SetQueueConfig(tenant, cfg)
}

// push commits frames as one segment of tenant's queue/partition (a frame without an id
// gets a new one) and returns the result.
func (w *memWorld) push(tenant, queue, partition string, frames ...segment.Frame) ports.SegmentResult {
	w.t.Helper()
	var hashes []byte
	for i := range frames {
		if frames[i].ID == [16]byte{} {
			frames[i].ID = uuid.New()
		}
		h := dedup.Hash(frames[i].TransactionID)
		hashes = append(hashes, h[:]...)
	}
	res, err := w.s.PushSegments(context.Background(), []ports.Segment{{Tenant: tenant, Queue: queue, Partition: partition,
		Count: len(frames), Hashes: hashes, Verified: -1, Blob: w.codec.Encode(frames)}})
	if err != nil || res[0].Status != ports.SegmentQueued {
		w.t.Fatalf("push to %s/%s: %+v, %v", queue, partition, res, err)
	}
	return res[0]
}

// pushTxns commits one single-message segment per transaction id (its payload is the id
// as a JSON string) and returns the partition id.
func (w *memWorld) pushTxns(tenant, queue, partition string, txns ...string) string {
	w.t.Helper()
	var pid string
	for _, x := range txns {
		pid = w.push(tenant, queue, partition, segment.Frame{TransactionID: x, Payload: fmt.Appendf(nil, "%q", x)}).PartitionID
	}
	return pid
}

// subscribe records group's subscription (all) to queue without creating a cursor.
func (w *memWorld) subscribe(tenant, queue, group string) {
	w.t.Helper()
	if _, _, err := w.s.Pop(context.Background(), ports.PopRequest{Tenant: tenant, Queue: queue, Partition: "\x00none",
		Group: group, Batch: 1, Partitions: 1, SubscribeMode: ports.SubscribeAll}); err != nil {
		w.t.Fatal(err)
	}
}

// pop claims up to n messages of queue/partition for group: under a lease of two hours,
// or acknowledged at once (autoAck). It returns the lease id ("" with autoAck) and the
// claim, and fails unless one span was claimed.
func (w *memWorld) pop(tenant, queue, partition, group string, n int, autoAck bool) (string, ports.Claim) {
	w.t.Helper()
	lease := ""
	if !autoAck {
		lease = uuid.NewString()
	}
	claims, _, err := w.s.Pop(context.Background(), ports.PopRequest{Tenant: tenant, Queue: queue, Partition: partition,
		Group: group, Batch: n, Partitions: 1, LeaseSeconds: 7200, AutoAck: autoAck, LeaseID: lease,
		SubscribeMode: ports.SubscribeAll})
	if err != nil || len(claims) != 1 {
		w.t.Fatalf("pop of %s/%s as %s: %+v, %v", queue, partition, group, claims, err)
	}
	return lease, claims[0]
}

// ack acknowledges txn of the claim for group under lease with status (and the error a
// dead letter records), and fails unless it was accepted.
func (w *memWorld) ack(c ports.Claim, group, lease, txn string, st ports.AckStatus, reason string) ports.AckResult {
	w.t.Helper()
	res, err := w.s.Ack(context.Background(), []ports.AckItem{{PartitionID: c.PartitionID, Group: group,
		Hash: dedup.Hash(txn), TransactionID: txn, Status: st, LeaseID: lease, Error: reason}})
	if err != nil || !res[0].OK {
		w.t.Fatalf("ack of %s as %s: %+v, %v", txn, group, res, err)
	}
	return res[0]
}

// kill pops the next message of queue/partition for group and dead-letters it (txn is
// its transaction id) with reason.
func (w *memWorld) kill(tenant, queue, partition, group, txn, reason string) {
	w.t.Helper()
	lease, c := w.pop(tenant, queue, partition, group, 1, false)
	if r := w.ack(c, group, lease, txn, ports.AckDLQ, reason); !r.DLQ {
		w.t.Fatalf("dead-lettering %s as %s: %+v", txn, group, r)
	}
}

// deadIDs lists the ids of the dead letters stored, in the order they were written.
func (w *memWorld) deadIDs() []string {
	var out []string
	for _, d := range w.s.DeadLetters("") {
		out = append(out, d.ID)
	}
	return out
}
