package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// streams is the state of ports.StreamStore: queries by name and id, and each
// (query, partition) shard's rows by key. Callers hold s.mu.
type streams struct {
	byName map[string]*ports.StreamQuery
	byID   map[string]*ports.StreamQuery
	shards map[string]map[string]ports.StateRow // query id\x1fpartition id -> key -> row
}

func (s *Store) streamState() *streams {
	if s.streams == nil {
		s.streams = &streams{byName: make(map[string]*ports.StreamQuery), byID: make(map[string]*ports.StreamQuery),
			shards: make(map[string]map[string]ports.StateRow)}
	}
	return s.streams
}

// RegisterQuery implements ports.StreamStore as the PostgreSQL adapter does.
func (s *Store) RegisterQuery(_ context.Context, q ports.StreamQuery, reset bool) (ports.Registration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streamState()
	old := st.byName[q.Name]
	if old == nil {
		q.ID = s.newID(idStream)
		st.byName[q.Name], st.byID[q.ID] = &q, &q
		return ports.Registration{Query: q, Fresh: true}, nil
	}
	if old.ConfigHash != q.ConfigHash && !reset {
		return ports.Registration{Query: *old, Mismatch: true}, nil
	}
	out := ports.Registration{Reset: old.ConfigHash != q.ConfigHash}
	if out.Reset {
		for k := range st.shards {
			if strings.HasPrefix(k, old.ID+"\x1f") {
				delete(st.shards, k)
			}
		}
	}
	old.SourceQueue, old.SinkQueue, old.ConfigHash = q.SourceQueue, q.SinkQueue, q.ConfigHash
	out.Query = *old
	return out, nil
}

// StreamState implements ports.StreamStore.
func (s *Store) StreamState(_ context.Context, queryID, partitionID string, f ports.StateFilter) ([]ports.StateRow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []ports.StateRow{}
	for key, r := range s.streamState().shards[queryID+"\x1f"+partitionID] {
		if (len(f.Keys) > 0 && !slices.Contains(f.Keys, key)) || !strings.HasPrefix(key, f.Prefix) ||
			(f.Ripe && !ripe(r.Value, f.RipeAtOrBefore)) {
			continue
		}
		r.Value = slices.Clone(r.Value)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ports.StateRow) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// ripe reports whether v is an object whose windowEnd is a JSON number <= at.
func ripe(v []byte, at float64) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil {
		return false
	}
	var end float64
	raw := obj["windowEnd"]
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &end) != nil {
		return false
	}
	return !math.IsNaN(end) && end <= at
}

// Cycle implements ports.StreamStore: every check first, then the pushes (journaled),
// the ack and the state; a refusal undoes the pushes.
func (s *Store) Cycle(_ context.Context, c ports.Cycle) (ports.CycleResult, error) {
	if err := checkSegments(c.Segments); err != nil {
		return ports.CycleResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.streamState()
	now := s.Now()
	var out ports.CycleResult
	if p := s.byID[c.PartitionID]; p != nil {
		out.Queue = p.q.name
	}
	for _, op := range c.Ops {
		if !op.Delete && st.byID[c.QueryID] == nil {
			return ports.CycleResult{}, &ports.RollbackError{Reason: "unknown_query",
				Msg: "unknown query_id " + c.QueryID + ": register the query first"}
		}
		if !op.Delete && !json.Valid(op.Value) {
			return ports.CycleResult{}, &ports.RollbackError{Reason: "bad_value", Msg: "state value is not valid JSON"}
		}
	}
	j := &journal{marks: make(map[*partition]mark), seq: s.seq}
	if len(c.Segments) > 0 {
		out.Pushed = make([]ports.SegmentResult, len(c.Segments))
		for i, sg := range c.Segments {
			for round := 0; ; round++ {
				if round == 3 {
					s.undo(j)
					return ports.CycleResult{}, fmt.Errorf("memory: cycle segment still duplicate: %w", ports.ErrInvalid)
				}
				r := s.pushOne(sg, now, j)
				out.Pushed[i] = r
				if r.Status == ports.SegmentEncrypted {
					s.undo(j)
					return ports.CycleResult{}, ports.PlainRefusal(sg)
				}
				if r.Status != ports.SegmentDuplicate || c.Resolve == nil {
					break
				}
				rest, ok := c.Resolve(i, r)
				if !ok {
					break
				}
				sg = rest
			}
		}
	}
	if c.Ack != nil {
		res, rb := s.cycleAck(*c.Ack, c.ReleaseLease, now)
		if rb != nil {
			s.undo(j)
			return ports.CycleResult{}, rb
		}
		out.Ack = res
	}
	key := c.QueryID + "\x1f" + c.PartitionID
	for _, op := range c.Ops {
		shard := st.shards[key]
		if op.Delete {
			delete(shard, op.Key)
			continue
		}
		if shard == nil {
			shard = make(map[string]ports.StateRow)
			st.shards[key] = shard
		}
		shard[op.Key] = ports.StateRow{Key: op.Key, Value: compact(op.Value), UpdatedAt: now}
	}
	return out, nil
}

// compact is v without insignificant space, as jsonb prints it back (close enough for
// the suites, which compare values as JSON).
func compact(v []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return slices.Clone(v)
	}
	return b.Bytes()
}

