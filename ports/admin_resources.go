package ports

import (
	"context"
	"time"
)

// ResourceFilter selects queues of one tenant by exact name, namespace and task; an
// empty string selects every value.
type ResourceFilter struct {
	Queue, Namespace, Task string
}

// ResourcePage is one page of a listing: at most Limit rows after skipping Offset. The
// caller has bounded both (Limit >= 0, Offset >= 0).
type ResourcePage struct {
	Limit, Offset int
}

// WatermarkCounts are message counts computed from partition and cursor rows alone
// (offset arithmetic, never a read of message data), summed over the partitions they
// cover. Per partition:
//
//   - Total: the retained messages, last_offset - log_start + 1.
//   - Pending: the messages after the worst cursor, last_offset - max(worst,
//     log_start - 1); worst is the lowest committed offset of the named groups' cursors,
//     or the queue-mode cursor's when no named group has one, or nothing consumed when
//     there is no cursor at all. A group-scoped count (QueueDepth) uses that group's
//     cursor alone. Leased messages are pending too.
//   - Processing: the messages inside live leases (the spans (committed, batch_end] whose
//     lease has not expired), capped at Pending.
//   - DeadLetter: dead-letter rows (every group's).
type WatermarkCounts struct {
	Total, Pending, Processing, DeadLetter int64
}

// Add returns the sum of c and o.
func (c WatermarkCounts) Add(o WatermarkCounts) WatermarkCounts {
	return WatermarkCounts{Total: c.Total + o.Total, Pending: c.Pending + o.Pending,
		Processing: c.Processing + o.Processing, DeadLetter: c.DeadLetter + o.DeadLetter}
}

// QueueResource is one queue of a listing with the counts of all its partitions.
type QueueResource struct {
	ID, Name, Namespace, Task string
	CreatedAt                 time.Time
	Partitions                int64
	Counts                    WatermarkCounts
}

// PartitionResource is one partition with its counts.
type PartitionResource struct {
	ID, Name  string
	CreatedAt time.Time
	Counts    WatermarkCounts
	// Consumed is the retained messages acknowledged, summed over the partition's
	// cursors (every group).
	Consumed int64
	// LastActivity is the latest pop or ack of any group on the partition; nil when
	// none has a cursor there.
	LastActivity *time.Time
	// Oldest and Newest are the commit times of the first and last retained segments;
	// nil when nothing is retained.
	Oldest, Newest *time.Time
}

// QueueResourceDetail is one queue: its configuration, the counts of all its partitions,
// and one page of its partitions in name order.
type QueueResourceDetail struct {
	Config     QueueConfig
	CreatedAt  time.Time
	Partitions int64 // all of them, not only the page's
	Totals     WatermarkCounts
	Page       []PartitionResource
}

// PartitionDepth is one partition of a depth read (DeadLetter is not counted).
type PartitionDepth struct {
	Name   string
	Counts WatermarkCounts
}

// QueueDepthResult is a depth read of one queue: the sums over all its partitions, how
// many partitions have pending messages and how many have messages outside live leases,
// and one page of partitions in name order.
type QueueDepthResult struct {
	Totals                             WatermarkCounts // DeadLetter is not counted
	PartitionsPending, PartitionsReady int64
	Page                               []PartitionDepth
}

// ResourceKey names what the namespace and task listings group queues by.
type ResourceKey int

// The groupings of ResourceStore.CountsBy.
const (
	ByNamespace ResourceKey = iota
	ByTask
)

// KeyCounts are the queues grouped under one namespace or task.
type KeyCounts struct {
	Key        string
	Queues     int64
	Partitions int64
	Counts     WatermarkCounts // DeadLetter is not counted
}

// ResourceOverview is the whole tenant at a glance.
type ResourceOverview struct {
	Queues, Partitions, Namespaces, Tasks int64
	// ConsumerGroups is the number of distinct named groups subscribed to any queue.
	ConsumerGroups int64
	Counts         WatermarkCounts
}

// LeaseSummary counts the live leases of the selected queues.
type LeaseSummary struct {
	Active     int64 // (partition, group) pairs under a live lease
	Partitions int64 // partitions with at least one
	Messages   int64 // messages inside them
}

// DeadLetterSummary counts the dead letters of the selected queues.
type DeadLetterSummary struct {
	Current    int64 // rows
	Partitions int64 // partitions with at least one
}

// ResourceStatus is the current state of the selected queues.
type ResourceStatus struct {
	Queues, Partitions int64
	Counts             WatermarkCounts
	Leases             LeaseSummary
	DeadLetters        DeadLetterSummary
}

// StorageTotals describe the segment table as a whole, from PostgreSQL's own
// bookkeeping (no scan): its size on disk in bytes (heap and TOAST), its live row count
// as the statistics collector last counted it, and the retained messages of every
// partition.
type StorageTotals struct {
	SegmentBytes, Segments, Messages int64
}

// ResourceStore reads queues, partitions and their counts for the admin API (docs/api.md §5.7,
// §5.11). Every method is scoped to one tenant (StorageTotals excepted) and only reads:
// no row locks, so pushes, pops and acks never wait for it. Each call costs a fixed
// number of statements, whatever the number of queues, partitions or groups.
type ResourceStore interface {
	// ListQueues returns one page of the queues matching f, in name order, and the
	// number of queues matching f.
	ListQueues(ctx context.Context, tenant string, f ResourceFilter, p ResourcePage) ([]QueueResource, int64, error)
	// QueueDetail returns the queue with one page of its partitions; found is false
	// when there is no such queue.
	QueueDetail(ctx context.Context, tenant, queue string, p ResourcePage) (d QueueResourceDetail, found bool, err error)
	// QueueDepth returns the depth of the queue for group (its own cursors; "" = the
	// worst cursor rule of WatermarkCounts) with one page of partitions; found is false
	// when there is no such queue.
	QueueDepth(ctx context.Context, tenant, queue, group string, p ResourcePage) (d QueueDepthResult, found bool, err error)
	// CountsBy returns one page of the non-empty namespaces (or tasks), in name order.
	CountsBy(ctx context.Context, tenant string, key ResourceKey, p ResourcePage) ([]KeyCounts, error)
	// Overview sums the whole tenant.
	Overview(ctx context.Context, tenant string) (ResourceOverview, error)
	// Status sums the queues matching f, with their live leases and dead letters.
	Status(ctx context.Context, tenant string, f ResourceFilter) (ResourceStatus, error)
	// StorageTotals describes the segment table of every tenant.
	StorageTotals(ctx context.Context) (StorageTotals, error)
}
