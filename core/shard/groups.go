package shard

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// Groups is the admin API's ports.GroupStore over several shards. A consumer group is a
// name, not a row of one database: it has cursors and subscriptions on the queues of
// every shard it consumes from. Reads ask every shard and merge, in the order and pages
// a single database would answer; a move naming a queue runs on the queue's shard, one
// naming none on every shard. A shard that fails fails the call with *UnreachableError.
type Groups struct {
	shards []ports.GroupStore // index = shard number
	placer *Placer
}

var _ ports.GroupStore = (*Groups)(nil)

// NewGroups returns the group store over shards (index = shard number) placed by placer.
func NewGroups(shards []ports.GroupStore, placer *Placer) *Groups {
	return &Groups{shards: shards, placer: placer}
}

// groupRead is one shard's answer to a read: its clock and its rows.
type groupRead[T any] struct {
	asOf time.Time
	rows []T
}

// earliest is the earliest of the shards' clocks at their reads, so that the merged
// answer claims no more than every shard saw. A shard that returned no row may report
// no clock (the PostgreSQL store reads it with the rows): it is left out.
func earliest[T any](reads []groupRead[T]) time.Time {
	var at time.Time
	for _, r := range reads {
		if !r.asOf.IsZero() && (at.IsZero() || r.asOf.Before(at)) {
			at = r.asOf
		}
	}
	return at
}

// rowsOf is the shards' rows, by shard.
func rowsOf[T any](reads []groupRead[T]) [][]T {
	pages := make([][]T, len(reads))
	for n, r := range reads {
		pages[n] = r.rows
	}
	return pages
}

// GroupSummaries implements ports.GroupStore: every shard's (group, queue) pairs merged
// by group then queue name, bytewise, as the stores order them. A queue lives on one
// shard, so each pair comes from one shard; should two shards both answer for a pair
// (a queue caught between them), their rows are combined into one by addSummaries. asOf
// is the earliest of the shards' (see earliest).
func (g *Groups) GroupSummaries(ctx context.Context, tenant string, page ports.GroupPage) (time.Time, []ports.GroupSummary, error) {
	each := ports.GroupPage{Limit: pageEnd(page.Offset, page.Limit)}
	reads, err := askAll(g.shards, func(_ int, s ports.GroupStore) (groupRead[ports.GroupSummary], error) {
		asOf, rows, err := s.GroupSummaries(ctx, tenant, each)
		return groupRead[ports.GroupSummary]{asOf, rows}, err
	})
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("shard: group summaries: %w", err)
	}
	rows := mergeCombined(rowsOf(reads), func(a, b ports.GroupSummary) int {
		return cmp.Or(strings.Compare(a.Group, b.Group), strings.Compare(a.Queue, b.Queue))
	}, addSummaries, page.Offset, page.Limit)
	return earliest(reads), rows, nil
}

// addSummaries combines two shards' summaries of one (group, queue) pair: the counters
// add up, the oldest unconsumed message is the older of the two, the last activity the
// later, and the subscription is the one recorded first.
func addSummaries(a, b ports.GroupSummary) ports.GroupSummary {
	a.Cursors += b.Cursors
	a.PartitionsWithLag += b.PartitionsWithLag
	a.TotalLag += b.TotalLag
	a.LiveLeases += b.LiveLeases
	if b.OldestUnconsumedAt != nil && (a.OldestUnconsumedAt == nil || b.OldestUnconsumedAt.Before(*a.OldestUnconsumedAt)) {
		a.OldestUnconsumedAt = b.OldestUnconsumedAt
	}
	if b.LastActivity != nil && (a.LastActivity == nil || b.LastActivity.After(*a.LastActivity)) {
		a.LastActivity = b.LastActivity
	}
	if b.Subscription != nil && (a.Subscription == nil || b.Subscription.CreatedAt.Before(a.Subscription.CreatedAt)) {
		a.Subscription = b.Subscription
	}
	return a
}

// GroupPositions implements ports.GroupStore: the group's positions on every shard,
// merged by queue then partition name, bytewise (then by partition id, a total order
// should a queue ever answer from two shards).
func (g *Groups) GroupPositions(ctx context.Context, tenant, group string, page ports.GroupPage) (time.Time, []ports.GroupPosition, error) {
	each := ports.GroupPage{Limit: pageEnd(page.Offset, page.Limit)}
	reads, err := askAll(g.shards, func(_ int, s ports.GroupStore) (groupRead[ports.GroupPosition], error) {
		asOf, rows, err := s.GroupPositions(ctx, tenant, group, each)
		return groupRead[ports.GroupPosition]{asOf, rows}, err
	})
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("shard: group positions: %w", err)
	}
	rows := MergePage(rowsOf(reads), func(a, b ports.GroupPosition) int {
		return cmp.Or(strings.Compare(a.Queue, b.Queue), strings.Compare(a.Partition, b.Partition),
			strings.Compare(a.PartitionID, b.PartitionID))
	}, page.Offset, page.Limit)
	return earliest(reads), rowsOrEmpty(rows), nil
}

