package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/ports"
)

// Bounds and defaults of the trace routes (docs/api.md §5.10).
const (
	DefaultTraceEventType  = "info"
	DefaultTracesByName    = 100  // page of GET /api/v1/traces/by-name/{name}
	DefaultTraceNamesLimit = 50   // page of GET /api/v1/traces/names
	MaxTracesLimit         = 1000 // the largest page of either (a larger limit is clamped), and of one message's traces
	MaxTracesOffset        = 100_000
	MaxTraceDataBytes      = 64 << 10 // bytes of a trace's data, as JSON text (64 KiB)
	MaxTraceNames          = 32       // names on one trace
	// DefaultTraceLifetime is how long traces of a queue without retention are kept.
	DefaultTraceLifetime = 7 * 24 * time.Hour
)

// TracesOptions configures Traces; zero values take the defaults in brackets.
type TracesOptions struct {
	// ExpireBatch is how many expired traces each recorded trace deletes. [100] Any
	// value above 1 keeps the table from growing with expired traces: every insert
	// removes more than it adds.
	ExpireBatch int
	Logger      *slog.Logger
}

// Traces records and reads the trace events consumers attach to messages (docs/api.md
// §5.10). Traces expire with their queue's messages (TraceLifetime).
type Traces struct {
	store ports.TraceStore
	opts  TracesOptions
}

