package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// Store's ports.GroupStore follows schema/010_groups.sql (log_group_positions_v1) and
// adapters/admin/groups.go. One mutex serialises every call, so each read is one
// snapshot and each move one transaction; the locks the SQL takes have nothing to order
// here.

var _ ports.GroupStore = (*Store)(nil)

// groupPair is a (group, queue) pair where the group has a cursor or a subscription.
type groupPair struct {
	group string
	q     *queue
}

// groupPairs returns the tenant's pairs of group ("" = every group), by group then queue
// name, bytewise. Callers hold s.mu.
func (s *Store) groupPairs(tenant, group string) []groupPair {
	seen := make(map[groupPair]bool)
	var out []groupPair
	add := func(pr groupPair) {
		if !seen[pr] && (group == "" || pr.group == group) {
			seen[pr] = true
			out = append(out, pr)
		}
	}
	for _, q := range s.tenantQueues(tenant, "", "", "") {
		for g := range q.groups {
			add(groupPair{g, q})
		}
		for _, p := range s.partitionsOf(q) {
			for _, gc := range s.cursorsOf(p.id) {
				add(groupPair{gc.group, q})
			}
		}
	}
	slices.SortFunc(out, func(a, b groupPair) int {
		return cmp.Or(strings.Compare(a.group, b.group), strings.Compare(a.q.name, b.q.name))
	})
	return out
}

// position is one row of log_group_positions_v1.
type position struct {
	ports.GroupPosition
	cursorCreated time.Time // zero without a cursor
}

// positionsOf returns where the pair stands on every partition of its queue, by
// partition name. Callers hold s.mu.
func (s *Store) positionsOf(pr groupPair, now time.Time) []position {
	sub, subscribed := pr.q.groups[pr.group]
	var out []position
	for _, p := range s.partitionsOf(pr.q) {
		c := s.consumers[consumerKey(p.id, pr.group)]
		pos := position{GroupPosition: ports.GroupPosition{Group: pr.group, Queue: pr.q.name, Partition: p.name,
			PartitionID: p.id, Cursor: c != nil, LastOffset: p.last}}
		switch {
		case c != nil:
			pos.Committed = max(c.committed, p.logStart-1)
			if c.live(now) {
				pos.LeaseID, pos.LeaseExpiresAt = c.leaseID, timePtr(c.expires)
			}
			pos.LastConsumedAt, pos.cursorCreated = timePtr(c.lastConsumed), c.created
		case !subscribed || sub.mode == ports.SubscribeAll:
			pos.Committed = p.logStart - 1
		case sub.mode == ports.SubscribeTimestamp && !p.created.Before(sub.from):
			// No segment of a partition younger than the instant can be older than it (the
			// SQL's shortcut; "new" cuts at the commit order instead, see subscription).
			pos.Committed = p.logStart - 1
		default:
			pos.Committed = sub.seed(p)
		}
		pos.Lag = max(p.last-pos.Committed, 0)
		if pos.Lag > 0 {
			pos.OldestUnconsumedAt = p.oldestAfter(pos.Committed)
		}
		out = append(out, pos)
	}
	return out
}

// oldestAfter is the commit time of the segment holding committed+1 (segments are in
// offset order, so it is the oldest unconsumed one), or of the first segment after it
// when that one is gone; nil when there is none.
func (p *partition) oldestAfter(committed int64) *time.Time {
	var at *time.Time
	for i := range p.segs {
		if sg := &p.segs[i]; !sg.removed && sg.BaseOffset <= committed+1 {
			at = timePtr(sg.CreatedAt)
		}
	}
	if at != nil {
		return at
	}
	for i := range p.segs {
		if sg := &p.segs[i]; !sg.removed && sg.BaseOffset > committed {
			return timePtr(sg.CreatedAt)
		}
	}
	return nil
}

