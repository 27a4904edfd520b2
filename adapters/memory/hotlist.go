package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

var _ ports.HotlistStore = (*Store)(nil)

// Pending implements ports.HotlistStore as log_pending_v1 does (schema/006_hotlist.sql):
// the queue's partitions with data and either no cursor of group or a cursor before the
// last offset (leased ones too), ascending by id after after, at most limit. It creates
// nothing. Ids order as PostgreSQL orders uuids: byte-wise, which for the canonical
// lowercase text is the string order.
func (s *Store) Pending(_ context.Context, tenant, queue, group, after string, limit int) (ports.PendingPage, error) {
	if tenant == "" {
		tenant = ports.DefaultTenant
	}
	if after != "" {
		u, err := uuid.Parse(after)
		if err != nil {
			return ports.PendingPage{}, fmt.Errorf("memory: pending: after %q: %w", after, ports.ErrInvalid)
		}
		after = u.String()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[tenant+"\x1f"+queue]
	if q == nil {
		return ports.PendingPage{}, nil
	}
	page := ports.PendingPage{QueueExists: true,
		DelayedProcessing: time.Duration(q.opts.DelayedProcessing) * time.Second,
		WindowBuffer:      time.Duration(q.opts.WindowBuffer) * time.Second}
	var found []*partition
	for _, p := range s.byID {
		if p.q != q || p.last < p.logStart || p.id <= after {
			continue
		}
		if c := s.consumers[consumerKey(p.id, group)]; c != nil && c.committed >= p.last {
			continue
		}
		found = append(found, p)
	}
	slices.SortFunc(found, func(a, b *partition) int { return strings.Compare(a.id, b.id) })
	for _, p := range found[:min(len(found), max(limit, 0))] {
		page.Partitions = append(page.Partitions, ports.PendingPartition{ID: p.id, Name: p.name})
	}
	return page, nil
}

// EmptyPartition creates tenant/queue/name (and its queue) with nothing stored, as a
// push provisions a partition before it allocates (or as retention leaves one), and
// returns its id.
func (s *Store) EmptyPartition(tenant, queue, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.partitionOf(tenant, queue, name, nil).id
}
