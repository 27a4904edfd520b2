package admin

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// GroupsOptions tunes Groups; zero values take the defaults in brackets.
type GroupsOptions struct {
	// Changes hears of every group deletion and seek once it committed [none]: the
	// hot-list forgets the group's rings, the waker wakes the group's parked pops.
	Changes *notify.GroupChanges
	// LaggingAfter: a group whose oldest unconsumed message on a queue is older than this
	// is Lagging there [300 s] (docs/api.md §5.9).
	LaggingAfter time.Duration
	// DeadAfter: a group with messages to read on a queue, no live lease there and no
	// activity there (pop, ack, cursor or subscription created) for this long is Dead
	// there [1 h].
	DeadAfter time.Duration
	// MinLag is the lagging listing's threshold when the request gives none [1 h]
	// (docs/api.md §5.9: minLagSeconds 3600).
	MinLag time.Duration
	// MaxLimit bounds every page (a larger limit is clamped to it), and is the size of
	// a page the request does not size [1000].
	MaxLimit int
	Logger   *slog.Logger
	// ShareWindow is how long one computation of the group listing serves every caller
	// with the same page (see listing) [0: off; the server passes QUEEN_ADMIN_SHARE_MS].
	ShareWindow time.Duration
	Now         func() time.Time // [time.Now]
}

