package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// The ack side of Store mirrors log_ack_v2 (schema/005_ack.sql), error strings included:
// they reach clients. An ack is planned first, without changing anything, and applied
// afterwards, so a transaction whose strict ack raises has nothing to undo on this side.

// The per-item errors of log_ack_v2.
const (
	errNoConsumer = "consumer not found"
	errLease      = "invalid or expired lease"
	errNotFound   = "transactionId not found in partition"
	errCommitted  = "already committed: the cursor moved past this message before this ack"
	errNoBatch    = "no leased batch"
	errBeyond     = "position beyond leased batch"
)

// minResolution is the floor of the window in which acks resolve transaction ids below
// the cursor (docs/api.md §5.3: max(dedupWindowSeconds, completedRetentionSeconds, 900 s)).
const minResolution = 900 * time.Second

// ackGroup is the items of one (partition, group), in input order.
type ackGroup struct {
	pid, group string
	items      []int
}

// ackUpdate is what applying one group changes.
type ackUpdate struct {
	c       *consumer
	next    consumer
	release bool              // the lease is dropped
	toDLQ   bool              // the message at sig is dead-lettered
	sig     int64             // the lowest explicit signal's offset (with toDLQ)
	dead    *ports.DeadLetter // the dead-letter row; nil when its segment is gone
}

// Ack implements ports.ConsumeStore.
func (s *Store) Ack(_ context.Context, items []ports.AckItem) ([]ports.AckResult, error) {
	if len(items) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out, updates, _ := s.planAck(items, false, "", s.Now())
	s.applyAck(updates)
	return out, nil
}

// groupAcks groups items by (partition, group) in ascending partition id, then group:
// the order the SQL function locks and applies them in.
func groupAcks(items []ports.AckItem) []ackGroup {
	var gs []ackGroup
	index := make(map[string]int)
	for i, it := range items {
		pid := strings.ToLower(it.PartitionID)
		k := consumerKey(pid, it.Group)
		g, ok := index[k]
		if !ok {
			g = len(gs)
			index[k] = g
			gs = append(gs, ackGroup{pid: pid, group: it.Group})
		}
		gs[g].items = append(gs[g].items, i)
	}
	slices.SortFunc(gs, func(a, b ackGroup) int {
		if c := strings.Compare(a.pid, b.pid); c != 0 {
			return c
		}
		return strings.Compare(a.group, b.group)
	})
	return gs
}

// planAck computes every item's result and the changes of every group without applying
// them. With strict (transactions) an unknown consumer, an unknown transaction id or a
// lease failure is a *ports.RollbackError instead of an item error, with the SQL
// function's message. hint is the transaction's lease hint ("" = none). Callers hold s.mu.
func (s *Store) planAck(items []ports.AckItem, strict bool, hint string, now time.Time) ([]ports.AckResult, []ackUpdate, *ports.RollbackError) {
	out := make([]ports.AckResult, len(items))
	var updates []ackUpdate
	hint = strings.ToLower(hint)
	for _, g := range groupAcks(items) {
		c := s.consumers[consumerKey(g.pid, g.group)]
		if c == nil {
			for _, i := range g.items {
				out[i].Error = errNoConsumer
			}
			if strict {
				return nil, nil, rollback(fmt.Sprintf("QTXN ack references unknown transactionId; transaction rolled back (no consumer for partition %s group %s)", g.pid, g.group))
			}
			continue
		}
		p := s.byID[g.pid]
		live := c.live(now)
		offs := p.spanMatch(items, g.items, c)
		fenced := make(map[int]bool)
		window := max(s.window(p.queueKey), time.Duration(p.q.opts.CompletedRetentionSeconds)*time.Second, minResolution)
		for _, i := range g.items {
			lease := strings.ToLower(items[i].LeaseID)
			if lease == "" && !live {
				lease = hint
			}
			fenced[i] = lease != "" && (!live || c.leaseID != lease)
			if _, ok := offs[i]; !ok && !fenced[i] {
				if off, ok := p.resolve(items[i].Hash, c.committed, now.Add(-window)); ok {
					offs[i] = off
				}
			}
		}

		var valid []int
		for _, i := range g.items {
			off, found := offs[i]
			switch {
			case fenced[i]:
				out[i].Error = errLease
				if strict {
					return nil, nil, rollback(fmt.Sprintf("QLEASE invalid or expired lease for transactionId %s; transaction rolled back", items[i].TransactionID))
				}
			case !found:
				out[i].Error = errNotFound
				if strict {
					return nil, nil, rollback(fmt.Sprintf("QTXN ack references unknown transactionId %s; transaction rolled back", items[i].TransactionID))
				}
			case off <= c.committed:
				if items[i].Status == ports.AckCompleted {
					out[i].OK, out[i].Noop = true, true
				} else {
					out[i].Error = errCommitted
				}
			case c.batchEnd <= c.committed:
				out[i].Error = errNoBatch
			case off > c.batchEnd:
				out[i].Error = errBeyond
			default:
				valid = append(valid, i)
			}
		}
		if len(valid) == 0 {
			continue
		}
		u := s.planGroup(items, valid, offs, g, c, p, now)
		for k, i := range valid {
			out[i].OK, out[i].LeaseReleased = true, u.release
			out[i].DLQ = u.toDLQ && offs[i] == u.sig && items[i].Status != ports.AckCompleted
			if (u.release && k == 0) || out[i].DLQ { // names where they are needed (log_ack_v2)
				out[i].Queue, out[i].Partition = p.q.name, p.name
			}
		}
		updates = append(updates, u)
	}
	return out, updates, nil
}

