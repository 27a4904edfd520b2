package push

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/names"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// DefaultPartition is the partition of items that name none.
const DefaultPartition = "Default"

// Item is one pushed message as parsed from the request.
type Item struct {
	Queue         string
	Partition     string // "" means DefaultPartition
	TransactionID string // "" means the minted message id
	Payload       []byte // raw JSON, stored byte for byte
}

// Status is an item's outcome, spelled as on the wire.
type Status string

const (
	StatusQueued    Status = "queued"
	StatusDuplicate Status = "duplicate"
	StatusBuffered  Status = "buffered"
	StatusFailed    Status = "failed"
	StatusError     Status = "error"
)

// Result is one item's outcome.
type Result struct {
	Index         int
	MessageID     [16]byte
	TransactionID string
	Queue         string
	Partition     string
	PartitionID   string
	Status        Status
	Offset        int64
	HasOffset     bool  // queued and duplicate carry an offset
	Err           error // why a failed item was refused (encryption); nil otherwise
}

// InputError says which item of a request is invalid and why.
type InputError struct {
	Index int
	Field string
	Msg   string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("item %d: %s %s", e.Index, e.Field, e.Msg)
}

// Validate checks every item's names and transaction id.
func Validate(items []Item) error {
	for i, it := range items {
		if err := names.Check(it.Queue); err != nil {
			return &InputError{Index: i, Field: "queue", Msg: err.Error()}
		}
		if it.Partition != "" {
			if err := names.Check(it.Partition); err != nil {
				return &InputError{Index: i, Field: "partition", Msg: err.Error()}
			}
		}
		if err := names.CheckTransactionID(it.TransactionID); err != nil {
			return &InputError{Index: i, Field: "transactionId", Msg: err.Error()}
		}
		// JSON is UTF-8 (RFC 8259 §8.1), but encoding/json's scanner lets any byte
		// through inside a string: a payload with invalid bytes would be stored as is
		// and delivered as JSON no client decodes alike (docs/reliability.md bad input #10).
		if !utf8.Valid(it.Payload) {
			return &InputError{Index: i, Field: "payload", Msg: "is not valid UTF-8"}
		}
	}
	return nil
}

// Options configures a Service; zero values take the defaults in brackets.
type Options struct {
	// Encryption seals the payloads of encrypted queues and refuses them when it cannot
	// ([nil] no queue is encrypted).
	Encryption *encryption.Policy
	Logger     *slog.Logger
	NewID      func() [16]byte // [UUIDv7]

	// Transactions and Codec enable Transaction (docs/api.md §5.4).
	Transactions ports.TransactionStore
	Codec        *segment.Codec
	// Commits, when set, hears of every segment a transaction committed.
	Commits *notify.Commits
	// AcksApplied, when set, is told of the acks a transaction committed, with their
	// results (consume.Service.Applied: dead-letter moves and released leases).
	AcksApplied func(tenant string, items []ports.AckItem, res []ports.AckResult)

	// Spool, when set, keeps what the database did not take: items of a failed bundle
	// are spooled and answered buffered (failed when the spool write fails too).
	Spool *spool.Spool
	// Divert, when set and true, sends every push to the spool without trying the
	// database (push maintenance, or the database known to be away).
	Divert func() bool
	// BundleFailed, when set, is told that a bundle did not reach the database (outage).
	BundleFailed func()
	// SpooledAhead says whether a partition has pushes spooled and not replayed yet, which
	// a transaction or a streams sink to it must wait for (ErrSpooledAhead) [Spool.Pending;
	// never without a Spool]. A broker on several shards keeps a spool per shard and asks
	// the partition's (core/shard Spooled).
	SpooledAhead func(tenant, queue, partition string) bool
	// Activity, when set, hears of every push request (Push, a committed transaction, a
	// streams sink), once per queue it pushed to, with the messages it stored there
	// (queued or buffered); a transaction also counts one on each of those queues (the
	// metrics history, core/history).
	Activity ports.Activity
}

// Service runs pushes through a fusion batcher.
type Service struct {
	batcher *fusion.Batcher
	opts    Options

	requests, messages atomic.Uint64

	// A full or failing spool disk fails every push of an outage: one error line per
	// spoolLogEvery (with the count of the failures in between) says so without flooding
	// the log (docs/reliability.md F9).
	spoolLog     rate.Sometimes
	spoolLogSkip atomic.Int64
}

// spoolLogEvery is the interval between two "spool write failed" log lines.
const spoolLogEvery = 10 * time.Second

// New returns a Service submitting to batcher.
func New(batcher *fusion.Batcher, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.NewID == nil {
		opts.NewID = newV7
	}
	if opts.SpooledAhead == nil {
		opts.SpooledAhead = func(string, string, string) bool { return false }
		if opts.Spool != nil {
			opts.SpooledAhead = opts.Spool.Pending
		}
	}
	return &Service{batcher: batcher, opts: opts, spoolLog: rate.Sometimes{First: 1, Interval: spoolLogEvery}}
}