func (o *GroupsOptions) defaults() {
	if o.LaggingAfter <= 0 {
		o.LaggingAfter = 300 * time.Second
	}
	if o.DeadAfter <= 0 {
		o.DeadAfter = time.Hour
	}
	if o.MinLag <= 0 {
		o.MinLag = time.Hour
	}
	if o.MaxLimit <= 0 {
		o.MaxLimit = 1000
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Groups is the consumer-group administration use case (docs/api.md §5.9): listings with
// lag and state, deletion, subscription updates and seeks. See doc.go for the rules and
// the locks each operation takes.
type Groups struct {
	store ports.GroupStore
	opts  GroupsOptions
	lists *listing[[]GroupSummary]
}

// NewGroups returns the use case over store.
func NewGroups(store ports.GroupStore, opts GroupsOptions) *Groups {
	opts.defaults()
	return &Groups{store: store, opts: opts, lists: newListing[[]GroupSummary](opts.ShareWindow, opts.Now)}
}

// Forget drops the shared group listings: the next call of each reads again.
func (g *Groups) Forget() { g.lists.forget() }

// QueueChanged hears of a configure or deletion this broker made: the listing shows it
// at once.
func (g *Groups) QueueChanged(notify.QueueChange) { g.Forget() }

// GroupChanged hears of a group deletion or seek this broker made.
func (g *Groups) GroupChanged(notify.GroupChange) { g.Forget() }

// GroupHealth is the state (docs/api.md "state") of a consumer group on one queue.
type GroupHealth string

// The states of a group on a queue (see doc.go, "Consumer groups").
const (
	GroupStable  GroupHealth = "Stable"
	GroupLagging GroupHealth = "Lagging"
	GroupDead    GroupHealth = "Dead"
)

// GroupPageQuery is the paging of a listing as the client gave it.
type GroupPageQuery struct {
	Limit  *int // nil: GroupsOptions.MaxLimit
	Offset *int // nil: 0
}

// GroupSummary is one (group, queue) entry of the group listing.
type GroupSummary struct {
	Name, Queue string
	// Members is the number of partitions where the group has a cursor, as the
	// reference counts it (docs/api.md §5.9 keeps the key for compatibility; it is not a count
	// of consumer processes). PartitionCursors is the same number.
	Members, PartitionCursors int
	PartitionsWithLag         int
	TotalLag                  int64         // messages
	MaxTimeLag                time.Duration // age of the oldest unconsumed message; 0 without lag
	State                     GroupHealth
	// Subscription is nil when the group has none recorded on the queue (queue mode).
	Subscription *ports.GroupSubscription
}

// List returns a page of the tenant's (group, queue) pairs, by group then queue name.
func (g *Groups) List(ctx context.Context, tenant string, q GroupPageQuery) ([]GroupSummary, error) {
	page, err := g.page(q)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s\x1f%d\x1f%d", tenant, page.Limit, page.Offset)
	return g.lists.get(ctx, key, func(ctx context.Context) ([]GroupSummary, error) { return g.list(ctx, tenant, page) })
}

func (g *Groups) list(ctx context.Context, tenant string, page ports.GroupPage) ([]GroupSummary, error) {
	asOf, rows, err := g.store.GroupSummaries(ctx, tenant, page)
	if err != nil {
		return nil, fmt.Errorf("list consumer groups: %w", err)
	}
	out := make([]GroupSummary, len(rows))
	for i, r := range rows {
		lag := g.age(asOf, r.OldestUnconsumedAt)
		out[i] = GroupSummary{
			Name: r.Group, Queue: r.Queue, Members: r.Cursors, PartitionCursors: r.Cursors,
			PartitionsWithLag: r.PartitionsWithLag, TotalLag: r.TotalLag, MaxTimeLag: lag,
			State: g.state(r, asOf, lag), Subscription: r.Subscription,
		}
	}
	return out, nil
}

// state classifies a group on a queue: Dead when it has messages to read and nothing
// shows a consumer (no live lease, no activity for DeadAfter); else Lagging when its
// oldest unconsumed message is older than LaggingAfter; else Stable (a group with nothing
// to read is Stable, however long ago it last consumed).
func (g *Groups) state(r ports.GroupSummary, asOf time.Time, timeLag time.Duration) GroupHealth {
	idle := r.LastActivity == nil || asOf.Sub(*r.LastActivity) >= g.opts.DeadAfter
	switch {
	case r.TotalLag > 0 && r.LiveLeases == 0 && idle:
		return GroupDead
	case timeLag > g.opts.LaggingAfter:
		return GroupLagging
	default:
		return GroupStable
	}
}

// GroupPartition is where a group stands on one partition of a queue.
type GroupPartition struct {
	Partition, PartitionID string
	WorkerID               string     // the live lease's holder; "" when none
	LastConsumedAt         *time.Time // nil: never popped or acked there
	// TotalConsumed is the offsets the group is past on the partition (Committed + 1:
	// acknowledged, dead-lettered, or skipped by its subscription or a seek); 0 where it
	// has no cursor yet.
	TotalConsumed int64
	OffsetLag     int64
	TimeLag       time.Duration
	LeaseActive   bool
}

// GroupQueue is one queue of a group's description, with its partitions by name.
type GroupQueue struct {
	Queue      string
	Partitions []GroupPartition
}

// Describe returns a page of where group stands, by queue then partition name: every
// partition where it has a cursor, and those of its queues where it has none yet but
// has messages to read. An unknown group has none (an empty slice).
func (g *Groups) Describe(ctx context.Context, tenant, group string, q GroupPageQuery) ([]GroupQueue, error) {
	if err := g.checkName("group", "consumer group", group); err != nil {
		return nil, err
	}
	page, err := g.page(q)
	if err != nil {
		return nil, err
	}
	asOf, rows, err := g.store.GroupPositions(ctx, tenant, group, page)
	if err != nil {
		return nil, fmt.Errorf("describe consumer group: %w", err)
	}
	var out []GroupQueue
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Queue != r.Queue {
			out = append(out, GroupQueue{Queue: r.Queue})
		}
		p := GroupPartition{
			Partition: r.Partition, PartitionID: r.PartitionID, WorkerID: r.LeaseID,
			LastConsumedAt: r.LastConsumedAt, OffsetLag: r.Lag, TimeLag: g.age(asOf, r.OldestUnconsumedAt),
			LeaseActive: r.LeaseID != "",
		}
		if r.Cursor {
			p.TotalConsumed = r.Committed + 1
		}
		q := &out[len(out)-1]
		q.Partitions = append(q.Partitions, p)
	}
	return out, nil
}

// LaggingQuery is the lagging listing's request as the client gave it.
type LaggingQuery struct {
	MinLagSeconds *int // nil: GroupsOptions.MinLag
	Limit         *int // nil: GroupsOptions.MaxLimit
}

// LaggingPartition is one partition where a group's oldest unconsumed message is older
// than the listing's threshold.
type LaggingPartition struct {
	Group, Queue, Partition, PartitionID string
	WorkerID                             string // the live lease's holder; "" when none
	OffsetLag                            int64
	TimeLag                              time.Duration
	OldestUnconsumedAt                   time.Time
	LastConsumedAt                       *time.Time
}

// maxLagSeconds bounds minLagSeconds to what a time.Duration holds with room to spare
// (about 68 years).
const maxLagSeconds = math.MaxInt32

// Lagging returns the partitions, of every group, whose oldest unconsumed message is at
// least MinLagSeconds old, oldest first.
func (g *Groups) Lagging(ctx context.Context, tenant string, q LaggingQuery) ([]LaggingPartition, error) {
	minLag := g.opts.MinLag
	if q.MinLagSeconds != nil {
		s := *q.MinLagSeconds
		if s < 0 || s > maxLagSeconds {
			return nil, inputErrorf("minLagSeconds", "minLagSeconds must be between 0 and %d, got %d", maxLagSeconds, s)
		}
		minLag = time.Duration(s) * time.Second
	}
	page, err := g.page(GroupPageQuery{Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	asOf, rows, err := g.store.LaggingPositions(ctx, tenant, minLag, page.Limit)
	if err != nil {
		return nil, fmt.Errorf("lagging consumer groups: %w", err)
	}
	out := make([]LaggingPartition, 0, len(rows))
	for _, r := range rows {
		if r.OldestUnconsumedAt == nil {
			continue // not lagging: the store returns only rows with an oldest message
		}
		out = append(out, LaggingPartition{
			Group: r.Group, Queue: r.Queue, Partition: r.Partition, PartitionID: r.PartitionID,
			WorkerID: r.LeaseID, OffsetLag: r.Lag, TimeLag: g.age(asOf, r.OldestUnconsumedAt),
			OldestUnconsumedAt: *r.OldestUnconsumedAt, LastConsumedAt: r.LastConsumedAt,
		})
	}
	return out, nil
}

// GroupDeleted is the outcome of a group deletion.
type GroupDeleted struct {
	Group, Queue      string // Queue "" for a deletion on every queue
	DeletedPartitions int    // cursors deleted, one per partition
	MetadataDeleted   bool   // the request's deleteMetadata
}

// Delete deletes group's cursors on every queue of the tenant, and with deleteMetadata
// its subscriptions too; its next pops re-create its cursors from its subscription (the
// recorded one, or the pop's when it was deleted). Live leases go with the cursors: see
// doc.go.
func (g *Groups) Delete(ctx context.Context, tenant, group string, deleteMetadata bool) (GroupDeleted, error) {
	if err := g.checkName("group", "consumer group", group); err != nil {
		return GroupDeleted{}, err
	}
	return g.delete(ctx, tenant, group, "", deleteMetadata)
}

// DeleteOnQueue is Delete on one queue; an unknown queue is ErrNotFound ("Queue not
// found").
func (g *Groups) DeleteOnQueue(ctx context.Context, tenant, group, queue string, deleteMetadata bool) (GroupDeleted, error) {
	if err := g.checkName("group", "consumer group", group); err != nil {
		return GroupDeleted{}, err
	}
	if err := g.checkName("queue", "queue", queue); err != nil {
		return GroupDeleted{}, err
	}
	return g.delete(ctx, tenant, group, queue, deleteMetadata)
}

func (g *Groups) delete(ctx context.Context, tenant, group, queue string, deleteMetadata bool) (GroupDeleted, error) {
	d, err := g.store.DeleteGroup(ctx, tenant, group, queue, deleteMetadata)
	if err != nil {
		return GroupDeleted{}, fmt.Errorf("delete consumer group: %w", err)
	}
	if !d.QueueFound {
		return GroupDeleted{}, notFound("Queue not found")
	}
	g.opts.Changes.Announce(notify.GroupChange{Tenant: tenant, Queue: queue, Group: group, Kind: notify.GroupDeleted})
	g.opts.Logger.Info("admin: consumer group deleted", "group", group, "queue", queue,
		"cursors", d.Cursors, "subscriptions", d.Subscriptions)
	return GroupDeleted{Group: group, Queue: queue, DeletedPartitions: d.Cursors, MetadataDeleted: deleteMetadata}, nil
}

// SubscriptionUpdated is the outcome of a subscription update.
type SubscriptionUpdated struct {
	Group     string
	Timestamp time.Time
	Updated   int // subscriptions changed, one per queue the group is subscribed to
}

// UpdateSubscription makes timestamp the subscription of group on every queue it is
// subscribed to: cursors it creates later (on partitions it has not popped yet, new ones
// included) start at the first message committed at or after timestamp. Its existing
// cursors do not move (a seek moves them). A nil timestamp is refused.
func (g *Groups) UpdateSubscription(ctx context.Context, tenant, group string, timestamp *time.Time) (SubscriptionUpdated, error) {
	if err := g.checkName("group", "consumer group", group); err != nil {
		return SubscriptionUpdated{}, err
	}
	if timestamp == nil {
		return SubscriptionUpdated{}, inputErrorf("subscriptionTimestamp", "subscriptionTimestamp is required")
	}
	n, err := g.store.SetGroupSubscription(ctx, tenant, group, *timestamp)
	if err != nil {
		return SubscriptionUpdated{}, fmt.Errorf("update consumer group subscription: %w", err)
	}
	g.opts.Logger.Info("admin: consumer group subscription updated", "group", group, "from", *timestamp, "queues", n)
	g.Forget() // the listing shows subscriptions (nothing else needs to hear of this one)
	return SubscriptionUpdated{Group: group, Timestamp: *timestamp, Updated: n}, nil
}

// SeekTarget is where a seek moves cursors: exactly one of ToEnd or Timestamp.
type SeekTarget struct {
	ToEnd     bool
	Timestamp *time.Time
}

// SeekOutcome is the outcome of a seek.
type SeekOutcome struct {
	Group, Queue, Partition string // Partition "" for a seek of every partition
	Target                  SeekTarget
	PartitionsUpdated       int
}

// Seek moves group's cursors on every partition of queue (creating those it does not
// have yet) to the partition's last offset (ToEnd: the backlog is skipped) or to just
// before the first message committed at or after Timestamp (a replay; an early
// timestamp seeks to the beginning). Live leases are cleared: see doc.go. An unknown
// queue is ErrNotFound ("Queue not found").
func (g *Groups) Seek(ctx context.Context, tenant, group, queue string, to SeekTarget) (SeekOutcome, error) {
	return g.seek(ctx, tenant, ports.GroupSeek{Group: group, Queue: queue}, to)
}

// SeekPartition is Seek on one partition; an unknown queue or partition is ErrNotFound
// ("Partition not found").
func (g *Groups) SeekPartition(ctx context.Context, tenant, group, queue, partition string, to SeekTarget) (SeekOutcome, error) {
	if err := g.checkName("partition", "partition", partition); err != nil {
		return SeekOutcome{}, err
	}
	return g.seek(ctx, tenant, ports.GroupSeek{Group: group, Queue: queue, Partition: partition}, to)
}

func (g *Groups) seek(ctx context.Context, tenant string, s ports.GroupSeek, to SeekTarget) (SeekOutcome, error) {
	if err := g.checkName("group", "consumer group", s.Group); err != nil {
		return SeekOutcome{}, err
	}
	if err := g.checkName("queue", "queue", s.Queue); err != nil {
		return SeekOutcome{}, err
	}
	switch {
	case !to.ToEnd && to.Timestamp == nil:
		return SeekOutcome{}, inputErrorf("toEnd", "Must specify toEnd=true or a timestamp")
	case to.ToEnd && to.Timestamp != nil:
		return SeekOutcome{}, inputErrorf("timestamp", "toEnd=true and a timestamp are exclusive: give one")
	case to.ToEnd:
		s.ToEnd = true
	default:
		s.Timestamp = *to.Timestamp
	}
	r, err := g.store.SeekGroup(ctx, tenant, s)
	if err != nil {
		return SeekOutcome{}, fmt.Errorf("seek consumer group: %w", err)
	}
	switch {
	case s.Partition != "" && !r.PartitionFound:
		return SeekOutcome{}, notFound("Partition not found")
	case !r.QueueFound:
		return SeekOutcome{}, notFound("Queue not found")
	}
	g.opts.Changes.Announce(notify.GroupChange{Tenant: tenant, Queue: s.Queue, Group: s.Group, Partition: s.Partition,
		Kind: notify.GroupSeeked})
	g.opts.Logger.Info("admin: consumer group seeked", "group", s.Group, "queue", s.Queue, "partition", s.Partition,
		"to_end", s.ToEnd, "timestamp", to.Timestamp, "cursors", r.Partitions, "leases_cleared", r.LeasesCleared)
	return SeekOutcome{Group: s.Group, Queue: s.Queue, Partition: s.Partition, Target: to, PartitionsUpdated: r.Partitions}, nil
}

// page validates q, fills in the defaults and clamps the limit to MaxLimit.
func (g *Groups) page(q GroupPageQuery) (ports.GroupPage, error) {
	p := ports.GroupPage{Limit: g.opts.MaxLimit}
	if q.Limit != nil {
		p.Limit = *q.Limit
	}
	if p.Limit < 0 {
		return ports.GroupPage{}, inputErrorf("limit", "limit must not be negative, got %d", p.Limit)
	}
	p.Limit = min(p.Limit, g.opts.MaxLimit)
	if q.Offset != nil {
		p.Offset = *q.Offset
	}
	if p.Offset < 0 {
		return ports.GroupPage{}, inputErrorf("offset", "offset must not be negative, got %d", p.Offset)
	}
	return p, nil
}

// checkName applies the naming rules (core/names) to a name from the request.
func (g *Groups) checkName(param, what, name string) error {
	if err := names.Check(name); err != nil {
		return inputErrorf(param, "%s name %v", what, err)
	}
	return nil
}

// age is how long before asOf at was (0 for nil or a future instant).
func (g *Groups) age(asOf time.Time, at *time.Time) time.Duration {
	if at == nil {
		return 0
	}
	return max(asOf.Sub(*at), 0)
}
