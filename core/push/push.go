package push

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
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
	return &Service{batcher: batcher, opts: opts, spoolLog: rate.Sometimes{First: 1, Interval: spoolLogEvery}}
}

// newV7 mints a UUIDv7 with github.com/google/uuid. Its NewV7 allocates and takes a
// global lock for the sequence (about 0.6 µs of CPU per pushed message under single-
// message pushes, issue 18's profile); a hand-written minter would save that, but ids
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

// slot locates an item's verdict: frame frame of group group, or a follower of leader.
// A leader refused before it reached a group has group -1.
type slot struct {
	group, frame int
	leader       int
}

// smallPush bounds the requests whose per-item bookkeeping lives on the stack and whose
// layer-1 leaders and groups are found by linear scans instead of maps: most pushes
// carry a few items, and a single-message push is the broker's most frequent request.
const smallPush = 8

// groupKey is a group's partition and its frame count while a request is grouped.
type groupKey struct {
	queue, partition string
	frames           int
	given            bool // a frame carries a transaction id from the request (not minted)
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
	var deferred map[int]bool // groups that may only be spooled: their flag is unknown (rare: allocated on use)
	// First pass: each leader's frame, prepared for its queue, and its group (groups in
	// order of first appearance, frames in body order).
	var keyBuf [smallPush]groupKey
	keys := keyBuf[:0]
	var index map[[2]string]int // (queue, partition) -> group, once there are more than smallPush groups
	for i, it := range items {
		if slots[i].leader != i {
			continue // a layer-1 follower: no frame of its own
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
		var gi int
		keys, index, gi = groupOf(keys, index, r.Queue, r.Partition)
		if undecided {
			// Spooled as pushed, never sent to the database: the replay reads the flag
			// again and seals the payload, or refuses it, before anything is stored.
			if deferred == nil {
				deferred = make(map[int]bool)
			}
			deferred[gi] = true
		}
		slots[i] = slot{group: gi, frame: keys[gi].frames, leader: i}
		keys[gi].frames++
		keys[gi].given = keys[gi].given || it.TransactionID != ""
		frames[i] = f
	}
	// Second pass: the groups, with their frames, hashes and verdict slots.
	groups, wg := newGroups(tenant, keys)
	for i := range items {
		sl := slots[i]
		if sl.leader != i || sl.group < 0 {
			continue
		}
		g := groups[sl.group]
		g.Frames[sl.frame] = frames[i]
		g.Hashes[sl.frame] = dedup.Hash(results[i].TransactionID)
	}
	spooled := s.divert(ctx, tenant, groups, all, deferred)
	fused := groups
	if len(spooled) > 0 {
		fused = make([]*fusion.Group, 0, len(groups))
		for gi, g := range groups {
			if _, ok := spooled[[2]int{gi, 0}]; !ok { // a diverted group is spooled whole
				fused = append(fused, g)
			}
		}
	}
	wg.Add(len(fused))
	s.batcher.Submit(fused...) // together: one request's partitions can share a bundle
	wg.Wait()
	refused := s.resealRefused(ctx, tenant, groups)
	if failed := s.spoolFailed(ctx, tenant, groups, spooled); len(failed) > 0 {
		if spooled == nil {
			spooled = failed
		} else {
			maps.Copy(spooled, failed)
		}
	}

	for i := range results {
		sl := slots[i]
		if sl.leader != i || sl.group < 0 {
			continue
		}
		if st, ok := spooled[[2]int{sl.group, sl.frame}]; ok {
			results[i].Status = st // no partition id or offset yet: they come with the replay
			continue
		}
		if err, ok := refused[[2]int{sl.group, sl.frame}]; ok {
			results[i].Status, results[i].Err = StatusFailed, err // never stored (refused.go)
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

// leaders sets each item's layer-1 leader (tenant, queue, partition, transactionId: the
// first occurrence leads, dedup.Leaders) in slots, from the minted results.
func leaders(tenant string, results []Result, slots []slot) {
	if len(results) <= smallPush {
		for i := range results {
			r, j := &results[i], 0
			for j < i && (results[j].TransactionID != r.TransactionID || results[j].Partition != r.Partition ||
				results[j].Queue != r.Queue) {
				j++
			}
			slots[i].leader = j
		}
		return
	}
	keys := make([]dedup.Key, len(results))
	for i := range results {
		r := &results[i]
		keys[i] = dedup.Key{Tenant: tenant, Queue: r.Queue, Partition: r.Partition, TransactionID: r.TransactionID}
	}
	for i, l := range dedup.Leaders(keys) {
		slots[i].leader = l
	}
}

// groupOf returns the index of the group of (queue, partition) in keys, adding it when it
// is new: a linear scan for the first smallPush groups, a map (index) beyond.
func groupOf(keys []groupKey, index map[[2]string]int, queue, partition string) ([]groupKey, map[[2]string]int, int) {
	if index == nil {
		for gi := range keys {
			if keys[gi].partition == partition && keys[gi].queue == queue {
				return keys, nil, gi
			}
		}
		if len(keys) < smallPush {
			return append(keys, groupKey{queue: queue, partition: partition}), nil, len(keys)
		}
		index = make(map[[2]string]int, 2*smallPush)
		for gi, k := range keys {
			index[[2]string{k.queue, k.partition}] = gi
		}
	}
	if gi, ok := index[[2]string{queue, partition}]; ok {
		return keys, index, gi
	}
	index[[2]string{queue, partition}] = len(keys)
	return append(keys, groupKey{queue: queue, partition: partition}), index, len(keys)
}

// single is the fusion group of a request with one frame to store (a single-message
// push), with its frame, hash, verdict and wait group, in one allocation.
type single struct {
	g      fusion.Group
	groups [1]*fusion.Group
	frame  [1]segment.Frame
	hash   [1][16]byte
	result [1]fusion.Result
	wg     sync.WaitGroup
}

// newGroups makes the fusion groups of keys, each with room for its frames, their
// hashes and their verdicts, and the wait group their Done counts down: one allocation
// for a single frame, six whatever the number of groups otherwise.
func newGroups(tenant string, keys []groupKey) ([]*fusion.Group, *sync.WaitGroup) {
	if len(keys) == 1 && keys[0].frames == 1 {
		o := &single{}
		o.g = fusion.Group{Tenant: tenant, Queue: keys[0].queue, Partition: keys[0].partition, Done: o.wg.Done,
			Frames: o.frame[:], Hashes: o.hash[:], Results: o.result[:], Minted: !keys[0].given}
		o.groups[0] = &o.g
		return o.groups[:], &o.wg
	}
	total := 0
	for _, k := range keys {
		total += k.frames
	}
	wg := new(sync.WaitGroup)
	arena := make([]fusion.Group, len(keys))
	groups := make([]*fusion.Group, len(keys))
	frames := make([]segment.Frame, total)
	hashes := make([][16]byte, total)
	verdicts := make([]fusion.Result, total)
	off := 0
	for gi, k := range keys {
		end := off + k.frames
		g := &arena[gi]
		g.Tenant, g.Queue, g.Partition, g.Done, g.Minted = tenant, k.queue, k.partition, wg.Done, !k.given
		// Full slice expressions: a group can never grow into its neighbour's frames.
		g.Frames, g.Hashes, g.Results = frames[off:end:end], hashes[off:end:end], verdicts[off:end:end]
		groups[gi] = g
		off = end
	}
	return groups, wg
}

// divert spools, without trying the database, every group that must not go there now:
// all of them (all: under push maintenance or while the database is known to be away),
// any group whose partition still has spooled records (they must commit first, so the
// partition keeps its order across the outage), and the deferred groups (their
// encryption is decided at replay). It returns the status of every frame of the
// diverted groups, keyed (group, frame): buffered, or failed when the spool write
// failed; nil when none was diverted.
func (s *Service) divert(ctx context.Context, tenant string, groups []*fusion.Group, all bool, deferred map[int]bool) map[[2]int]Status {
	if s.opts.Spool == nil {
		return nil
	}
	var refs [][2]int
	for gi, g := range groups {
		if all || deferred[gi] || s.opts.Spool.Pending(tenant, g.Queue, g.Partition) {
			for k := range g.Frames {
				refs = append(refs, [2]int{gi, k})
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	spooled := make(map[[2]int]Status, len(refs))
	s.spoolFrames(ctx, tenant, groups, refs, spooled)
	return spooled
}

// spoolFailed spools the frames of the groups sent to the database whose bundle failed
// and returns their new status by (group, frame); nil when there are none.
func (s *Service) spoolFailed(ctx context.Context, tenant string, groups []*fusion.Group, diverted map[[2]int]Status) map[[2]int]Status {
	if s.opts.Spool == nil {
		return nil
	}
	var refs [][2]int
	down := false
	for gi, g := range groups {
		if _, ok := diverted[[2]int{gi, 0}]; ok {
			continue
		}
		for k, r := range g.Results {
			if r.Status == fusion.Error && !errors.Is(r.Err, fusion.ErrEncrypts) { // refused: never spooled as it is
				refs = append(refs, [2]int{gi, k})
				down = down || outage(r.Err)
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	if down && s.opts.BundleFailed != nil {
		s.opts.BundleFailed()
	}
	out := make(map[[2]int]Status, len(refs))
	s.spoolFrames(ctx, tenant, groups, refs, out)
	return out
}

// outage reports whether a bundle's failure says the database is away (unreachable, or
// too slow to answer): every push is then spooled until it answers again. Any other
// failure (a bundle the store gave up on after colliding with concurrent deletions of
// its queues, ports.ErrConflict; a broker bug) spools the frames it failed and nothing
// else.
func outage(err error) bool {
	return err == nil || errors.Is(err, ports.ErrUnavailable) || errors.Is(err, ports.ErrTimeout) ||
		errors.Is(err, fusion.ErrClosed)
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
		logged := false
		s.spoolLog.Do(func() {
			logged = true
			s.opts.Logger.Error("push: spool write failed, answering failed", "items", len(recs), "err", err,
				"failures_since_last_line", s.spoolLogSkip.Swap(0))
		})
		if !logged {
			s.spoolLogSkip.Add(1)
		}
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