// newV7 mints a UUIDv7 with github.com/google/uuid. Its NewV7 allocates and takes a
// global lock for the sequence (about 0.6 µs of CPU per pushed message under single-
// message pushes, profiled for docs/benchmarks.md); a hand-written minter would save that, but ids
// are the kind of generic code the project leaves to a well-kept library.
func newV7() [16]byte {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 only fails when the system's random source does: nothing can be minted.
		panic(fmt.Sprintf("push: mint UUIDv7: %v", err))
	}
	return id
}

// Stats are cumulative request and message counts.
type Stats struct{ Requests, Messages uint64 }

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{Requests: s.requests.Load(), Messages: s.messages.Load()}
}

// Push stores items (already validated) for tenant and returns one result per item in
// order. producerSub is the authenticated producer ("" when authentication is off).
func (s *Service) Push(ctx context.Context, tenant, producerSub string, items []Item) []Result {
	s.requests.Add(1)
	s.messages.Add(uint64(len(items)))
	n := len(items)
	results := make([]Result, n)
	for i, it := range items {
		results[i] = s.mint(i, it)
	}
	var slotBuf [smallPush]slot
	var frameBuf [smallPush]segment.Frame
	slots, frames := slotBuf[:min(n, smallPush)], frameBuf[:min(n, smallPush)]
	if n > smallPush {
		slots, frames = make([]slot, n), make([]segment.Frame, n)
	}
	leaders(tenant, results, slots)

	all := s.opts.Spool != nil && s.opts.Divert != nil && s.opts.Divert()
	// While every push is spooled, expired flags are not read: the database may be away
	// (each read would wait for it), and the replay reads them again anyway.
	memo := s.opts.Encryption.Memo(ctx, !all)
	var keyBuf [smallPush]groupKey
	keys, deferred := s.prepare(memo, tenant, producerSub, items, results, slots, frames, keyBuf[:0])
	// Second pass: the groups, with their frames, hashes and verdict slots.
	groups, wg := newGroups(tenant, keys)
	for i := range items {
		sl := slots[i]
		if sl.leader != i || sl.at.group < 0 {
			continue
		}
		g := groups[sl.at.group]
		g.Frames[sl.at.frame] = frames[i]
		g.Hashes[sl.at.frame] = dedup.Hash(results[i].TransactionID)
	}
	diverted, divertedAs := s.divert(ctx, tenant, groups, all, deferred)
	fused := groups
	if !diverted.empty() {
		fused = make([]*fusion.Group, 0, len(groups))
		for gi, g := range groups {
			if !diverted.has(gi) {
				fused = append(fused, g)
			}
		}
	}
	wg.Add(len(fused))
	s.batcher.Submit(fused...) // together: one request's partitions can share a bundle
	wg.Wait()
	refused := s.resealRefused(ctx, tenant, groups)
	spilled := s.spoolFailed(ctx, tenant, groups, diverted)

	for i := range results {
		sl := slots[i]
		if sl.leader != i || sl.at.group < 0 {
			continue
		}
		r := &results[i]
		// A spooled frame has no partition id or offset yet: they come with the replay.
		if diverted.has(sl.at.group) {
			r.Status = divertedAs
		} else if st, ok := spilled[sl.at]; ok {
			r.Status = st
		} else if err, ok := refused[sl.at]; ok {
			r.Status, r.Err = StatusFailed, err // never stored (refused.go)
		} else {
			fill(r, groups[sl.at.group].Results[sl.at.frame])
		}
	}
	for i := range results {
		if l := slots[i].leader; l != i {
			follow(&results[i], &results[l])
		}
	}
	if s.opts.Activity != nil {
		s.countPushed(tenant, results, slots)
	}
	return results
}

// mint gives item i its message id and resolves its defaults: the Default partition, and
// the message id as transaction id.
func (s *Service) mint(i int, it Item) Result {
	id := s.opts.NewID()
	part := it.Partition
	if part == "" {
		part = DefaultPartition
	}
	txn := it.TransactionID
	if txn == "" {
		txn = uuid.UUID(id).String()
	}
	return Result{Index: i, MessageID: id, TransactionID: txn, Queue: it.Queue, Partition: part}
}

// fill copies a leader's fusion verdict into its result.
func fill(r *Result, v fusion.Result) {
	r.PartitionID = v.PartitionID
	switch v.Status {
	case fusion.Queued:
		r.Status, r.Offset, r.HasOffset = StatusQueued, v.Offset, true
	case fusion.Duplicate:
		r.Status, r.Offset, r.HasOffset, r.MessageID = StatusDuplicate, v.Offset, true, v.MessageID
	default:
		r.Status = StatusError
	}
}

// follow makes a layer-1 follower report its leader's final id and offset. A follower of
// a leader that was not stored shares the leader's status (and refusal): it is not a
// duplicate of anything stored.
func follow(r, leader *Result) {
	r.MessageID, r.PartitionID = leader.MessageID, leader.PartitionID
	r.Offset, r.HasOffset = leader.Offset, leader.HasOffset
	switch leader.Status {
	case StatusQueued, StatusDuplicate:
		r.Status = StatusDuplicate
	default:
		r.Status, r.Err = leader.Status, leader.Err
	}
}
