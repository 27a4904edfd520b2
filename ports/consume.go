package ports

import (
	"context"
	"time"
)

// QueueModeGroup is the consumer group of pops and acks that name none: the shared
// queue-mode group whose consumers compete (docs/api.md §2).
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
	// Candidates are the partition ids a wildcard pop tries, in order (the hot-list), and
	// only those; nil lets the store scan the queue for partitions with work. With
	// candidates the store reports a Verdict for each.
	Candidates []string
}

// VerdictKind is what a claim attempt found at one candidate partition.
type VerdictKind uint8

// The verdicts of a candidate (PopRequest.Candidates).
const (
	// VerdictSkipped: not evaluated (the pop was full before its turn).
	VerdictSkipped VerdictKind = iota
	// VerdictTook: a span was claimed (Drained when it reached the partition's last
	// offset at claim time).
	VerdictTook
	// VerdictEmpty: nothing deliverable after the group's cursor. NotBefore, when set,
	// is when a deferral (delayedProcessing, windowBuffer) may end.
	VerdictEmpty
	// VerdictLeased: another consumer of the group holds a live lease until
	// LeaseExpires.
	VerdictLeased
	// VerdictBusy: another transaction held the group's cursor row (a pop or an ack
	// under way).
	VerdictBusy
	// VerdictGone: no such partition in the queue (deleted).
	VerdictGone
)

// Verdict is the outcome of one candidate of a pop, in candidate order.
type Verdict struct {
	PartitionID  string
	Kind         VerdictKind
	Drained      bool      // VerdictTook: the claim reached the partition's last offset
	LeaseExpires time.Time // VerdictTook (leased pops) and VerdictLeased
	NotBefore    time.Time // VerdictEmpty on a deferral queue; zero otherwise
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

// The ack statuses of docs/api.md §5.3.
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
	// Queue and Partition name the item's partition on the results that need it: the
	// first item of each (partition, group) whose lease the call released, and every item
	// moved to the dead-letter queue; "" on the others (naming every item would cost the
	// hot path a string per message).
	Queue, Partition string
}

// ConsumeStore claims spans and applies acknowledgements.
type ConsumeStore interface {
	// Pop claims spans for req; no claims when nothing is deliverable. With
	// req.Candidates it returns one verdict per candidate, in candidate order (else nil).
	Pop(ctx context.Context, req PopRequest) ([]Claim, []Verdict, error)
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

// PendingPartition is a partition that probably has work for a group.
type PendingPartition struct {
	ID, Name string
}

// PendingPage is one page of a queue's probably-pending partitions for a group.
type PendingPage struct {
	Partitions []PendingPartition // ascending id
	// The queue's deferral options, which decide how the hot-list schedules a partition
	// that received data.
	DelayedProcessing, WindowBuffer time.Duration
	// QueueExists is false when there is no such queue (its partitions are gone).
	QueueExists bool
}

// HotlistStore answers the hot-list's reseed floor.
type HotlistStore interface {
	// Pending lists up to limit partitions of the queue, in ascending id after after
	// ("" = from the start), that probably have work for group: something after the
	// group's cursor, or data and no cursor yet. Partitions under a live lease are
	// included (they are still pending). It may include partitions without work, never
	// leave out one with work.
	Pending(ctx context.Context, tenant, queue, group, after string, limit int) (PendingPage, error)
}

// Hint says that a partition received data (HintCommit), or that a queue was
// reconfigured or deleted; brokers exchange hints so that a push on one wakes the pops
// parked on another, and a configure on one makes the others forget what they cached
// about the queue at once.
type Hint struct {
	Tenant, Queue, Partition, PartitionID string
	// Kind is what happened; a queue-level hint (HintQueueConfigured, HintQueueDeleted)
	// names no partition.
	Kind HintKind
}

// HintKind is what a Hint announces. The zero value is HintCommit, so a hint built
// without a kind means what every hint meant before kinds existed.
type HintKind uint8

// The kinds of a Hint.
const (
	HintCommit          HintKind = iota // a partition received data
	HintQueueConfigured                 // a queue's options changed (or it was created by a configure)
	HintQueueDeleted                    // a queue and everything in it was deleted
)

// HintBus carries hints between the brokers of one database. Delivery is best effort:
// a lost hint costs latency (the reseed floor and the pops' own re-checks recover it),
// never a message.
type HintBus interface {
	// Publish sends hints to the other brokers, outside any push transaction.
	Publish(ctx context.Context, hints []Hint) error
	// Listen delivers the hints other brokers publish until ctx ends; it never delivers
	// this process's own. It returns ctx's error, or why listening failed.
	Listen(ctx context.Context, deliver func([]Hint)) error
}
