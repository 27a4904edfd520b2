package streams

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/ports"
)

// InputError is a request the routes answer 400: a required field missing, or an id
// that is not a UUID.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// Mismatch is a registration whose config_hash changed without reset: nothing changed.
type Mismatch struct{ Query ports.StreamQuery }

func (e *Mismatch) Error() string {
	return fmt.Sprintf("config_hash mismatch: operator chain changed for queryId '%s'. "+
		"Pass reset:true to wipe existing state, or use a new queryId.", e.Query.Name)
}

// Failure is a cycle that was refused or rolled back because of its request: nothing
// was applied (the route answers 200 with success false and this message).
type Failure struct{ Msg string }

func (e *Failure) Error() string { return e.Msg }

// dlqReason is a dead-letter ack's error when the cycle gives none (Queen's text).
const dlqReason = "Streaming cycle reported failure"

// Options configures a Service; zero values take the defaults in brackets.
type Options struct {
	// Commits hears of every dead-letter move of a cycle's ack ([nil] nobody); sink
	// segments are announced by the push use case.
	Commits *notify.Commits
	// Hot hears of every lease a cycle released ([nil] none).
	Hot *hotlist.List
	// Segments reads back the message id of a sink item that duplicates a stored message
	// ([nil] its message_id is unknown).
	Segments ports.SegmentStore
	Logger   *slog.Logger
}

// Service is the streams use case (docs/streams.md).
type Service struct {
	store ports.StreamStore
	sink  *push.Service
	opts  Options
}

// New returns a Service over store whose sink pushes are prepared by sink.
func New(store ports.StreamStore, sink *push.Service, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{store: store, sink: sink, opts: opts}
}

// Register registers q by name (reset wipes the state when the hash changed). A changed
// hash without reset is a *Mismatch.
func (s *Service) Register(ctx context.Context, q ports.StreamQuery, reset bool) (ports.Registration, error) {
	for _, f := range []struct{ name, v string }{{"name", q.Name}, {"source_queue", q.SourceQueue}, {"config_hash", q.ConfigHash}} {
		if f.v == "" {
			return ports.Registration{}, &InputError{Msg: f.name + " is required"}
		}
	}
	r, err := s.store.RegisterQuery(ctx, q, reset)
	if err != nil {
		return ports.Registration{}, fmt.Errorf("streams: register %q: %w", q.Name, err)
	}
	if r.Mismatch {
		return r, &Mismatch{Query: r.Query}
	}
	return r, nil
}

// State reads the rows of the (queryID, partitionID) shard that pass f. Ids that are
// not UUIDs are an *InputError; well-formed unknown ones read nothing.
func (s *Service) State(ctx context.Context, queryID, partitionID string, f ports.StateFilter) ([]ports.StateRow, error) {
	q, p, err := shard(queryID, partitionID)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.StreamState(ctx, q, p, f)
	if err != nil {
		return nil, fmt.Errorf("streams: state of %s/%s: %w", q, p, err)
	}
	return rows, nil
}

// shard checks and canonicalises a shard's ids (lower case, as PostgreSQL prints them).
func shard(queryID, partitionID string) (string, string, error) {
	if !consume.IsUUID(queryID) {
		return "", "", &InputError{Msg: "query_id is not a UUID"}
	}
	if !consume.IsUUID(partitionID) {
		return "", "", &InputError{Msg: "partition_id is not a UUID"}
	}
	return strings.ToLower(queryID), strings.ToLower(partitionID), nil
}

// Op is one state op as sent.
type Op struct {
	Type  string
	Key   *string // nil: missing
	Value []byte  // nil: missing ({} is stored)
}

// Ack is a cycle's ack as sent.
type Ack struct {
	TransactionID string
	LeaseID       string
	Status        string // "" = completed
	Count         int    // <= 0: 1
	Error         string
}

// CycleInput is one /streams/v1/cycle request.
type CycleInput struct {
	QueryID, PartitionID string
	Group                string // "" = queue mode
	ReleaseLease         bool
	Ops                  []Op
	Items                []push.SinkItem
	Ack                  *Ack
}

// AckOutcome is what a cycle's ack did.
type AckOutcome struct {
	Count         int
	LeaseReleased bool
	DLQ           bool
}

