package ports

import (
	"context"
	"time"
)

// MessageFilter selects the partitions and the commit times a message browse covers
// (docs/api.md §5.8); an empty string selects every value.
type MessageFilter struct {
	Queue, Partition, Namespace, Task string
	From                              time.Time // inclusive
	To                                time.Time // inclusive; zero: no upper bound
}

// BrowseKey is a position in browse order: segments by commit time, newest first, then
// by partition id ascending, then by last offset descending. A browse continues strictly
// after the key.
type BrowseKey struct {
	CreatedAt   time.Time
	PartitionID string
	EndOffset   int64
}

// BrowseSegment is a committed segment's place in a browse, without its blob: frames
// BaseOffset..EndOffset of the partition, committed at CreatedAt.
type BrowseSegment struct {
	PartitionID           string
	BaseOffset, EndOffset int64
	CreatedAt             time.Time
}

// Key is the segment's position in browse order.
func (s BrowseSegment) Key() BrowseKey {
	return BrowseKey{CreatedAt: s.CreatedAt, PartitionID: s.PartitionID, EndOffset: s.EndOffset}
}

// GroupCursor is one consumer group's cursor row on a partition (schema/003_consume.sql).
type GroupCursor struct {
	Group     string
	Committed int64 // last acknowledged offset
	BatchEnd  int64 // last offset of the last delivered span
	// LeaseExpires is when the span (Committed, BatchEnd] stops being leased; zero when
	// no lease was taken. A lease in the past is no lease.
	LeaseExpires time.Time
}

// MessagePartition is what the message views need of a partition: its names, its
// queue's configuration, the offsets a reader may list and every group's cursor.
type MessagePartition struct {
	ID, Name string
	Queue    QueueConfig
	// First is the first offset whose message and transaction-id hash are both still
	// retained (greatest(log_start, txns_start)); LastOffset the last allocated one.
	First, LastOffset int64
	Cursors           []GroupCursor // in group name order
}

// MessageAddr names one message: an offset of a partition.
type MessageAddr struct {
	PartitionID string
	Offset      int64
}

// BrowsePage is one step of a browse, read from one snapshot.
type BrowsePage struct {
	Segments   []BrowseSegment    // browse order
	Partitions []MessagePartition // every partition of Segments, once
	// DeadLetters are the messages of Segments that have at least one dead-letter row.
	DeadLetters []MessageAddr
	Now         time.Time // the database's clock at the snapshot (lease liveness)
}

// GroupModes says which kinds of consumer group have cursors on a set of partitions.
type GroupModes struct {
	QueueMode   bool // the queue-mode group has a cursor
	NamedGroups int  // distinct named groups with a cursor
}

// SegmentRef names a stored segment by its primary key.
type SegmentRef struct {
	PartitionID string
	BaseOffset  int64
}

// SegmentBlob is a stored segment with its blob.
type SegmentBlob struct {
	PartitionID string
	StoredSegment
}

// StoredMessage is one message found by its transaction id, with what its detail view
// needs, read from one snapshot.
type StoredMessage struct {
	Partition MessagePartition
	Offset    int64
	Segment   StoredSegment    // the segment holding the message (frame Offset-BaseOffset)
	Dead      []DeadLetterInfo // the message's dead-letter rows, newest failure first
	Now       time.Time        // the database's clock at the snapshot
}

// DeadLetterMove is how a MoveDeadLetter call ended.
type DeadLetterMove struct {
	Found   bool // the row existed (for the tenant) when the move claimed it
	Removed bool // the row was deleted by this call
}

// MessageStore is what the admin API's message and dead-letter routes read and change
// (docs/api.md §5.8). Every method is scoped to one tenant; none takes a lock a push, pop or
// ack waits for, except the dead-letter row deletions.
type MessageStore interface {
	// BrowseSegments returns up to limit segments holding retained messages (offsets
	// First..LastOffset) of the partitions matching f, committed within [f.From, f.To],
	// in browse order, strictly after after (nil: from the newest), with their partitions
	// and dead letters.
	BrowseSegments(ctx context.Context, tenant string, f MessageFilter, after *BrowseKey, limit int) (BrowsePage, error)
	// BrowseModes reports the kinds of group with a cursor on the partitions matching f's
	// queue, partition, namespace and task (not its times).
	BrowseModes(ctx context.Context, tenant string, f MessageFilter) (GroupModes, error)
	// SegmentBlobs reads the segments refs name; a segment removed meanwhile (retention,
	// queue deletion) is missing from the answer, which is in no particular order.
	SegmentBlobs(ctx context.Context, refs []SegmentRef) ([]SegmentBlob, error)
	// FindMessage resolves a transaction-id hash (core/dedup) to the newest retained
	// message of the partition carrying it; found is false when there is none (no such
	// partition for the tenant, or the hash is outside the retained window).
	FindMessage(ctx context.Context, tenant, partitionID string, hash [16]byte) (StoredMessage, bool, error)
	// SegmentAt returns the retained segment covering offset of the partition; found is
	// false when there is none.
	SegmentAt(ctx context.Context, tenant, partitionID string, offset int64) (StoredSegment, bool, error)

	// NewestDeadLetter returns the id of the newest dead-letter row of the message
	// (partitionID, transactionID); found is false when it has none.
	NewestDeadLetter(ctx context.Context, tenant, partitionID, transactionID string) (id string, found bool, err error)
	// MoveDeadLetter claims dead-letter row id against concurrent moves of the same row
	// (a second one waits, then finds the row gone), calls move with the row, and deletes
	// the row when move says so. The claim holds no lock on the row itself while move
	// runs, so move may push to the row's partition. A move error is returned as is and
	// the row is kept.
	MoveDeadLetter(ctx context.Context, tenant, id string, move func(context.Context, DeadLetter) (remove bool, err error)) (DeadLetterMove, error)
	// DeleteDeadLetters deletes every dead-letter row of the message (partitionID,
	// transactionID), of every group, and returns how many there were.
	DeleteDeadLetters(ctx context.Context, tenant, partitionID, transactionID string) (int64, error)
	// PurgeDeadLetters deletes the dead letters of the queue, of one group when group is
	// not empty, and returns how many there were.
	PurgeDeadLetters(ctx context.Context, tenant, queue, group string) (int64, error)
}
