package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/ports"
)

// journal records what the pushes of a transaction changed, so that a rollback puts the
// store back as it was: queues and partitions they created, and the allocator and
// segment list of every partition they appended to.
type journal struct {
	queues     []string // tenant\x1fqueue keys of created queues
	partitions []string // tenant\x1fqueue\x1fpartition keys of created partitions
	marks      map[*partition]mark
	seq        uint64
}

// mark is a partition's state before the transaction first appended to it.
type mark struct {
	last      int64
	segs      int
	lastWrite time.Time
}

// touch records p's state unless it is already recorded.
func (j *journal) touch(p *partition) {
	if _, ok := j.marks[p]; !ok {
		j.marks[p] = mark{last: p.last, segs: len(p.segs), lastWrite: p.lastWrite}
	}
}

// undo rolls the store back to before the journal started. Callers hold s.mu.
func (s *Store) undo(j *journal) {
	for p, m := range j.marks {
		p.last, p.segs, p.lastWrite = m.last, p.segs[:m.segs], m.lastWrite
	}
	for _, key := range j.partitions {
		if p := s.partitions[key]; p != nil {
			delete(s.byID, p.id)
			delete(s.partitions, key)
		}
	}
	for _, key := range j.queues {
		delete(s.queues, key)
	}
	s.seq = j.seq
}

// Transaction implements ports.TransactionStore, as the PostgreSQL adapter does
// (adapters/postgres/txn.go): the segments through the push allocator, then the acks
// strictly, all or nothing. A segment that duplicates stored history rolls everything
// back with reason "duplicate"; an ack the strict rules refuse, with "ack_rejected".
func (s *Store) Transaction(_ context.Context, segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult, error) {
	if err := checkSegments(segs); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pushed, acked, _, updates, err := s.transact(segs, acks, hint)
	if err != nil {
		return nil, nil, err
	}
	s.applyAck(updates)
	return pushed, acked, nil
}

// transact runs a transaction's pushes (Transaction's rules) and plans its acks: on a
// rollback the store is as it was; otherwise the pushes are stored (j undoes them) and
// the acks' updates are the caller's to apply. Callers hold s.mu.
func (s *Store) transact(segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult, *journal, []ackUpdate, error) {
	now := s.Now()
	j := &journal{marks: make(map[*partition]mark), seq: s.seq}
	var pushed []ports.SegmentResult
	if len(segs) > 0 {
		pushed = make([]ports.SegmentResult, len(segs))
		for i, sg := range segs {
			pushed[i] = s.pushOne(sg, now, j)
		}
		for i, r := range pushed {
			if r.Status == ports.SegmentEncrypted {
				s.undo(j)
				return nil, nil, nil, nil, ports.PlainRefusal(segs[i])
			}
			if r.Status == ports.SegmentDuplicate {
				s.undo(j)
				return nil, nil, nil, nil, &ports.RollbackError{Reason: "duplicate", Msg: fmt.Sprintf(
					"QDUP transactionId already exists in partition %s/%s (frame %d); transaction rolled back",
					segs[i].Queue, segs[i].Partition, r.Dups[0].Index)}
			}
		}
	}
	var (
		acked   []ports.AckResult
		updates []ackUpdate
	)
	if len(acks) > 0 {
		res, planned, rb := s.planAck(acks, true, hint, now)
		if rb != nil {
			s.undo(j)
			return nil, nil, nil, nil, rb
		}
		acked, updates = res, planned
	}
	return pushed, acked, j, updates, nil
}
