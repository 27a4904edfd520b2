package ports

import (
	"context"
	"time"
)

// RetentionStore removes what the queues' retention rules and the broker's housekeeping
// say has expired, in bounded steps: each call visits at most the partitions or rows it
// is given and commits on its own, and none waits for a lock a push, pop or ack holds
// (what they hold is left for a later call).
type RetentionStore interface {
	// Lead runs fn if this broker can take the retention lead, which one broker of the
	// database holds at a time, and holds it while fn runs. ran is false when another
	// broker leads now (fn did not run).
	Lead(ctx context.Context, fn func(context.Context) error) (ran bool, err error)
	// Trim walks at most partitions partitions after after ("" = from the first), in
	// the store's partition order, and removes at most rows rows of expired segments
	// (moving log_start) and hash rows (moving txns_start).
	Trim(ctx context.Context, after string, partitions, rows int) (TrimStep, error)
	// PurgeDeadLetters removes at most rows dead letters older than their queue's
	// retentionSeconds (when retentionEnabled).
	PurgeDeadLetters(ctx context.Context, rows int) (Removed, error)
	// PurgeTraces removes at most rows traces whose lifetime ended.
	PurgeTraces(ctx context.Context, rows int) (Removed, error)
	// DropEmptyPartitions deletes at most rows partitions that retain nothing (no
	// message, no hash row) and were last written more than idle ago, with their
	// cursors.
	DropEmptyPartitions(ctx context.Context, idle time.Duration, rows int) (Removed, error)
}

// TrimStep is what one Trim call did.
type TrimStep struct {
	// Last is the last partition the walk is done with: the next call's after. A
	// partition the row budget cut short is not done. "" when nothing was walked.
	Last string
	// Walked counts the partitions visited; fewer than asked: the walk reached the end.
	Walked int
	// Trimmed counts the partitions whose watermarks moved.
	Trimmed int
	// Segments, Messages and SegmentBytes were removed from the log (bytes of the
	// stored blobs); HashRows and HashBytes from the hash sidecar.
	Segments, Messages, SegmentBytes int64
	HashRows, HashBytes              int64
}

// Removed counts rows removed and their stored bytes (0 where not measured).
type Removed struct {
	Rows, Bytes int64
}