// signalRank orders explicit signals at one offset: dlq beats failed beats retry.
func signalRank(st ports.AckStatus) (int, bool) {
	switch st {
	case ports.AckDLQ:
		return 0, true
	case ports.AckFailed:
		return 1, true
	case ports.AckRetry:
		return 2, true
	}
	return 0, false
}

// planGroup applies the valid items (inside the delivered span) of one group to a copy
// of its consumer: implicit ack of the prefix, or the lowest explicit signal, the retry
// budget, and the dead letter.
func (s *Store) planGroup(items []ports.AckItem, valid []int, offs map[int]int64, g ackGroup, c *consumer, p *partition, now time.Time) ackUpdate {
	hc, sig, sigIdx := int64(-1), int64(-1), -1
	hasHC := false
	for _, i := range valid {
		off, st := offs[i], items[i].Status
		if st == ports.AckCompleted {
			hc, hasHC = max(hc, off), true
			continue
		}
		if sigIdx < 0 || off < sig {
			sig, sigIdx = off, i
			continue
		}
		if off == sig {
			r, ok := signalRank(st)
			rs, oks := signalRank(items[sigIdx].Status)
			if ok && oks && r < rs {
				sigIdx = i
			}
		}
	}
	next := *c
	next.lastConsumed = now
	u := ackUpdate{c: c}
	release := false
	if sigIdx < 0 {
		// Implicit ack: everything up to the highest completed offset is done.
		if hasHC {
			next.committed = max(c.committed, hc)
		}
		release = next.committed >= c.batchEnd
		if release {
			next.retry = 0
		}
	} else {
		// Explicit signals win: the cursor stops below the signalled message.
		next.committed = max(c.committed, sig-1)
		release = true
		kind := items[sigIdx].Status
		opts := p.q.opts
		switch {
		case kind == ports.AckDLQ || (kind == ports.AckFailed && c.retry >= opts.RetryLimit):
			if kind == ports.AckDLQ || opts.DeadLetterQueue || opts.DLQAfterMaxRetries {
				u.toDLQ, u.sig = true, sig
				u.dead = s.deadLetter(p, g.group, sig, items[sigIdx], c.retry, now)
			}
			next.committed, next.retry = sig, 0 // dead-lettered or dropped: the partition moves on
		case kind == ports.AckFailed:
			next.retry = c.retry + 1
		}
	}
	next.batchEnd = max(c.batchEnd, next.committed)
	if release {
		next.leaseID, next.expires = "", time.Time{}
	}
	u.next, u.release = next, release
	return u
}