// cycleAck applies a cycle's ack strictly and makes the lease what the cycle asked
// (adapters/postgres ackCycle). Callers hold s.mu.
func (s *Store) cycleAck(it ports.AckItem, release bool, now time.Time) (ports.AckResult, *ports.RollbackError) {
	c := s.consumers[consumerKey(it.PartitionID, it.Group)]
	if c == nil {
		if rb := s.cursorOnly(it, now); rb != nil {
			return ports.AckResult{}, rb
		}
		return ports.AckResult{OK: true, LeaseReleased: release}, nil
	}
	lease, expires := c.leaseID, c.expires
	res, updates, rb := s.planAck([]ports.AckItem{it}, true, "", now)
	if rb != nil {
		switch {
		case strings.HasPrefix(rb.Msg, "QLEASE"):
			rb = &ports.RollbackError{Reason: "ack_rejected", Msg: "Invalid or expired lease"}
		case strings.HasPrefix(rb.Msg, "QTXN"):
			rb = &ports.RollbackError{Reason: "ack_rejected", Msg: "Message not found"}
		}
		return ports.AckResult{}, rb
	}
	r := res[0]
	if !r.OK {
		return ports.AckResult{}, &ports.RollbackError{Reason: "ack_rejected", Msg: r.Error}
	}
	s.applyAck(updates)
	switch {
	case r.DLQ:
	case release && !r.LeaseReleased:
		c.leaseID, c.expires, c.batchEnd = "", time.Time{}, c.committed
		r.LeaseReleased = true
	case !release && r.LeaseReleased:
		if lease != "" && expires.After(now) {
			c.leaseID, c.expires = lease, expires
		}
		r.LeaseReleased = false
	}
	return r, nil
}

// cursorOnly applies a cycle's completed ack on a partition its group has no cursor on
// (adapters/postgres cursorOnly): a cursor at the acked message, no lease. A message the
// partition does not hold, an ack naming a lease or another status is refused and
// changes nothing.
// Callers hold s.mu.
func (s *Store) cursorOnly(it ports.AckItem, now time.Time) *ports.RollbackError {
	p := s.byID[it.PartitionID]
	off, found := int64(0), false
	if p != nil {
		off, found = p.resolve(it.Hash, -1, now)
	}
	switch {
	case !found:
		return &ports.RollbackError{Reason: "ack_rejected", Msg: "Message not found"}
	case it.LeaseID != "": // no cursor holds it
		return &ports.RollbackError{Reason: "ack_rejected", Msg: "Invalid or expired lease"}
	case it.Status != ports.AckCompleted:
		return &ports.RollbackError{Reason: "ack_rejected",
			Msg: "Message not found: no consumer of group " + it.Group + " on partition " + it.PartitionID}
	}
	off = max(off, p.logStart-1)
	s.consumers[consumerKey(it.PartitionID, it.Group)] = &consumer{committed: off, batchEnd: off, start: -1,
		delivered: -1, lastConsumed: now, created: now}
	return nil
}

// dropStreamState deletes the state of the partitions in gone (a queue deletion).
// Callers hold s.mu.
func (s *Store) dropStreamState(gone map[string]bool) {
	if s.streams == nil {
		return
	}
	for k := range s.streams.shards {
		if _, pid, _ := strings.Cut(k, "\x1f"); gone[pid] {
			delete(s.streams.shards, k)
		}
	}
}
