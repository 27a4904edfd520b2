package ports

import (
	"context"
	"time"
)

// QueueModeGroup is the consumer group of pops and acks that name none: the shared
// queue-mode group whose consumers compete (api.md §2).
const QueueModeGroup = "__QUEUE_MODE__"

// Subscription modes: where a named group's cursors start on first contact.
const (
	SubscribeAll       = "all"       // the oldest retained message
	SubscribeNew       = "new"       // after the last message committed before first contact
	SubscribeTimestamp = "timestamp" // the first message committed at or after PopRequest.SubscribeFrom
)

// PopRequest is one claim attempt.
type PopRequest struct {
	Tenant string
	// Exactly one of: Queue (with Partition for a pinned pop, or empty for a wildcard
	// pop) or Namespace/Task (discovery across queues).
	Queue, Partition string
	Namespace, Task  string
	Group            string // QueueModeGroup when none was named
	Batch            int    // messages, across all claimed partitions
	Partitions       int    // partitions a wildcard or discovery pop may claim
	LeaseSeconds     int    // 0 = the queue's leaseTime
	AutoAck          bool
	LeaseID          string // UUID shared by every claimed partition; ignored with AutoAck
	SubscribeMode    string // SubscribeAll, SubscribeNew or SubscribeTimestamp
	SubscribeFrom    time.Time
	// Candidates are partition ids to try first, in order (the hot-list); nil lets the
	// store scan for them.
	Candidates []string
}

// Claim is one claimed partition span (Start..End inclusive) with the segments covering
// it, in offset order (the first and last may extend beyond the span).
type Claim struct {
	Queue, Partition, PartitionID string
	Start, End                    int64
	Attempt                       int       // deliveries of a span starting at Start, >= 1
	LeaseExpires                  time.Time // zero with AutoAck
	Segments                      []StoredSegment
}

// AckStatus is a normalised ack status.
type AckStatus string

// The ack statuses of api.md §5.3.
const (
	AckCompleted AckStatus = "completed"
	AckFailed    AckStatus = "failed"
	AckRetry     AckStatus = "retry"
	AckDLQ       AckStatus = "dlq"
)

// AckItem acknowledges one message, named by partition and transaction-id hash.
type AckItem struct {
	PartitionID   string
	Group         string
	Hash          [16]byte // xxh3-128 of TransactionID (core/dedup)
	TransactionID string
	Status        AckStatus
	LeaseID       string // "" = no lease check
	Error         string // dead-letter reason
}

// AckResult is the outcome of one AckItem.
type AckResult struct {
	OK            bool
	Error         string
	LeaseReleased bool
	DLQ           bool
	Noop          bool // completed ack of an already committed message
	// Queue and Partition name the item's partition; "" when the store found no
	// consumer of it (a partition id that names nothing, or a group that never popped).
	Queue, Partition string
}

// ConsumeStore claims spans and applies acknowledgements.
type ConsumeStore interface {
	// Pop claims spans for req; no claims (nil, nil) when nothing is deliverable.
	Pop(ctx context.Context, req PopRequest) ([]Claim, error)
	// Ack applies items and returns one result per item in input order.
	Ack(ctx context.Context, items []AckItem) ([]AckResult, error)
	// Release undoes claims whose messages never reached a client (it went away while
	// the claim ran): leases are dropped and the delivery not counted; with autoAck the
	// cursor goes back to before the span, unless something moved it since.
	Release(ctx context.Context, group, leaseID string, autoAck bool, claims []Claim) error
	// ExtendLease renews every live lease held by leaseID to at least now+d and returns
	// how many were renewed and the earliest new expiry.
	ExtendLease(ctx context.Context, leaseID string, d time.Duration) (renewed int, expires time.Time, err error)
}
