package memory

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// Store's ports.TraceStore follows adapters/admin/traces.go (schema/011_traces.sql):
// a trace belongs to the tenant of its partition's queue, is kept until its expiry, and
// names the partition it was recorded for by id only; its queue and partition names are
// read from the partition, "" once it is gone.

var _ ports.TraceStore = (*Store)(nil)

// trace is a recorded trace event.
type trace struct {
	tenant  string
	id      string
	t       ports.NewTrace // a copy of what was recorded
	created time.Time
	expires time.Time
}

// live reports whether the trace is readable at now (its expiry is still ahead).
func (tr *trace) live(now time.Time) bool { return tr.expires.After(now) }

// StoredTraces is the number of traces held, expired ones not deleted yet included.
func (s *Store) StoredTraces() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.traces)
}

// AddTrace implements ports.TraceStore. The expiry batch runs after the insert, as in
// SQL: a trace recorded with a lifetime already over may be among the ones it deletes.
func (s *Store) AddTrace(ctx context.Context, tenant string, t ports.NewTrace, lifetime func(ports.QueueOptions) time.Duration, expire int) (ports.Trace, bool, error) {
	if err := s.begin(ctx, "AddTrace"); err != nil {
		return ports.Trace{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.tenantPartition(tenant, t.PartitionID)
	if p == nil {
		return ports.Trace{}, false, nil
	}
	now := s.Now()
	stored := t
	stored.PartitionID = p.id
	stored.Names = slices.Clone(t.Names)
	stored.Data = bytes.Clone(t.Data)
	tr := &trace{tenant: tenant, id: s.newID(idTrace), t: stored, created: now,
		expires: now.Add(lifetime(s.configOf(p.q).QueueOptions))}
	s.traces = append(s.traces, tr)
	if expire > 0 {
		var expired []*trace
		for _, x := range s.traces {
			if x.expires.Before(now) {
				expired = append(expired, x)
			}
		}
		slices.SortStableFunc(expired, func(a, b *trace) int { return a.expires.Compare(b.expires) })
		drop := make(map[*trace]bool)
		for _, x := range expired[:min(expire, len(expired))] {
			drop[x] = true
		}
		s.traces = slices.DeleteFunc(s.traces, func(x *trace) bool { return drop[x] })
	}
	return ports.Trace{ID: tr.id, NewTrace: t, Queue: p.q.name, Partition: p.name, CreatedAt: now}, true, nil
}

// view is tr as the reads return it: a copy, with its partition's names. Callers hold
// s.mu.
func (s *Store) view(tr *trace) ports.Trace {
	out := ports.Trace{ID: tr.id, NewTrace: tr.t, CreatedAt: tr.created}
	out.Names = append([]string{}, tr.t.Names...)
	out.Data = bytes.Clone(tr.t.Data)
	if p := s.byID[tr.t.PartitionID]; p != nil {
		out.Queue, out.Partition = p.q.name, p.name
	}
	return out
}

// MessageTraces implements ports.TraceStore.
func (s *Store) MessageTraces(ctx context.Context, tenant, partitionID, transactionID string, limit int) ([]ports.Trace, error) {
	if err := s.begin(ctx, "MessageTraces"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	pid := strings.ToLower(partitionID)
	var found []*trace
	for _, tr := range s.traces {
		if tr.tenant == tenant && tr.t.PartitionID == pid && tr.t.TransactionID == transactionID && tr.live(now) {
			found = append(found, tr)
		}
	}
	slices.SortFunc(found, func(a, b *trace) int { return cmp.Or(a.created.Compare(b.created), strings.Compare(a.id, b.id)) })
	out := make([]ports.Trace, 0, min(len(found), max(limit, 0)))
	for _, tr := range found[:min(len(found), max(limit, 0))] {
		out = append(out, s.view(tr))
	}
	return out, nil
}

// TracesByName implements ports.TraceStore.
func (s *Store) TracesByName(ctx context.Context, tenant, name string, limit, offset int) ([]ports.Trace, int64, error) {
	if err := s.begin(ctx, "TracesByName"); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var found []*trace
	for _, tr := range s.traces {
		if tr.tenant == tenant && tr.live(now) && slices.Contains(tr.t.Names, name) {
			found = append(found, tr)
		}
	}
	slices.SortFunc(found, func(a, b *trace) int { return cmp.Or(b.created.Compare(a.created), strings.Compare(b.id, a.id)) })
	from, to := page(len(found), ports.ResourcePage{Limit: limit, Offset: offset})
	out := make([]ports.Trace, 0, to-from)
	for _, tr := range found[from:to] {
		out = append(out, s.view(tr))
	}
	return out, int64(len(found)), nil
}

// TraceNames implements ports.TraceStore.
func (s *Store) TraceNames(ctx context.Context, tenant string, limit, offset int) ([]ports.TraceName, int64, error) {
	if err := s.begin(ctx, "TraceNames"); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	type message struct{ pid, txn string }
	byName := make(map[string]*ports.TraceName)
	messages := make(map[string]map[message]bool)
	for _, tr := range s.traces {
		if tr.tenant != tenant || !tr.live(now) {
			continue
		}
		for _, n := range tr.t.Names {
			tn := byName[n]
			if tn == nil {
				tn = &ports.TraceName{Name: n}
				byName[n], messages[n] = tn, make(map[message]bool)
			}
			tn.Traces++
			messages[n][message{tr.t.PartitionID, tr.t.TransactionID}] = true
			if tr.created.After(tn.LastSeen) {
				tn.LastSeen = tr.created
			}
		}
	}
	out := make([]ports.TraceName, 0, len(byName))
	for n, tn := range byName {
		tn.Messages = int64(len(messages[n]))
		out = append(out, *tn)
	}
	slices.SortFunc(out, func(a, b ports.TraceName) int {
		return cmp.Or(b.LastSeen.Compare(a.LastSeen), strings.Compare(a.Name, b.Name))
	})
	from, to := page(len(out), ports.ResourcePage{Limit: limit, Offset: offset})
	return out[from:to:to], int64(len(out)), nil
}
