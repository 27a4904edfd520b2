package push

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// TxnOp is one operation of a transaction (docs/api.md §5.4): a push of one item or an ack.
type TxnOp struct {
	Push *TxnPush // exactly one of Push and Ack is set
	Ack  *consume.AckInput
}

// TxnPush is one pushed item of a transaction.
type TxnPush struct {
	Item
	TraceID string // kept only when it parses as a UUID
}

// TxnResult is one operation's outcome, in request order.
type TxnResult struct {
	Push *Result
	Ack  *ports.AckResult
}

// ErrNoTransactions is returned when the service was built without a transaction store.
var ErrNoTransactions = errors.New("push: transactions are not configured")

// ErrSpooledAhead refuses a transaction that pushes to a partition whose spooled pushes
// are not replayed yet: committing it first would put its messages before older ones.
// Nothing was applied; the client retries once the spool has drained.
var ErrSpooledAhead = errors.New("a partition of the transaction has spooled pushes not yet replayed")

// Transaction commits every push and ack of ops in one database transaction, or none of
// them. hint is the request's single unambiguous lease hint ("" = none). Items must be
// validated. A *consume.InputError names an ack that cannot name a message (nothing was
// tried). A *ports.RollbackError means the store rolled everything back because of the
// request (duplicate, unknown message, lease). An error wrapping one of the
// core/encryption refusals means a push could not be written as its queue requires
// (encrypted queue, no key): nothing was applied.
//
// A transaction the store refuses for plaintext bound for a queue that encrypts (this
// broker's cached flag was stale, see refused.go) runs once more with the flags of its
// plain segments' queues read afresh: sealed with a key, refused with
// encryption.ErrNoKey without one, as for a queue known to encrypt.
func (s *Service) Transaction(ctx context.Context, tenant, producerSub string, ops []TxnOp, hint string) ([]TxnResult, error) {
	if s.opts.Transactions == nil || s.opts.Codec == nil {
		return nil, ErrNoTransactions
	}
	out, segs, err := s.transaction(ctx, tenant, producerSub, ops, hint)
	if refusedByStore(err) {
		for _, sg := range segs {
			if sg.Plain {
				s.opts.Encryption.Forget(tenant, sg.Queue)
			}
		}
		out, _, err = s.transaction(ctx, tenant, producerSub, ops, hint)
	}
	if err == nil && s.opts.Activity != nil {
		s.countTransaction(tenant, out)
	}
	return out, err
}

// transaction is one run of Transaction; it returns the segments it tried too.
func (s *Service) transaction(ctx context.Context, tenant, producerSub string, ops []TxnOp, hint string) ([]TxnResult, []ports.Segment, error) {
	out := make([]TxnResult, len(ops))
	segs, locate, err := s.txnSegments(ctx, tenant, producerSub, ops, out)
	if err != nil {
		return nil, nil, err
	}
	for _, sg := range segs {
		if s.opts.SpooledAhead(tenant, sg.Queue, sg.Partition) {
			return nil, nil, fmt.Errorf("push: transaction to %s/%s: %w", sg.Queue, sg.Partition, ErrSpooledAhead)
		}
	}
	var acks []ports.AckItem
	var ackPos []int
	for i, op := range ops {
		if op.Ack == nil {
			continue
		}
		it, err := op.Ack.Item()
		if err != nil {
			// The request's mistake, found before anything was tried: not a rollback.
			return nil, nil, &consume.InputError{Msg: fmt.Sprintf("operation %d: %v", i, err)}
		}
		acks = append(acks, it)
		ackPos = append(ackPos, i)
	}
	pushed, acked, err := s.opts.Transactions.Transaction(ctx, segs, acks, hint)
	if err != nil {
		return nil, segs, err
	}
	for k, r := range pushed {
		for _, l := range locate[k] {
			res := out[l.op].Push
			res.PartitionID = r.PartitionID
			res.Offset, res.HasOffset = r.BaseOffset+int64(l.frame), true
		}
		s.opts.Commits.Announce(notify.Commit{Tenant: tenant, Queue: segs[k].Queue, Partition: segs[k].Partition,
			PartitionID: r.PartitionID, Messages: segs[k].Count, Source: notify.Transacted})
	}
	for k, r := range acked {
		out[ackPos[k]].Ack = &r
	}
	if s.opts.AcksApplied != nil && len(acks) > 0 {
		s.opts.AcksApplied(tenant, acks, acked)
	}
	return out, segs, nil
}

