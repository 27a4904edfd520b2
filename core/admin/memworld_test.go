package admin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/push"
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
	ops map[string]int // calls of the admin ports by name (see calls)

	calls atomic.Int64 // calls of the admin ports (see count)
}

// newMemWorld returns an empty store whose clock reads now.
func newMemWorld(t testing.TB, now time.Time) *memWorld {
	t.Helper()
	w := &memWorld{t: t, s: memory.NewStore(), codec: msgCodec(t), now: now, ops: make(map[string]int)}
	w.s.Now = w.clock
	w.s.AdminFault = func(op string) error { w.called(op); return nil }
	return w
}

// called records a call of the admin port op.
func (w *memWorld) called(op string) {
	w.calls.Add(1)
	w.mu.Lock()
	w.ops[op]++
	w.mu.Unlock()
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

// callsOf is the number of calls of the admin port op so far ("MoveDeadLetter/remove"
// counts the deletions MoveDeadLetter attempts).
func (w *memWorld) callsOf(op string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ops[op]
}

// fail makes every call of the admin ports named op ("" = every one) fail with err;
// "MoveDeadLetter/remove" fails the deletion of the row after a successful move.
func (w *memWorld) fail(op string, err error) {
	w.s.AdminFault = func(got string) error {
		w.called(got)
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
// its transaction id) with reason, and returns the dead-letter row written.
func (w *memWorld) kill(tenant, queue, partition, group, txn, reason string) ports.DeadLetter {
	w.t.Helper()
	lease, c := w.pop(tenant, queue, partition, group, 1, false)
	if r := w.ack(c, group, lease, txn, ports.AckDLQ, reason); !r.DLQ {
		w.t.Fatalf("dead-lettering %s as %s: %+v", txn, group, r)
	}
	rows := w.s.DeadLetters(c.PartitionID)
	return rows[len(rows)-1]
}

// deadIDs lists the ids of the dead letters stored, in the order they were written.
func (w *memWorld) deadIDs() []string {
	var out []string
	for _, d := range w.s.DeadLetters("") {
		out = append(out, d.ID)
	}
	return out
}

// memPusher is the push use case as replays use it (Pusher), over the world's store:
// each push, of one item, is one segment of its partition, answered duplicate (with the
// offset and id of the message already there) when the partition holds its transaction
// id within the dedup window. With status set it answers that instead and stores
// nothing (a push the spool took, or one that failed). It records what it was asked to
// push and by whom.
type memPusher struct {
	w      *memWorld
	status push.Status

	mu     sync.Mutex
	pushes []push.Item
	subs   []string // the producer of each push
}

// pusher returns a pusher into the world's store.
func (w *memWorld) pusher() *memPusher { return &memPusher{w: w} }

func (p *memPusher) Push(ctx context.Context, tenant, producerSub string, items []push.Item) []push.Result {
	p.mu.Lock()
	p.pushes = append(p.pushes, items...)
	p.subs = append(p.subs, producerSub)
	status := p.status
	p.mu.Unlock()
	out := make([]push.Result, len(items))
	if len(items) != 1 {
		p.w.t.Errorf("a push of %d items: the test pusher pushes one at a time", len(items))
		for i := range out {
			out[i] = push.Result{Index: i, Status: push.StatusError}
		}
		return out
	}
	it := items[0]
	id := uuid.New()
	r := push.Result{MessageID: id, TransactionID: cmp.Or(it.TransactionID, id.String()), Queue: it.Queue,
		Partition: cmp.Or(it.Partition, push.DefaultPartition)}
	if status != "" {
		r.Status = status
		return []push.Result{r}
	}
	f := segment.Frame{ID: id, TransactionID: r.TransactionID, ProducerSub: producerSub, Payload: it.Payload}
	h := dedup.Hash(r.TransactionID)
	res, err := p.w.s.PushSegments(ctx, []ports.Segment{{Tenant: tenant, Queue: r.Queue, Partition: r.Partition,
		Count: 1, Hashes: h[:], Verified: -1, Blob: p.w.codec.Encode([]segment.Frame{f})}})
	switch {
	case err != nil:
		p.w.t.Errorf("push of %s to %s/%s: %v", r.TransactionID, r.Queue, r.Partition, err)
		r.Status = push.StatusError
	case res[0].Status == ports.SegmentQueued:
		r.Status, r.PartitionID, r.Offset, r.HasOffset = push.StatusQueued, res[0].PartitionID, res[0].BaseOffset, true
	case res[0].Status == ports.SegmentDuplicate && len(res[0].Dups) == 1:
		r.Status, r.PartitionID, r.Offset, r.HasOffset = push.StatusDuplicate, res[0].PartitionID, res[0].Dups[0].Offset, true
		r.MessageID = [16]byte{} // the original's, when its segment is still stored
		if sg, ok, err := p.w.s.SegmentAt(ctx, r.PartitionID, r.Offset); err == nil && ok {
			if fs, err := p.w.codec.Decode(sg.Blob); err == nil && r.Offset-sg.BaseOffset < int64(len(fs)) {
				r.MessageID = fs[r.Offset-sg.BaseOffset].ID
			}
		}
	default:
		p.w.t.Errorf("push of %s to %s/%s: %+v", r.TransactionID, r.Queue, r.Partition, res[0])
		r.Status = push.StatusError
	}
	return []push.Result{r}
}

// pushed returns copies of the items pushed and of their producers, in push order.
func (p *memPusher) pushed() ([]push.Item, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pushes), slices.Clone(p.subs)
}