// CycleOutcome is a committed cycle.
type CycleOutcome struct {
	QueryID, PartitionID string
	Queue                string // the source partition's queue, "" when unknown
	StateOpsApplied      int
	Pushed               []push.Result // per item, in order
	Ack                  *AckOutcome
}

// Cycle commits in one transaction the state ops, the sink items and the ack of in, for
// tenant (producerSub stamps the sink messages as a push would). Malformed ids are an
// *InputError; a cycle refused or rolled back because of its content is a *Failure;
// any other error means the store failed and nothing was applied.
func (s *Service) Cycle(ctx context.Context, tenant, producerSub string, in CycleInput) (CycleOutcome, error) {
	q, p, err := shard(in.QueryID, in.PartitionID)
	if err != nil {
		return CycleOutcome{}, err
	}
	c := ports.Cycle{QueryID: q, PartitionID: p, ReleaseLease: in.ReleaseLease}
	if in.Ack != nil && in.Ack.LeaseID != "" && !consume.IsUUID(in.Ack.LeaseID) {
		return CycleOutcome{}, &InputError{Msg: "ack.leaseId is not a UUID"}
	}
	if c.Ops, err = collapse(in.Ops); err != nil {
		return CycleOutcome{}, err
	}
	var ack *AckOutcome
	if in.Ack != nil {
		it, out, err := ackItem(p, in.Group, *in.Ack)
		if err != nil {
			return CycleOutcome{}, err
		}
		c.Ack, ack = &it, &out
	}
	items := make([]push.SinkItem, len(in.Items))
	copy(items, in.Items)
	basis := idBasis(in)
	for i := range items {
		it := &items[i]
		if it.Partition == "" {
			it.Partition = push.DefaultPartition
		}
		if len(it.Payload) == 0 {
			it.Payload = []byte("{}")
		}
		if it.TransactionID == "" && basis != "" {
			it.TransactionID = SinkTransactionID(q, p, basis, i, it.Queue, it.Partition, it.Payload)
		}
	}
	plain := make([]push.Item, len(items))
	for i, it := range items {
		plain[i] = it.Item
	}
	if err := push.Validate(plain); err != nil {
		return CycleOutcome{}, &Failure{Msg: "push_items " + err.Error()}
	}
	sink, err := s.sink.PrepareSink(ctx, tenant, producerSub, items)
	if err != nil {
		return CycleOutcome{}, fmt.Errorf("streams: cycle of %s/%s: %w", q, p, err)
	}
	c.Segments, c.Resolve = sink.Segments(), sink.Resolve
	res, err := s.store.Cycle(ctx, c)
	var rb *ports.RollbackError
	if errors.As(err, &rb) {
		sink.RolledBack(err)
		return CycleOutcome{}, &Failure{Msg: rb.Msg}
	}
	if err != nil {
		return CycleOutcome{}, fmt.Errorf("streams: cycle of %s/%s: %w", q, p, err)
	}
	out := CycleOutcome{QueryID: q, PartitionID: p, Queue: res.Queue, StateOpsApplied: len(in.Ops),
		Pushed: sink.Settle(res.Pushed), Ack: ack}
	if s.opts.Segments != nil {
		sink.Originals(ctx, s.opts.Segments, out.Pushed)
	}
	if ack != nil {
		s.acked(tenant, *c.Ack, res, ack)
	}
	return out, nil
}

// acked completes the ack's outcome and tells who listens: a dead-letter move is a commit
// of the source partition (its next messages can be claimed), a released lease goes to
// the hot-list.
func (s *Service) acked(tenant string, it ports.AckItem, res ports.CycleResult, out *AckOutcome) {
	out.DLQ = res.Ack.DLQ
	// A dead-letter ack clears the lease whatever release_lease said (docs/streams.md §6).
	out.LeaseReleased = res.Ack.LeaseReleased || res.Ack.DLQ
	if out.DLQ {
		out.Count = 0
		s.opts.Commits.Announce(notify.Commit{Tenant: tenant, Queue: res.Queue, Partition: res.Ack.Partition,
			PartitionID: it.PartitionID, Source: notify.DeadLettered})
	}
	if out.LeaseReleased && s.opts.Hot != nil {
		s.opts.Hot.Acked(tenant, res.Queue, it.Group, it.PartitionID, !out.DLQ)
	}
}

