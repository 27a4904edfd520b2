package ports

import (
	"context"
	"time"
)

// NewTrace is a trace event a consumer records for a message (docs/api.md §5.10).
type NewTrace struct {
	PartitionID   string
	TransactionID string
	ConsumerGroup string
	EventType     string
	Names         []string // distinct, in the order given
	Data          []byte   // raw JSON
}

// Trace is a recorded trace event.
type Trace struct {
	ID string
	NewTrace
	// Queue and Partition name the message's partition; "" once it is deleted.
	Queue, Partition string
	CreatedAt        time.Time
}

// TraceName is one trace name with how often it was used, among the retained traces.
type TraceName struct {
	Name     string
	Traces   int64 // traces carrying the name
	Messages int64 // distinct messages (partition, transaction id) among them
	LastSeen time.Time
}

// TraceStore keeps trace events. Every method is scoped to one tenant.
type TraceStore interface {
	// AddTrace records t, kept for lifetime(the options of the partition's queue) from
	// now, and deletes up to expire traces (of any tenant) whose lifetime ended. found is
	// false, and nothing is recorded, when the tenant has no partition t.PartitionID.
	AddTrace(ctx context.Context, tenant string, t NewTrace, lifetime func(QueueOptions) time.Duration, expire int) (Trace, bool, error)
	// MessageTraces lists up to limit traces of one message, oldest first.
	MessageTraces(ctx context.Context, tenant, partitionID, transactionID string, limit int) ([]Trace, error)
	// TracesByName lists the traces carrying name, newest first, a page of limit after
	// offset, and how many traces carry it (every page: Queen's listing reports the
	// total).
	TracesByName(ctx context.Context, tenant, name string, limit, offset int) ([]Trace, int64, error)
	// TraceNames lists the trace names in use, most recently seen first (ties by name), a
	// page of limit after offset, and how many names are in use (every page).
	TraceNames(ctx context.Context, tenant string, limit, offset int) ([]TraceName, int64, error)
}
