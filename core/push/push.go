package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

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

	// Transactions and Codec enable Transaction (api.md §5.4).
	Transactions ports.TransactionStore
	Codec        *segment.Codec
	// Commits, when set, hears of every segment a transaction committed.
	Commits *notify.Commits

	// Spool, when set, keeps what the database did not take: items of a failed bundle
	// are spooled and answered buffered (failed when the spool write fails too).
	Spool *spool.Spool
	// Divert, when set and true, sends every push to the spool without trying the
	// database (push maintenance, or the database known to be away).
	Divert func() bool
	// BundleFailed, when set, is told that a bundle did not reach the database.
	BundleFailed func()
}

// Service runs pushes through a fusion batcher.
type Service struct {
	batcher *fusion.Batcher
	opts    Options

	requests, messages atomic.Uint64
}

// New returns a Service submitting to batcher.
func New(batcher *fusion.Batcher, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.NewID == nil {
		opts.NewID = newV7
	}
	return &Service{batcher: batcher, opts: opts}
}

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

// slot locates an item's verdict: frame frame of group group, or a follower of leader.
// A leader refused before it reached a group has group -1.
type slot struct {
	group, frame int
	leader       int
}

// Push stores items (already validated) for tenant and returns one result per item in
// order. producerSub is the authenticated producer ("" when authentication is off).
func (s *Service) Push(ctx context.Context, tenant, producerSub string, items []Item) []Result {
	s.requests.Add(1)
	s.messages.Add(uint64(len(items)))
	results := make([]Result, len(items))
	keys := make([]dedup.Key, len(items))
	for i, it := range items {
		results[i] = s.mint(i, it)
		keys[i] = dedup.Key{Tenant: tenant, Queue: it.Queue, Partition: results[i].Partition, TransactionID: results[i].TransactionID}
	}
	leaders := dedup.Leaders(keys)

	var groups []*fusion.Group
	byPartition := make(map[[2]string]int)
	slots := make([]slot, len(items))
	all := s.opts.Spool != nil && s.opts.Divert != nil && s.opts.Divert()
	// While every push is spooled, expired flags are not read: the database may be away
	// (each read would wait for it), and the replay reads them again anyway.
	memo := s.opts.Encryption.Memo(ctx, !all)
	var deferred map[int]bool // groups that may only be spooled: their flag is unknown (rare: allocated on use)
	var wg sync.WaitGroup
	for i, it := range items {
		if leaders[i] != i {
			slots[i] = slot{leader: leaders[i]}
			continue
		}
		r := &results[i]
		f := segment.Frame{ID: r.MessageID, TransactionID: r.TransactionID, ProducerSub: producerSub, Payload: it.Payload}
		err := memo.Seal(tenant, r.Queue, &f)
		undecided := errors.Is(err, encryption.ErrFlagUnknown) && s.opts.Spool != nil
		if err != nil && !undecided {
			// Refused (encrypted queue without a key, or the seal failed): never stored.
			r.Status, r.Err = StatusFailed, err
			slots[i] = slot{group: -1, leader: i}
			continue
		}
		gk := [2]string{r.Queue, r.Partition}
		gi, ok := byPartition[gk]
		if !ok {
			gi = len(groups)
			byPartition[gk] = gi
			groups = append(groups, &fusion.Group{Tenant: tenant, Queue: r.Queue, Partition: r.Partition, Done: wg.Done})
		}
		if undecided {
			// Spooled as pushed, never sent to the database: the replay reads the flag
			// again and seals the payload, or refuses it, before anything is stored.
			if deferred == nil {
				deferred = make(map[int]bool)
			}
			deferred[gi] = true
		}
		g := groups[gi]
		slots[i] = slot{group: gi, frame: len(g.Frames), leader: i}
		g.Frames = append(g.Frames, f)
		g.Hashes = append(g.Hashes, dedup.Hash(r.TransactionID))
	}
	spooled := s.divert(ctx, tenant, groups, all, deferred)
	fused := make([]*fusion.Group, 0, len(groups))
	for gi, g := range groups {
		if _, ok := spooled[[2]int{gi, 0}]; !ok { // a diverted group is spooled whole
			fused = append(fused, g)
		}
	}
	wg.Add(len(fused))
	s.batcher.Submit(fused...) // together: one request's partitions can share a bundle
	wg.Wait()
	maps.Copy(spooled, s.spoolFailed(ctx, tenant, groups, spooled))

	for i := range results {
		sl := slots[i]
		if sl.leader != i || sl.group < 0 {
			continue
		}
		if st, ok := spooled[[2]int{sl.group, sl.frame}]; ok {
			results[i].Status = st // no partition id or offset yet: they come with the replay
			continue
		}
		fill(&results[i], groups[sl.group].Results[sl.frame])
	}
	for i := range results {
		if l := slots[i].leader; l != i {
			follow(&results[i], &results[l])
		}
	}
	return results
}