// collapse checks ops and reduces them to one op per key, the last one sent (applying
// them in order leaves exactly that), in ascending key order.
func collapse(ops []Op) ([]ports.StateOp, error) {
	last := make(map[string]ports.StateOp, len(ops))
	for i, op := range ops {
		if op.Type != "upsert" && op.Type != "delete" {
			return nil, &Failure{Msg: fmt.Sprintf("Unknown state_op type: %s (state_ops[%d])", op.Type, i)}
		}
		if op.Key == nil {
			return nil, &Failure{Msg: fmt.Sprintf("state_ops[%d].key is required", i)}
		}
		v := op.Value
		if v == nil {
			v = []byte("{}")
		}
		last[*op.Key] = ports.StateOp{Key: *op.Key, Value: v, Delete: op.Type == "delete"}
	}
	out := make([]ports.StateOp, 0, len(last))
	for _, op := range last {
		out = append(out, op)
	}
	slices.SortFunc(out, func(a, b ports.StateOp) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// ackItem checks a cycle's ack: completed/success ack cumulatively, failed/dlq
// dead-letter the named message (no retry budget: a cycle reports a failure it already
// decided on).
func ackItem(partitionID, group string, a Ack) (ports.AckItem, AckOutcome, error) {
	status := ports.AckCompleted
	switch a.Status {
	case "", "completed", "success":
	case "failed", "dlq":
		status = ports.AckDLQ
		if a.Error == "" {
			a.Error = dlqReason
		}
	default:
		return ports.AckItem{}, AckOutcome{}, &Failure{Msg: "Unknown ack.status: " + a.Status}
	}
	if a.TransactionID == "" {
		return ports.AckItem{}, AckOutcome{}, &Failure{Msg: "ack.transactionId is required"}
	}
	it, err := consume.AckInput{TransactionID: a.TransactionID, PartitionID: partitionID, Group: group,
		LeaseID: a.LeaseID, Error: a.Error}.Item()
	if err != nil {
		return ports.AckItem{}, AckOutcome{}, &Failure{Msg: "ack: " + err.Error()}
	}
	it.Status = status
	count := a.Count
	if count <= 0 {
		count = 1
	}
	return it, AckOutcome{Count: count}, nil
}

// idBasis is what identifies a cycle's output across retries (docs/streams.md §3.5): the source
// message its ack names, else the state keys it flushes (its deletes, in order); "" when
// neither exists (sink items then get minted ids, as plain pushes do).
func idBasis(in CycleInput) string {
	if in.Ack != nil && in.Ack.TransactionID != "" {
		return "ack\x1f" + in.Group + "\x1f" + in.Ack.TransactionID
	}
	var b strings.Builder
	for _, op := range in.Ops {
		if op.Type == "delete" && op.Key != nil {
			b.WriteString("\x1f")
			b.WriteString(*op.Key)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "flush" + b.String()
}

// SinkTransactionID is the transaction id of a sink item sent without one: a digest of
// the shard, the cycle's identity (idBasis), the item's index and the item itself. A
// retried cycle derives the same ids, so the partition's dedup stores its items once;
// the payload is part of it so that a state key flushed again later with another value
// (a window re-opened by late events) is not mistaken for a retry.
func SinkTransactionID(queryID, partitionID, basis string, index int, queue, partition string, payload []byte) string {
	h := sha256.New()
	for _, s := range []string{queryID, partitionID, basis, queue, partition} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(index))
	h.Write(n[:])
	h.Write(payload)
	sum := h.Sum(nil)
	return "stream-" + hex.EncodeToString(sum[:16])
}

// MessageID parses a sink item's messageId: "" is none (minted).
func MessageID(s string) ([16]byte, error) {
	if s == "" {
		return [16]byte{}, nil
	}
	if !consume.IsUUID(s) {
		return [16]byte{}, &InputError{Msg: "push_items messageId is not a UUID: " + s}
	}
	return uuid.MustParse(s), nil
}
