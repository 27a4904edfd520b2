package consume

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/hotlist"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/ports"
)

// The defaults of Options that the server's variables share: config's defaults are these
// values (its tests check it).
const (
	DefaultTimeout        = 30 * time.Second       // DEFAULT_TIMEOUT
	DefaultPollInitial    = 100 * time.Millisecond // POP_WAIT_INITIAL_INTERVAL_MS
	DefaultPollThreshold  = 3                      // POP_WAIT_BACKOFF_THRESHOLD
	DefaultPollMultiplier = 2.0                    // POP_WAIT_BACKOFF_MULTIPLIER
	DefaultPollMax        = time.Second            // POP_WAIT_MAX_INTERVAL_MS
)

// Options tunes a Service; zero values take the defaults in brackets (docs/api.md §6.2).
type Options struct {
	Sealer         *envelope.Sealer // opens encrypted payloads; nil = delivered as stored
	Waker          *Waker           // [NewWaker()] parked pops wait on it; it hears of commits
	Commits        *notify.Commits  // [none] hears of every dead-letter move
	Hot            *hotlist.List    // [none] serves wildcard pops' candidates; nil: SQL scans
	DefaultTimeout time.Duration    // [30 s] DEFAULT_TIMEOUT: long polls that give no timeout
	// DefaultSubscription is where a new named group starts when its pop names no
	// subscription mode: ports.SubscribeAll [default] or ports.SubscribeNew
	// (DEFAULT_SUBSCRIPTION_MODE).
	DefaultSubscription string
	PollInitial         time.Duration // [100 ms] POP_WAIT_INITIAL_INTERVAL_MS
	PollThreshold       int           // [3] POP_WAIT_BACKOFF_THRESHOLD
	PollMultiplier      float64       // [2.0] POP_WAIT_BACKOFF_MULTIPLIER
	PollMax             time.Duration // [1 s] POP_WAIT_MAX_INTERVAL_MS
	Logger              *slog.Logger
	// Paused, when set and true, makes every pop claim nothing (pop maintenance): it
	// answers at once, or keeps a long poll parked without claiming.
	Paused func() bool
	// Activity, when set, hears of every answered pop (once per request and queue, an
	// empty long poll once however often it re-checked) and of every call's committed
	// acks (the metrics history, core/history).
	Activity ports.Activity
	// Stages times the claim stage: each claim call to the store [its own].
	Stages *stages.Timers
}