// divert spools, without trying the database, every group that must not go there now:
// all of them (all: under push maintenance or while the database is known to be away),
// any group whose partition still has spooled records (they must commit first, so the
// partition keeps its order across the outage), and the deferred groups (their
// encryption is decided at replay). It returns the status of every frame of the
// diverted groups, keyed (group, frame): buffered, or failed when the spool write
// failed.
func (s *Service) divert(ctx context.Context, tenant string, groups []*fusion.Group, all bool, deferred map[int]bool) map[[2]int]Status {
	spooled := make(map[[2]int]Status)
	if s.opts.Spool == nil {
		return spooled
	}
	var refs [][2]int
	for gi, g := range groups {
		if all || deferred[gi] || s.opts.Spool.Pending(tenant, g.Queue, g.Partition) {
			for k := range g.Frames {
				refs = append(refs, [2]int{gi, k})
			}
		}
	}
	s.spoolFrames(ctx, tenant, groups, refs, spooled)
	return spooled
}

// spoolFailed spools the frames of the groups sent to the database whose bundle failed
// and returns their new status by (group, frame).
func (s *Service) spoolFailed(ctx context.Context, tenant string, groups []*fusion.Group, diverted map[[2]int]Status) map[[2]int]Status {
	if s.opts.Spool == nil {
		return nil
	}
	var refs [][2]int
	for gi, g := range groups {
		if _, ok := diverted[[2]int{gi, 0}]; ok {
			continue
		}
		for k, r := range g.Results {
			if r.Status == fusion.Error {
				refs = append(refs, [2]int{gi, k})
			}
		}
	}
	if len(refs) > 0 && s.opts.BundleFailed != nil {
		s.opts.BundleFailed()
	}
	out := make(map[[2]int]Status, len(refs))
	s.spoolFrames(ctx, tenant, groups, refs, out)
	return out
}

// spoolFrames makes frames refs (group, frame) of groups durable in the spool in one
// append, and records their status in into: buffered, or failed when it cannot.
func (s *Service) spoolFrames(ctx context.Context, tenant string, groups []*fusion.Group, refs [][2]int, into map[[2]int]Status) {
	if len(refs) == 0 {
		return
	}
	recs := make([]spool.Record, len(refs))
	for i, ref := range refs {
		recs[i] = record(tenant, groups[ref[0]], ref[1])
	}
	st := StatusBuffered
	if err := s.opts.Spool.Append(ctx, recs); err != nil {
		s.opts.Logger.Error("push: spool write failed, answering failed", "items", len(recs), "err", err)
		st = StatusFailed
	}
	for _, ref := range refs {
		into[ref] = st
	}
}

// record is frame k of g as a spool record.
func record(tenant string, g *fusion.Group, k int) spool.Record {
	f := &g.Frames[k]
	return spool.Record{Tenant: tenant, Queue: g.Queue, Partition: g.Partition, TransactionID: f.TransactionID,
		ProducerSub: f.ProducerSub, MessageID: f.ID, TraceID: f.TraceID, HasTrace: f.HasTrace,
		Encrypted: f.Encrypted, Payload: f.Payload}
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
