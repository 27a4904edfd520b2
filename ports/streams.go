package ports

import (
	"context"
	"time"
)

// StreamQuery is a registered streaming query (/streams/v1/queries, docs/streams.md §2.1).
type StreamQuery struct {
	ID          string // server-made UUID, stable across resets
	Name        string // unique
	SourceQueue string
	SinkQueue   string // "" = none
	ConfigHash  string // opaque: only compared for equality
}

// Registration is the outcome of registering a query by name.
type Registration struct {
	Query StreamQuery // the stored row after the call
	Fresh bool        // the name was new
	Reset bool        // the hash changed under reset: every state row of the query was deleted
	// Mismatch: the hash changed without reset, nothing was changed; Query is the stored
	// row (its ID and old hash).
	Mismatch bool
}

// StateFilter selects rows of one (query, partition) shard; the conditions are ANDed.
type StateFilter struct {
	Keys   []string // empty: every key
	Prefix string   // "" = none; a literal prefix (no wildcards)
	// Ripe keeps only rows whose value is an object with a JSON number windowEnd <=
	// RipeAtOrBefore (epoch milliseconds).
	Ripe           bool
	RipeAtOrBefore float64
}

// StateRow is one key of a shard.
type StateRow struct {
	Key       string
	Value     []byte // JSON
	UpdatedAt time.Time
}

// StateOp is one state change of a cycle: an upsert of Value, or a delete.
type StateOp struct {
	Key    string
	Value  []byte // JSON; ignored by a delete
	Delete bool
}

// Cycle is one atomic commit of a stream worker (/streams/v1/cycle): state changes to the
// (QueryID, PartitionID) shard, sink segments, and an optional ack of the source.
type Cycle struct {
	QueryID, PartitionID string // UUIDs
	// Ops name each key at most once (core collapses a request's ops in order), in
	// ascending key order.
	Ops []StateOp
	// Segments go through the push allocator (Verified -1), in one bundle.
	Segments []Segment
	// Resolve is called, inside the transaction, for a segment the allocator answered
	// duplicate (it wrote nothing): it takes the duplicates and returns the segment of
	// the remaining frames to push in a further bundle, or false when none remain. It
	// must not call the store.
	Resolve func(seg int, r SegmentResult) (Segment, bool)
	// Ack, when set, is applied strictly after the pushes, as a transaction's ack
	// (AckCompleted or AckDLQ): the cursor moves to the message.
	Ack *AckItem
	// ReleaseLease: a completed ack releases the (partition, group) lease even when it
	// did not complete the whole leased span; false keeps the lease (and its expiry)
	// even when it did. A dead-letter ack always releases.
	ReleaseLease bool
}

// CycleResult is what a committed cycle did.
type CycleResult struct {
	Queue  string          // the source partition's queue, "" when the partition is unknown
	Pushed []SegmentResult // per segment, the final allocator answer (after Resolve rounds)
	Ack    AckResult       // when Cycle.Ack was set
}

// StreamStore keeps stream queries and their state (docs/streams.md §1). Every method is one
// database round trip or transaction.
type StreamStore interface {
	// RegisterQuery registers q by name: a new name is inserted (Fresh); an equal hash
	// updates the queues (state kept, even under reset); a changed hash with reset
	// deletes every state row of the query and stores the new hash (Reset); without
	// reset nothing changes (Mismatch).
	RegisterQuery(ctx context.Context, q StreamQuery, reset bool) (Registration, error)
	// StreamState reads the rows of one shard that pass f, in byte order of key. Unknown
	// ids read nothing.
	StreamState(ctx context.Context, queryID, partitionID string, f StateFilter) ([]StateRow, error)
	// Cycle commits c in one transaction, serialised with every other cycle of the same
	// shard: the ops, the segments, then the ack; all or nothing. A cycle rolled back
	// because of its request (an upsert for an unknown query, an ack the strict rules
	// refuse) returns a *RollbackError and changed nothing.
	Cycle(ctx context.Context, c Cycle) (CycleResult, error)
}
