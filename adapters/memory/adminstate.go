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

// What the admin ports of Store (resources.go, groups.go, messages.go, traces.go) share:
// the call prologue, and the rows of one tenant read the way the SQL reads them.

// begin starts a call of an admin port: a context already done fails it, as the
// PostgreSQL adapter fails a statement it cannot run, and AdminFault may fail it.
func (s *Store) begin(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	if s.AdminFault != nil {
		if err := s.AdminFault(op); err != nil {
			return err
		}
	}
	return nil
}

// tenantQueues returns the tenant's queues whose name, namespace and task match (""
// matches any), by name (bytewise, as the broker's databases collate: C). Callers hold
// s.mu.
func (s *Store) tenantQueues(tenant, name, namespace, task string) []*queue {
	var out []*queue
	for _, q := range s.queues {
		if q.tenant == tenant && (name == "" || q.name == name) && (namespace == "" || q.namespace == namespace) &&
			(task == "" || q.task == task) {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b *queue) int { return strings.Compare(a.name, b.name) })
	return out
}

// partitionsOf returns the queue's partitions by name. Callers hold s.mu.
func (s *Store) partitionsOf(q *queue) []*partition {
	var out []*partition
	for _, p := range s.byID {
		if p.q == q {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *partition) int { return strings.Compare(a.name, b.name) })
	return out
}

// tenantPartition returns the partition with id pid when it belongs to the tenant.
// Callers hold s.mu.
func (s *Store) tenantPartition(tenant, pid string) *partition {
	p := s.byID[strings.ToLower(pid)]
	if p == nil || p.q.tenant != tenant {
		return nil
	}
	return p
}

// groupCursor is one cursor of a partition with its group.
type groupCursor struct {
	group string
	c     *consumer
}

// cursorsOf returns the partition's cursors by group name. Callers hold s.mu.
func (s *Store) cursorsOf(pid string) []groupCursor {
	var out []groupCursor
	prefix := pid + "\x1f"
	for k, c := range s.consumers {
		if g, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, groupCursor{group: g, c: c})
		}
	}
	slices.SortFunc(out, func(a, b groupCursor) int { return strings.Compare(a.group, b.group) })
	return out
}

// deadOf returns the dead letters of the partitions keep accepts, in the order they were
// written. Callers hold s.mu.
func (s *Store) deadOf(keep func(p *partition) bool) []*ports.DeadLetter {
	var out []*ports.DeadLetter
	for i := range s.dead {
		if p := s.byID[s.dead[i].PartitionID]; p != nil && keep(p) {
			out = append(out, &s.dead[i])
		}
	}
	return out
}

// segmentCovering returns the stored segment covering off (nil: none, or removed), as
// log_segment_at_v1 finds it.
func (p *partition) segmentCovering(off int64) *stored {
	var best *stored
	for i := range p.segs {
		if sg := &p.segs[i]; !sg.removed && sg.BaseOffset <= off {
			best = sg
		}
	}
	if best == nil || best.BaseOffset+int64(best.Count) <= off {
		return nil
	}
	return best
}

// timePtr is t, or nil for the zero time (SQL NULL).
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// rowLock is a lock on one dead-letter row id that MoveDeadLetter takes, held by the
// moves waiting for it (n).
type rowLock struct {
	mu sync.Mutex
	n  int
}

// lockRow takes the row lock of id, waiting for another move of the same row; unlock
// releases it. Moves of different rows do not wait for each other.
func (s *Store) lockRow(id string) (unlock func()) {
	s.mu.Lock()
	l := s.moving[id]
	if l == nil {
		l = &rowLock{}
		s.moving[id] = l
	}
	l.n++
	s.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.mu.Lock()
		if l.n--; l.n == 0 {
			delete(s.moving, id)
		}
		s.mu.Unlock()
	}
}

// sortBy sorts xs by key, bytewise.
func sortBy[T any](xs []T, key func(T) string) {
	slices.SortFunc(xs, func(a, b T) int { return strings.Compare(key(a), key(b)) })
}
