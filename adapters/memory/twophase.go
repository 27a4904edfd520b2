package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

var _ ports.TwoPhaseStore = (*Store)(nil)

// preparedTxn is a transaction Prepare stored and no one resolved yet.
type preparedTxn struct {
	j       *journal    // undoes its pushes
	updates []ackUpdate // its acks, applied at the commit
	at      time.Time
}

// Prepare implements ports.TwoPhaseStore. Unlike PostgreSQL, the fake stores the pushes
// at once (visible before the commit; RollbackPrepared removes them) and holds no locks,
// so it suits callers that, like the conformance suite, touch nothing a prepared
// transaction touched until it is resolved; its acks apply at the commit.
func (s *Store) Prepare(_ context.Context, gid string, segs []ports.Segment, acks []ports.AckItem, hint string) ([]ports.SegmentResult, []ports.AckResult, error) {
	if err := checkSegments(segs); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.prepared[gid]; ok {
		return nil, nil, fmt.Errorf("memory: prepare %s: gid in use: %w", gid, ports.ErrInvalid)
	}
	pushed, acked, j, updates, err := s.transact(segs, acks, hint)
	if err != nil {
		return nil, nil, err
	}
	if s.prepared == nil {
		s.prepared = map[string]preparedTxn{}
	}
	s.prepared[gid] = preparedTxn{j: j, updates: updates, at: s.Now()}
	return pushed, acked, nil
}

// CommitPrepared implements ports.TwoPhaseStore.
func (s *Store) CommitPrepared(_ context.Context, gid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.prepared[gid]; ok {
		delete(s.prepared, gid)
		s.applyAck(p.updates)
	}
	return nil
}

// RollbackPrepared implements ports.TwoPhaseStore.
func (s *Store) RollbackPrepared(_ context.Context, gid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.prepared[gid]; ok {
		delete(s.prepared, gid)
		s.undo(p.j)
	}
	return nil
}

// InDoubt implements ports.TwoPhaseStore.
func (s *Store) InDoubt(_ context.Context, prefix string, before time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for gid, p := range s.prepared {
		if strings.HasPrefix(gid, prefix) && p.at.Before(before) {
			out = append(out, gid)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Decisions is a ports.DecisionLog in memory.
type Decisions struct {
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu       sync.Mutex
	outcomes map[string]decision
}

type decision struct {
	commit bool
	at     time.Time
}

var _ ports.DecisionLog = (*Decisions)(nil)

// Decide implements ports.DecisionLog.
func (d *Decisions) Decide(_ context.Context, gid string, commit bool) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if o, ok := d.outcomes[gid]; ok {
		return o.commit, nil
	}
	if d.outcomes == nil {
		d.outcomes = map[string]decision{}
	}
	d.outcomes[gid] = decision{commit: commit, at: d.now()}
	return commit, nil
}

// Expire implements ports.DecisionLog.
func (d *Decisions) Expire(_ context.Context, before time.Time) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for gid, o := range d.outcomes {
		if o.at.Before(before) {
			delete(d.outcomes, gid)
			n++
		}
	}
	return n, nil
}

func (d *Decisions) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