// txnLoc is where a push op's message landed: frame of its segment.
type txnLoc struct{ op, frame int }

// txnSegments builds one segment per (queue, partition), frames in request order. A
// repeated transactionId in the same partition is stored once; its repeats report
// duplicate with the first message's id (docs/api.md §5.4).
func (s *Service) txnSegments(ctx context.Context, tenant, producerSub string, ops []TxnOp, out []TxnResult) ([]ports.Segment, [][]txnLoc, error) {
	type seg struct {
		frames []segment.Frame
		hashes []byte
		locs   []txnLoc
		firsts map[[16]byte]int // hash -> op index of its first occurrence
	}
	var order []*seg
	by := make(map[[2]string]*seg)
	memo := s.opts.Encryption.Memo(ctx, true)
	for i, op := range ops {
		if op.Push == nil {
			continue
		}
		it := op.Push
		res := s.mint(i, it.Item)
		res.Status = StatusQueued
		r := &res
		id, part, txn := r.MessageID, r.Partition, r.TransactionID
		out[i].Push = r
		g := by[[2]string{it.Queue, part}]
		if g == nil {
			g = &seg{firsts: make(map[[16]byte]int)}
			by[[2]string{it.Queue, part}] = g
			order = append(order, g)
		}
		h := dedup.Hash(txn)
		if first, dup := g.firsts[h]; dup {
			*r = *out[first].Push
			r.Index, r.Status = i, StatusDuplicate
			g.locs = append(g.locs, txnLoc{op: i, frame: frameOf(g.locs, first)})
			continue
		}
		g.firsts[h] = i
		f := segment.Frame{ID: id, TransactionID: txn, ProducerSub: producerSub, Payload: it.Payload}
		if tid, err := uuid.Parse(it.TraceID); err == nil && len(it.TraceID) == 36 {
			f.TraceID, f.HasTrace = tid, true
		}
		if err := memo.Seal(tenant, it.Queue, &f); err != nil {
			// All or nothing: one payload that cannot be written as its queue requires
			// fails the whole transaction before anything is applied.
			return nil, nil, fmt.Errorf("push: transaction operation %d: %w", i, err)
		}
		g.locs = append(g.locs, txnLoc{op: i, frame: len(g.frames)})
		g.frames = append(g.frames, f)
		g.hashes = append(g.hashes, h[:]...)
	}
	segs := make([]ports.Segment, len(order))
	locate := make([][]txnLoc, len(order))
	for k, g := range order {
		first := out[g.locs[0].op].Push
		segs[k] = ports.Segment{Tenant: tenant, Queue: first.Queue, Partition: first.Partition,
			Count: len(g.frames), Hashes: g.hashes, Verified: -1, Blob: s.opts.Codec.Encode(g.frames),
			Plain: anyPlain(g.frames)}
		locate[k] = g.locs
	}
	return segs, locate, nil
}

// anyPlain reports whether some frame is unsealed (ports.Segment.Plain).
func anyPlain(frames []segment.Frame) bool {
	for i := range frames {
		if !frames[i].Encrypted {
			return true
		}
	}
	return false
}

// frameOf returns the frame of op's first occurrence among locs.
func frameOf(locs []txnLoc, op int) int {
	for _, l := range locs {
		if l.op == op {
			return l.frame
		}
	}
	return 0
}
