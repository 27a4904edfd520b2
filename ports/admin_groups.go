package ports

import (
	"context"
	"time"
)

// GroupSubscription is the durable subscription of a named consumer group to a queue,
// recorded at the group's first contact with the queue: where the group's cursors on
// partitions it has not popped yet will start.
type GroupSubscription struct {
	Mode      string     // SubscribeAll, SubscribeNew or SubscribeTimestamp
	From      *time.Time // nil: from the oldest retained message (SubscribeAll)
	CreatedAt time.Time
}

// GroupPosition is where one consumer group stands on one partition. Offsets are
// absolute; every count is watermark arithmetic over the partition and cursor rows.
type GroupPosition struct {
	Group, Queue, Partition, PartitionID string
	// Cursor is false for a partition where the group has no cursor yet: Committed is
	// then where its first contact would seed it (its subscription; queue mode and a
	// group without one: the oldest retained message).
	Cursor bool
	// Committed is the last offset the group is past (acknowledged, dead-lettered or
	// skipped): the next message it wants is Committed+1. Never below log_start-1.
	Committed  int64
	LastOffset int64
	// Lag is the messages after Committed: LastOffset - Committed, at least 0.
	Lag int64
	// OldestUnconsumedAt is the commit time of the segment holding Committed+1 (the
	// oldest message the group has not consumed); nil when Lag is 0.
	OldestUnconsumedAt *time.Time
	// LeaseID is the holder of the live lease on the cursor ("" when none is live), and
	// LeaseExpiresAt its expiry.
	LeaseID        string
	LeaseExpiresAt *time.Time
	// LastConsumedAt is the cursor's latest pop or ack; nil when it never had one.
	LastConsumedAt *time.Time
}

// GroupSummary aggregates the positions of one consumer group on every partition of
// one queue.
type GroupSummary struct {
	Group, Queue      string
	Cursors           int   // partitions where the group has a cursor
	PartitionsWithLag int   // partitions where its Lag > 0 (with a cursor or not)
	TotalLag          int64 // the sum of the Lags, messages
	// OldestUnconsumedAt is the oldest OldestUnconsumedAt of the queue's partitions; nil
	// when TotalLag is 0.
	OldestUnconsumedAt *time.Time
	LiveLeases         int // cursors with a live lease
	// LastActivity is the latest sign of the group on the queue: a pop or ack, the
	// creation of a cursor or of the subscription; nil when there is none.
	LastActivity *time.Time
	// Subscription is nil when the group has none recorded on the queue (queue mode).
	Subscription *GroupSubscription
}

// GroupPage is one page of a listing: at most Limit rows after skipping Offset. The
// caller has bounded both (0 <= Limit, 0 <= Offset).
type GroupPage struct {
	Limit, Offset int
}

// GroupDeletion is what a group deletion removed.
type GroupDeletion struct {
	// QueueFound is false when a deletion scoped to one queue named a queue that does not
	// exist (nothing was deleted); always true for a deletion on every queue.
	QueueFound    bool
	Cursors       int // cursor rows deleted (one per partition)
	Subscriptions int // subscription rows deleted
}

// GroupSeek moves a consumer group's cursors on one queue: on every partition of the
// queue, or on the one named Partition.
type GroupSeek struct {
	Group, Queue, Partition string // Partition "" = every partition of the queue
	// ToEnd moves each cursor to its partition's last offset; otherwise each moves to
	// just before the first message committed at or after Timestamp.
	ToEnd     bool
	Timestamp time.Time
}

// GroupSeekResult is what a seek did.
type GroupSeekResult struct {
	QueueFound, PartitionFound bool // PartitionFound only when the seek named one
	Partitions                 int  // cursors set (created or moved)
	LeasesCleared              int  // of them, cursors that had a live lease
}

// GroupStore reads and moves consumer groups' cursors (docs/api.md §5.9). Every method is
// scoped to one tenant. Reads take no lock; cursor moves lock the cursor rows they move
// in ascending partition id, as acks do.
type GroupStore interface {
	// GroupSummaries returns a page of the (group, queue) pairs where the group has a
	// cursor or a subscription, ordered by group then queue name (bytewise), with the
	// database's clock at the read (asOf), from one snapshot.
	GroupSummaries(ctx context.Context, tenant string, page GroupPage) (asOf time.Time, out []GroupSummary, err error)
	// GroupPositions returns a page of one group's positions, ordered by queue then
	// partition name (bytewise): every partition where it has a cursor, and every
	// partition of a queue it is on (a cursor or a subscription there) where it has
	// none yet but Lag > 0.
	GroupPositions(ctx context.Context, tenant, group string, page GroupPage) (asOf time.Time, out []GroupPosition, err error)
	// LaggingPositions returns every group's positions (as GroupPositions) whose oldest
	// unconsumed message was committed at least minLag before asOf, oldest first, at most
	// limit of them.
	LaggingPositions(ctx context.Context, tenant string, minLag time.Duration, limit int) (asOf time.Time, out []GroupPosition, err error)
	// DeleteGroup deletes the group's cursors on queue ("" = every queue of the tenant)
	// and, with subscriptions, its subscriptions there, in one transaction.
	DeleteGroup(ctx context.Context, tenant, group, queue string, subscriptions bool) (GroupDeletion, error)
	// SetGroupSubscription records from as the group's subscription timestamp on every
	// queue where it has a subscription, and returns how many it changed. Cursors are
	// not touched.
	SetGroupSubscription(ctx context.Context, tenant, group string, from time.Time) (updated int, err error)
	// SeekGroup sets the group's cursors as s says, creating those the group does not have
	// yet, and clears their leases and retry counters, in one transaction.
	SeekGroup(ctx context.Context, tenant string, s GroupSeek) (GroupSeekResult, error)
}