// NewTraces returns the use case over store.
func NewTraces(store ports.TraceStore, opts TracesOptions) *Traces {
	if opts.ExpireBatch <= 0 {
		opts.ExpireBatch = 100
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Traces{store: store, opts: opts}
}

// TraceLifetime is how long a trace of a message of a queue configured with o is kept:
// as long as the queue keeps messages. That is the shortest of the ages past which the
// queue deletes them (retentionSeconds and completedRetentionSeconds when retention is
// enabled, maxWaitTimeSeconds), or DefaultTraceLifetime when it deletes none by age.
// A trace's lifetime is fixed when it is recorded: reconfiguring the queue later
// changes the lifetime of new traces only.
func TraceLifetime(o ports.QueueOptions) time.Duration {
	var secs int
	keep := func(s int) {
		if s > 0 && (secs == 0 || s < secs) {
			secs = s
		}
	}
	if o.RetentionEnabled {
		keep(o.RetentionSeconds)
		keep(o.CompletedRetentionSeconds)
	}
	keep(o.MaxWaitTimeSeconds)
	if secs == 0 {
		return DefaultTraceLifetime
	}
	return time.Duration(secs) * time.Second
}

// TraceInput is a trace to record, as a client sent it. Empty ConsumerGroup and
// EventType take their defaults (the queue-mode group, "info").
type TraceInput struct {
	PartitionID   string
	TransactionID string
	ConsumerGroup string
	EventType     string
	Names         []string
	Data          json.RawMessage // nil: missing
}

// Record validates and stores a trace for the message (PartitionID, TransactionID). The
// partition must be the tenant's; the message itself is not looked up (it may be past
// its hash window, or consumed and deleted already).
func (t *Traces) Record(ctx context.Context, tenant string, in TraceInput) (ports.Trace, error) {
	nt, err := checkTrace(in)
	if err != nil {
		return ports.Trace{}, err
	}
	tr, found, err := t.store.AddTrace(ctx, tenant, nt, TraceLifetime, t.opts.ExpireBatch)
	if err != nil {
		return ports.Trace{}, fmt.Errorf("record trace: %w", err)
	}
	if !found {
		return ports.Trace{}, notFound("Partition not found")
	}
	return tr, nil
}

// checkTrace validates a trace and applies its defaults.
func checkTrace(in TraceInput) (ports.NewTrace, error) {
	if in.TransactionID == "" {
		return ports.NewTrace{}, inputErrorf("transactionId", "transactionId is required")
	}
	if err := names.CheckTransactionID(in.TransactionID); err != nil {
		return ports.NewTrace{}, inputErrorf("transactionId", "transactionId %s", err)
	}
	if in.PartitionID == "" {
		return ports.NewTrace{}, inputErrorf("partitionId", "partitionId is required")
	}
	if err := uuid.Validate(in.PartitionID); err != nil {
		return ports.NewTrace{}, inputErrorf("partitionId", "partitionId must be a UUID, got %q", in.PartitionID)
	}
	if in.Data == nil {
		return ports.NewTrace{}, inputErrorf("data", "data is required")
	}
	if len(in.Data) > MaxTraceDataBytes {
		return ports.NewTrace{}, inputErrorf("data", "data is %d bytes of JSON, the limit is %d", len(in.Data), MaxTraceDataBytes)
	}
	if !json.Valid(in.Data) {
		return ports.NewTrace{}, inputErrorf("data", "data is not valid JSON")
	}
	nt := ports.NewTrace{PartitionID: in.PartitionID, TransactionID: in.TransactionID,
		ConsumerGroup: in.ConsumerGroup, EventType: in.EventType, Data: in.Data}
	if nt.ConsumerGroup == "" {
		nt.ConsumerGroup = ports.QueueModeGroup
	}
	if err := names.Check(nt.ConsumerGroup); err != nil {
		return ports.NewTrace{}, inputErrorf("consumerGroup", "consumerGroup %s", err)
	}
	if nt.EventType == "" {
		nt.EventType = DefaultTraceEventType
	}
	if err := names.Check(nt.EventType); err != nil {
		return ports.NewTrace{}, inputErrorf("eventType", "eventType %s", err)
	}
	if len(in.Names) > MaxTraceNames {
		return ports.NewTrace{}, inputErrorf("traceNames", "%d trace names, the limit is %d", len(in.Names), MaxTraceNames)
	}
	for _, n := range in.Names {
		if err := names.Check(n); err != nil {
			return ports.NewTrace{}, inputErrorf("traceNames", "trace name %q %s", n, err)
		}
		if !slices.Contains(nt.Names, n) {
			nt.Names = append(nt.Names, n)
		}
	}
	return nt, nil
}

// ForMessage lists the traces of the message (partitionID, transactionID), oldest
// first, at most MaxTracesLimit of them.
func (t *Traces) ForMessage(ctx context.Context, tenant, partitionID, transactionID string) ([]ports.Trace, error) {
	if err := checkMessageAddr(partitionID, transactionID); err != nil {
		return nil, err
	}
	out, err := t.store.MessageTraces(ctx, tenant, partitionID, transactionID, MaxTracesLimit)
	if err != nil {
		return nil, fmt.Errorf("message traces: %w", err)
	}
	return out, nil
}

// Page is the paging a listing applied: the limit asked for, clamped to the route's
// maximum, and the offset; and Total, how many the listing holds over every page (the
// total Queen's trace listings report).
type Page struct {
	Limit, Offset int
	Total         int64
}

// ByName lists the traces carrying name, newest first, a page of limit (clamped to
// MaxTracesLimit) after offset, and the page applied with the number of traces carrying
// name.
func (t *Traces) ByName(ctx context.Context, tenant, name string, limit, offset int) ([]ports.Trace, Page, error) {
	if err := names.Check(name); err != nil {
		return nil, Page{}, inputErrorf("traceName", "trace name %s", err)
	}
	p, err := tracePage(limit, offset)
	if err != nil {
		return nil, Page{}, err
	}
	out, total, err := t.store.TracesByName(ctx, tenant, name, p.Limit, p.Offset)
	if err != nil {
		return nil, Page{}, fmt.Errorf("traces by name: %w", err)
	}
	p.Total = total
	return out, p, nil
}

// Names lists the trace names in use, most recently seen first, a page of limit
// (clamped to MaxTracesLimit) after offset, and the page applied with the number of
// names in use.
func (t *Traces) Names(ctx context.Context, tenant string, limit, offset int) ([]ports.TraceName, Page, error) {
	p, err := tracePage(limit, offset)
	if err != nil {
		return nil, Page{}, err
	}
	out, total, err := t.store.TraceNames(ctx, tenant, p.Limit, p.Offset)
	if err != nil {
		return nil, Page{}, fmt.Errorf("trace names: %w", err)
	}
	p.Total = total
	return out, p, nil
}

// tracePage validates the page of a trace listing and clamps its limit.
func tracePage(limit, offset int) (Page, error) {
	if limit < 1 {
		return Page{}, inputErrorf("limit", "limit must be at least 1, got %d", limit)
	}
	if offset < 0 || offset > MaxTracesOffset {
		return Page{}, inputErrorf("offset", "offset must be between 0 and %d, got %d", MaxTracesOffset, offset)
	}
	return Page{Limit: min(limit, MaxTracesLimit), Offset: offset}, nil
}