func (o *Options) defaults() {
	if o.Waker == nil {
		o.Waker = NewWaker()
	}
	if o.Stages == nil {
		o.Stages = stages.New()
	}
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.DefaultSubscription != ports.SubscribeNew {
		o.DefaultSubscription = ports.SubscribeAll
	}
	if o.PollInitial <= 0 {
		o.PollInitial = DefaultPollInitial
	}
	if o.PollThreshold <= 0 {
		o.PollThreshold = DefaultPollThreshold
	}
	if o.PollMultiplier < 1 {
		o.PollMultiplier = DefaultPollMultiplier
	}
	if o.PollMax <= 0 {
		o.PollMax = DefaultPollMax
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Service is the consume use case.
type Service struct {
	store ports.ConsumeStore
	codec *segment.Codec
	opts  Options

	stopOnce sync.Once
	stopping chan struct{} // closed by Stop

	// The counters Stats reports (the Prometheus exporter reads them at scrape time).
	pops, popped, acks, acked atomic.Uint64

	parts partitionQueues // with Options.Activity: the queue of partitions, for acks
}

// Stats are cumulative pop and ack counts since the Service was built.
type Stats struct {
	PopRequests uint64 // pops with a valid query, whether they claimed anything or not
	PopMessages uint64 // messages those pops delivered
	AckRequests uint64 // Ack calls
	AckMessages uint64 // acknowledgements the store applied (results with OK)
}

// Stats returns the counters.
func (s *Service) Stats() Stats {
	return Stats{PopRequests: s.pops.Load(), PopMessages: s.popped.Load(),
		AckRequests: s.acks.Load(), AckMessages: s.acked.Load()}
}

// New returns a Service over store, decoding segments with codec.
func New(store ports.ConsumeStore, codec *segment.Codec, opts Options) *Service {
	opts.defaults()
	return &Service{store: store, codec: codec, opts: opts, stopping: make(chan struct{})}
}

// Stop ends long polls for the broker's shutdown: parked pops answer at once with
// nothing claimed, and later pops do not park. A graceful HTTP shutdown waits for
// in-flight requests, and would otherwise wait for every parked poll's timeout (then
// find the database closed under the polls still running). Claims in progress finish.
func (s *Service) Stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// Waker returns the waker parked pops listen on: the push path notifies it on commits.
func (s *Service) Waker() *Waker { return s.opts.Waker }

// Batch is the answer to a pop that claimed something.
type Batch struct {
	Queue             string // "" for discovery pops
	Partition         string // of the first claimed partition
	PartitionID       string
	LeaseID           string // "" with autoAck
	Group             string
	Messages          []Message
	PartitionsClaimed int
	// Claimed is when the store's claim returned: decoding and writing the answer since
	// is the pop's answer stage (core/stages).
	Claimed time.Time
}

// Message is one delivered message.
type Message struct {
	ID            string
	TransactionID string
	TraceID       string // "" when none
	Data          json.RawMessage
	ProducerSub   string // "" when none
	CreatedAt     time.Time
	Queue         string
	PartitionID   string
	Partition     string
	LeaseID       string
	Group         string
	Attempt       int
}

// Pop claims messages for q (resolved by Request: an *InputError or
// ErrDiscoveryRequired for a query it refuses). A long poll that claims nothing parks up
// to its deadline for a commit to the queue (any queue for discovery pops). It returns
// nil when nothing was claimed, and ctx's error when the client went away while parked.
func (s *Service) Pop(ctx context.Context, q PopQuery) (*Batch, error) {
	req, wait, err := s.Request(q)
	if err != nil {
		return nil, err
	}
	s.pops.Add(1)
	b, err := s.pop(ctx, req, wait)
	if b != nil {
		s.popped.Add(uint64(len(b.Messages)))
	}
	if s.opts.Activity != nil && err == nil {
		s.countPop(req, b)
	}
	return b, err
}

// pop claims for req, parking up to wait when nothing is there.
func (s *Service) pop(ctx context.Context, req ports.PopRequest, wait time.Duration) (*Batch, error) {
	deadline := time.Now().Add(wait)
	for empties := 0; ; empties++ {
		// Register before claiming: a commit between an empty claim and the wait
		// wakes this registration, so it is never missed.
		var parked *Wait
		if wait > 0 {
			parked = s.park(req)
		}
		if b, err := s.claim(ctx, req); b != nil || err != nil {
			parked.Done(false) // a wake that came during the claim may be for data left behind
			return b, err
		}
		again, err := s.await(ctx, parked, time.Until(deadline), empties)
		if !again {
			return nil, err
		}
	}
}

// claim makes one claim attempt (none during pop maintenance) and decodes what it got.
func (s *Service) claim(ctx context.Context, req ports.PopRequest) (*Batch, error) {
	if s.opts.Paused != nil && s.opts.Paused() {
		return nil, nil
	}
	claims, err := s.popStore(ctx, req)
	if err != nil || len(claims) == 0 {
		return nil, err
	}
	claimed := time.Now()
	if ctx.Err() != nil {
		return nil, s.release(req, claims, ctx.Err())
	}
	b, err := s.batch(req, claims)
	if b != nil {
		b.Claimed = claimed
	}
	if err != nil && req.AutoAck {
		// The claim already moved the cursors: give the spans back, or their messages
		// (and those of every partition claimed with them) would be skipped unseen. A
		// leased claim keeps its lease: it redelivers at expiry, which also paces retries
		// of a span that cannot be read.
		return nil, s.release(req, claims, err)
	}
	return b, err
}

// popStore makes one claim call. A wildcard pop the hot-list serves names its candidates
// and checks them in with the store's verdicts; a ring with nothing claims nothing
// without asking the store. Any other pop scans in SQL (after which the hot-list may
// register the group's ring).
func (s *Service) popStore(ctx context.Context, req ports.PopRequest) ([]ports.Claim, error) {
	t := s.opts.Hot.CheckOut(req)
	if t == nil {
		claims, _, err := s.storePop(ctx, req)
		if err == nil {
			s.opts.Hot.Scanned(req)
		}
		return claims, err
	}
	if len(t.Candidates()) == 0 {
		t.CheckIn(nil, nil)
		return nil, nil
	}
	req.Candidates = t.Candidates()
	claims, verdicts, err := s.storePop(ctx, req)
	t.CheckIn(verdicts, err)
	return claims, err
}

// storePop is the store's claim call, timed (the claim stage).
func (s *Service) storePop(ctx context.Context, req ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	defer s.opts.Stages.Pop.Claim.Since(time.Now())
	return s.store.Pop(ctx, req)
}

// await parks an empty pop until a wake, its next re-check, its deadline (left), the
// client's departure or the broker's stop. It reports whether to claim again, and the
// client's error when it left.
func (s *Service) await(ctx context.Context, parked *Wait, left time.Duration, empties int) (bool, error) {
	if parked == nil || left <= 0 {
		parked.Done(false)
		return false, nil
	}
	t := time.NewTimer(min(s.interval(empties), left))
	defer t.Stop()
	select {
	case <-ctx.Done():
		parked.Done(false)
		return false, ctx.Err()
	case <-s.stopping:
		parked.Done(false)
		return false, nil
	case <-parked.C():
	case <-t.C:
	}
	parked.Done(true) // about to claim again
	return true, nil
}

// release gives back claims whose messages will not reach the client (it went away
// while they ran, or they could not be decoded): they must stay deliverable (with
// autoAck they would otherwise be lost). It returns why the pop ended.
func (s *Service) release(req ports.PopRequest, claims []ports.Claim, why error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.store.Release(ctx, req.Group, req.LeaseID, req.AutoAck, claims); err != nil {
		s.opts.Logger.Warn("consume: could not release the claims of a client that went away; leased spans redeliver at lease expiry",
			loglimit.Cause("consume release failed"),
			"group", req.Group, "partitions", len(claims), "auto_ack", req.AutoAck, "err", err)
		return why
	}
	for _, c := range claims {
		s.opts.Hot.Acked(req.Tenant, c.Queue, req.Group, c.PartitionID, false) // deliverable again
	}
	return why
}

// park registers req as a parked pop.
func (s *Service) park(req ports.PopRequest) *Wait {
	if req.Queue == "" {
		return s.opts.Waker.WaitAny(req.Group)
	}
	return s.opts.Waker.Wait(notify.QueueKey(req.Tenant, req.Queue), req.Group, req.Partition)
}

// interval is the re-check delay after the given number of consecutive empty pops.
func (s *Service) interval(empties int) time.Duration {
	if empties < s.opts.PollThreshold {
		return s.opts.PollInitial
	}
	d := time.Duration(float64(s.opts.PollInitial) * float64(empties) * s.opts.PollMultiplier)
	return min(d, s.opts.PollMax)
}

// batch decodes the claimed spans into messages, partitions in claim order.
func (s *Service) batch(req ports.PopRequest, claims []ports.Claim) (*Batch, error) {
	b := &Batch{Queue: req.Queue, Partition: claims[0].Partition, PartitionID: claims[0].PartitionID,
		Group: req.Group, PartitionsClaimed: len(claims)}
	if !req.AutoAck {
		b.LeaseID = req.LeaseID
	}
	for i := range claims {
		msgs, err := s.messages(&claims[i], b)
		if err != nil {
			return nil, err
		}
		b.Messages = append(b.Messages, msgs...)
	}
	return b, nil
}

func (s *Service) messages(c *ports.Claim, b *Batch) ([]Message, error) {
	out := make([]Message, 0, c.End-c.Start+1)
	next := c.Start
	for _, seg := range c.Segments {
		last := seg.BaseOffset + int64(seg.Count) - 1
		if last < next || seg.BaseOffset > c.End {
			continue
		}
		frames, err := s.codec.Decode(seg.Blob)
		if err != nil {
			return nil, fmt.Errorf("consume: partition %s segment %d: %w", c.PartitionID, seg.BaseOffset, err)
		}
		if len(frames) != seg.Count {
			return nil, fmt.Errorf("consume: partition %s segment %d: %d frames, want %d: %w",
				c.PartitionID, seg.BaseOffset, len(frames), seg.Count, segment.ErrCorrupt)
		}
		for off := max(next, seg.BaseOffset); off <= min(last, c.End); off++ {
			out = append(out, s.message(&frames[off-seg.BaseOffset], seg.CreatedAt, c, b))
		}
		next = min(last, c.End) + 1
	}
	if next != c.End+1 {
		// A span the segments do not cover means the log lost data under the cursor:
		// refuse to deliver around the hole rather than skip messages silently.
		return nil, fmt.Errorf("consume: partition %s: segments cover %d..%d of span %d..%d: %w",
			c.PartitionID, c.Start, next-1, c.Start, c.End, segment.ErrCorrupt)
	}
	return out, nil
}

func (s *Service) message(f *segment.Frame, at time.Time, c *ports.Claim, b *Batch) Message {
	m := Message{
		ID: uuid.UUID(f.ID).String(), TransactionID: f.TransactionID, ProducerSub: f.ProducerSub,
		CreatedAt: at, Queue: c.Queue, PartitionID: c.PartitionID, Partition: c.Partition,
		LeaseID: b.LeaseID, Group: b.Group, Attempt: c.Attempt, Data: f.Payload,
	}
	if f.HasTrace {
		m.TraceID = uuid.UUID(f.TraceID).String()
	}
	if f.Encrypted {
		m.Data = s.open(f.Payload, c.PartitionID)
	}
	if len(m.Data) == 0 {
		m.Data = json.RawMessage("null")
	}
	return m
}

// open decrypts an envelope. Without the key (or with a different one) the message is
// still delivered, with data null, so the partition is not wedged behind it.
func (s *Service) open(env []byte, pid string) json.RawMessage {
	if s.opts.Sealer == nil {
		s.opts.Logger.Warn("consume: encrypted message but QUEEN_ENCRYPTION_KEY is not set", loglimit.Cause("consume key missing"),
			"partition_id", pid)
		return nil
	}
	plain, err := s.opts.Sealer.Open(env)
	if err != nil {
		s.opts.Logger.Warn("consume: cannot decrypt message", loglimit.Cause("consume decrypt failed"), "partition_id", pid, "err", err)
		return nil
	}
	return plain
}