// GroupSummaries implements ports.GroupStore.
func (s *Store) GroupSummaries(ctx context.Context, tenant string, pg ports.GroupPage) (time.Time, []ports.GroupSummary, error) {
	if err := s.begin(ctx, "GroupSummaries"); err != nil {
		return time.Time{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	pairs := s.groupPairs(tenant, "")
	from, to := page(len(pairs), ports.ResourcePage(pg))
	out := make([]ports.GroupSummary, 0, to-from)
	for _, pr := range pairs[from:to] {
		sum := ports.GroupSummary{Group: pr.group, Queue: pr.q.name}
		var last time.Time
		later := func(t time.Time) {
			if t.After(last) {
				last = t
			}
		}
		for _, pos := range s.positionsOf(pr, now) {
			if pos.Cursor {
				sum.Cursors++
			}
			if pos.Lag > 0 {
				sum.PartitionsWithLag++
				sum.TotalLag += pos.Lag
			}
			if o := pos.OldestUnconsumedAt; o != nil && (sum.OldestUnconsumedAt == nil || o.Before(*sum.OldestUnconsumedAt)) {
				sum.OldestUnconsumedAt = o
			}
			if pos.LeaseID != "" {
				sum.LiveLeases++
			}
			if pos.LastConsumedAt != nil {
				later(*pos.LastConsumedAt)
			}
			later(pos.cursorCreated)
		}
		if sub, ok := pr.q.groups[pr.group]; ok {
			later(sub.created)
			gs := &ports.GroupSubscription{Mode: sub.mode, CreatedAt: sub.created}
			if sub.mode != ports.SubscribeAll {
				gs.From = timePtr(sub.from)
			}
			sum.Subscription = gs
		}
		sum.LastActivity = timePtr(last)
		out = append(out, sum)
	}
	return now, out, nil
}

// GroupPositions implements ports.GroupStore.
func (s *Store) GroupPositions(ctx context.Context, tenant, group string, pg ports.GroupPage) (time.Time, []ports.GroupPosition, error) {
	if err := s.begin(ctx, "GroupPositions"); err != nil {
		return time.Time{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var all []ports.GroupPosition
	for _, pr := range s.groupPairs(tenant, group) {
		for _, pos := range s.positionsOf(pr, now) {
			if pos.Cursor || pos.Lag > 0 {
				all = append(all, pos.GroupPosition)
			}
		}
	}
	from, to := page(len(all), ports.ResourcePage(pg))
	return now, all[from:to:to], nil
}

// LaggingPositions implements ports.GroupStore.
func (s *Store) LaggingPositions(ctx context.Context, tenant string, minLag time.Duration, limit int) (time.Time, []ports.GroupPosition, error) {
	if err := s.begin(ctx, "LaggingPositions"); err != nil {
		return time.Time{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	cutoff := now.Add(-minLag)
	var out []ports.GroupPosition
	for _, pr := range s.groupPairs(tenant, "") {
		for _, pos := range s.positionsOf(pr, now) {
			if o := pos.OldestUnconsumedAt; o != nil && !o.After(cutoff) {
				out = append(out, pos.GroupPosition)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b ports.GroupPosition) int {
		return cmp.Or(a.OldestUnconsumedAt.Compare(*b.OldestUnconsumedAt), strings.Compare(a.Group, b.Group),
			strings.Compare(a.Queue, b.Queue), strings.Compare(a.Partition, b.Partition))
	})
	return now, out[:min(max(limit, 0), len(out))], nil
}

// DeleteGroup implements ports.GroupStore.
func (s *Store) DeleteGroup(ctx context.Context, tenant, group, queue string, subscriptions bool) (ports.GroupDeletion, error) {
	if err := s.begin(ctx, "DeleteGroup"); err != nil {
		return ports.GroupDeletion{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	qs := s.tenantQueues(tenant, queue, "", "")
	if queue != "" && len(qs) == 0 {
		return ports.GroupDeletion{}, nil
	}
	d := ports.GroupDeletion{QueueFound: true}
	for _, q := range qs {
		for _, p := range s.partitionsOf(q) {
			key := consumerKey(p.id, group)
			if s.consumers[key] != nil {
				delete(s.consumers, key)
				d.Cursors++
			}
		}
		if _, ok := q.groups[group]; ok && subscriptions {
			delete(q.groups, group)
			d.Subscriptions++
		}
	}
	return d, nil
}

// SetGroupSubscription implements ports.GroupStore.
func (s *Store) SetGroupSubscription(ctx context.Context, tenant, group string, from time.Time) (int, error) {
	if err := s.begin(ctx, "SetGroupSubscription"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.tenantQueues(tenant, "", "", "") {
		if sub, ok := q.groups[group]; ok {
			q.groups[group] = subscription{mode: ports.SubscribeTimestamp, from: from, created: sub.created}
			n++
		}
	}
	return n, nil
}

// SeekGroup implements ports.GroupStore.
func (s *Store) SeekGroup(ctx context.Context, tenant string, sk ports.GroupSeek) (ports.GroupSeekResult, error) {
	if err := s.begin(ctx, "SeekGroup"); err != nil {
		return ports.GroupSeekResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[tenant+"\x1f"+sk.Queue]
	if q == nil {
		return ports.GroupSeekResult{}, nil
	}
	r := ports.GroupSeekResult{QueueFound: true}
	now := s.Now()
	for _, p := range s.partitionsOf(q) {
		if sk.Partition != "" && p.name != sk.Partition {
			continue
		}
		r.PartitionFound = sk.Partition != ""
		target := p.last
		if !sk.ToEnd {
			target = -1
			for i := range p.segs {
				if sg := &p.segs[i]; !sg.removed && sg.CreatedAt.Before(sk.Timestamp) {
					target = sg.BaseOffset + int64(sg.Count) - 1
				}
			}
		}
		target = max(target, p.logStart-1)
		key := consumerKey(p.id, sk.Group)
		c := s.consumers[key]
		if c == nil {
			c = &consumer{created: now}
			s.consumers[key] = c
		} else if c.live(now) {
			r.LeasesCleared++
		}
		// The span a live lease held is the seek's to skip or to deliver again, as a first
		// attempt: the lease, the retry budget and the delivery count go.
		c.committed, c.batchEnd, c.leaseID, c.expires = target, target, "", time.Time{}
		c.retry, c.start, c.attempt, c.delivered = 0, -1, 0, -1
		r.Partitions++
	}
	return r, nil
}