// LaggingPositions implements ports.GroupStore: each shard's limit oldest lagging
// positions, merged oldest first (then by group, queue and partition name, bytewise, as
// the stores break ties), and the first limit of them. Each shard measures minLag from
// its own clock.
func (g *Groups) LaggingPositions(ctx context.Context, tenant string, minLag time.Duration, limit int) (time.Time, []ports.GroupPosition, error) {
	limit = max(limit, 0)
	reads, err := askAll(g.shards, func(_ int, s ports.GroupStore) (groupRead[ports.GroupPosition], error) {
		asOf, rows, err := s.LaggingPositions(ctx, tenant, minLag, limit)
		return groupRead[ports.GroupPosition]{asOf, rows}, err
	})
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("shard: lagging positions: %w", err)
	}
	rows := MergePage(rowsOf(reads), func(a, b ports.GroupPosition) int {
		return cmp.Or(compareInstants(a.OldestUnconsumedAt, b.OldestUnconsumedAt), strings.Compare(a.Group, b.Group),
			strings.Compare(a.Queue, b.Queue), strings.Compare(a.Partition, b.Partition),
			strings.Compare(a.PartitionID, b.PartitionID))
	}, 0, limit)
	return earliest(reads), rowsOrEmpty(rows), nil
}

// compareInstants orders optional instants, none first (a lagging position always has
// one; the order only has to be total).
func compareInstants(a, b *time.Time) int {
	switch {
	case a != nil && b != nil:
		return a.Compare(*b)
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	default:
		return 1
	}
}

// DeleteGroup implements ports.GroupStore: on one queue, on its shard; on every queue,
// on every shard, the rows each deleted added up. A shard that fails fails the call,
// though the others have deleted theirs: deleting again deletes the rest.
func (g *Groups) DeleteGroup(ctx context.Context, tenant, group, queue string, subscriptions bool) (ports.GroupDeletion, error) {
	del := func(s ports.GroupStore) (ports.GroupDeletion, error) {
		return s.DeleteGroup(ctx, tenant, group, queue, subscriptions)
	}
	if queue != "" {
		n, err := g.placer.Holder(ctx, tenant, queue)
		if err != nil {
			return ports.GroupDeletion{}, fmt.Errorf("shard: delete group: %w", err)
		}
		d, err := askOne(g.shards, n, del)
		if err != nil {
			return ports.GroupDeletion{}, fmt.Errorf("shard: delete group: %w", err)
		}
		return d, nil
	}
	got, err := askAll(g.shards, func(_ int, s ports.GroupStore) (ports.GroupDeletion, error) { return del(s) })
	if err != nil {
		return ports.GroupDeletion{}, fmt.Errorf("shard: delete group: %w", err)
	}
	d := ports.GroupDeletion{QueueFound: true} // always, for a deletion on every queue
	for _, x := range got {
		d.Cursors += x.Cursors
		d.Subscriptions += x.Subscriptions
	}
	return d, nil
}

// SetGroupSubscription implements ports.GroupStore: the group may be subscribed to
// queues of every shard, so every shard updates its own, and the counts add up. A shard
// that fails fails the call, though the others have updated theirs: setting again
// updates the rest.
func (g *Groups) SetGroupSubscription(ctx context.Context, tenant, group string, from time.Time) (int, error) {
	got, err := askAll(g.shards, func(_ int, s ports.GroupStore) (int, error) {
		return s.SetGroupSubscription(ctx, tenant, group, from)
	})
	if err != nil {
		return 0, fmt.Errorf("shard: set group subscription: %w", err)
	}
	updated := 0
	for _, k := range got {
		updated += k
	}
	return updated, nil
}

// SeekGroup implements ports.GroupStore on the queue's shard. A seek naming no queue
// (which the stores answer as a queue not found) goes to every shard: the cursors set
// and leases cleared add up, and a queue or partition is found when any shard found it.
func (g *Groups) SeekGroup(ctx context.Context, tenant string, s ports.GroupSeek) (ports.GroupSeekResult, error) {
	seek := func(st ports.GroupStore) (ports.GroupSeekResult, error) { return st.SeekGroup(ctx, tenant, s) }
	if s.Queue != "" {
		n, err := g.placer.Holder(ctx, tenant, s.Queue)
		if err != nil {
			return ports.GroupSeekResult{}, fmt.Errorf("shard: seek group: %w", err)
		}
		r, err := askOne(g.shards, n, seek)
		if err != nil {
			return ports.GroupSeekResult{}, fmt.Errorf("shard: seek group: %w", err)
		}
		return r, nil
	}
	got, err := askAll(g.shards, func(_ int, st ports.GroupStore) (ports.GroupSeekResult, error) { return seek(st) })
	if err != nil {
		return ports.GroupSeekResult{}, fmt.Errorf("shard: seek group: %w", err)
	}
	var r ports.GroupSeekResult
	for _, x := range got {
		r.QueueFound = r.QueueFound || x.QueueFound
		r.PartitionFound = r.PartitionFound || x.PartitionFound
		r.Partitions += x.Partitions
		r.LeasesCleared += x.LeasesCleared
	}
	return r, nil
}