// applyAck writes planned updates. Callers hold s.mu.
func (s *Store) applyAck(updates []ackUpdate) {
	for _, u := range updates {
		*u.c = u.next
		if u.dead != nil {
			u.dead.ID = s.newID(idDeadLetter)
			s.dead = append(s.dead, *u.dead)
		}
	}
}

func rollback(msg string) *ports.RollbackError {
	return &ports.RollbackError{Reason: "ack_rejected", Msg: msg}
}

// spanMatch resolves the items of g naming messages of the delivered span
// (c.committed, c.batchEnd]: the k-th item naming a transaction id gets its k-th copy in
// offset order, or the last copy when there are fewer (log_match_v1). Acking the first
// copy of an id pushed twice must not complete everything up to the second.
func (p *partition) spanMatch(items []ports.AckItem, g []int, c *consumer) map[int]int64 {
	offs := make(map[int]int64)
	if c.batchEnd <= c.committed {
		return offs
	}
	copies := make(map[[16]byte][]int64)
	for _, sg := range p.segs {
		if sg.hashGone { // retention deleted the sidecar row (log_span_hashes_v1 reads none)
			continue
		}
		for k := range sg.Count {
			off := sg.BaseOffset + int64(k)
			if off > c.committed && off <= c.batchEnd {
				h := [16]byte(sg.hashes[16*k : 16*k+16])
				copies[h] = append(copies[h], off)
			}
		}
	}
	named := make(map[[16]byte]int)
	for _, i := range g {
		h := items[i].Hash
		cs := copies[h]
		if len(cs) > 0 {
			offs[i] = cs[min(named[h], len(cs)-1)]
		}
		named[h]++
	}
	return offs
}

// resolve finds the newest offset carrying hash h (log_resolve_v1): in the hash sidecar
// entries ending after the cursor first, then in those at or below it committed at or
// after cutoff (the resolution window).
func (p *partition) resolve(h [16]byte, committed int64, cutoff time.Time) (int64, bool) {
	for _, above := range []bool{true, false} {
		best, found := int64(-1), false
		for _, sg := range p.segs {
			end := sg.BaseOffset + int64(sg.Count) - 1
			if sg.hashGone || (end > committed) != above || (!above && sg.CreatedAt.Before(cutoff)) {
				continue
			}
			for k := range sg.Count {
				if bytes.Equal(sg.hashes[16*k:16*k+16], h[:]) {
					best, found = max(best, sg.BaseOffset+int64(k)), true
				}
			}
		}
		if found {
			return best, true
		}
	}
	return 0, false
}

// deadLetter is the dead-letter row of the message at off: a copy of the segment that
// holds it (the last stored one starting at or before off, as the SQL selects it); nil
// when no such segment is stored any more.
func (s *Store) deadLetter(p *partition, group string, off int64, it ports.AckItem, retries int, now time.Time) *ports.DeadLetter {
	var sg *stored
	for i := range p.segs {
		if !p.segs[i].removed && p.segs[i].BaseOffset <= off {
			sg = &p.segs[i]
		}
	}
	if sg == nil {
		return nil
	}
	reason := it.Error
	if reason == "" {
		reason = "Retries exhausted"
	}
	return &ports.DeadLetter{
		DeadLetterInfo: ports.DeadLetterInfo{Queue: p.q.name, Partition: p.name, PartitionID: p.id,
			ConsumerGroup: group, TransactionID: it.TransactionID, ErrorMessage: &reason, RetryCount: retries,
			CreatedAt: sg.CreatedAt, FailedAt: now},
		Offset: off, FrameIndex: int(off - sg.BaseOffset), Blob: bytes.Clone(sg.Blob),
	}
}

// DeadLetters returns copies of the dead letters of a partition ("" = every partition)
// in the order they were written.
func (s *Store) DeadLetters(partitionID string) []ports.DeadLetter {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ports.DeadLetter
	for _, d := range s.dead {
		if partitionID == "" || d.PartitionID == strings.ToLower(partitionID) {
			msg := *d.ErrorMessage
			d.ErrorMessage = &msg
			d.Blob = bytes.Clone(d.Blob)
			out = append(out, d)
		}
	}
	return out
}
