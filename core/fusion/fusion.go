package fusion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/core/vegas"
	"github.com/queen-go/queen/ports"
)

// Status is a frame's verdict.
type Status uint8

const (
	// Queued: stored at Offset.
	Queued Status = iota + 1
	// Duplicate: an equal transactionId is already stored at Offset (or earlier in the
	// same flush); MessageID is the original's id, zero when it is gone.
	Duplicate
	// Error: the bundle carrying the frame failed; nothing was stored.
	Error
)

// Result is the verdict of one frame.
type Result struct {
	Status      Status
	Offset      int64
	CreatedAt   time.Time
	PartitionID string
	MessageID   [16]byte
	// Err says why an Error frame was not stored: the bundle's error (wrapping the ports
	// sentinel that classifies it), ErrClosed, ErrEncrypts, or errBadResult.
	Err error
}

// Group is one request's frames for one (tenant, queue, partition), in body order.
// Results is filled in frame order; Done is called once, after the last verdict.
type Group struct {
	Tenant, Queue, Partition string
	Frames                   []segment.Frame
	Hashes                   [][16]byte // xxh3-128 of each frame's transaction id
	Results                  []Result
	Done                     func()
	// Minted says every frame's transaction id is one this broker has just minted (a new
	// UUIDv7 message id): none can be in the dedup cache yet, so building its segment
	// skips the cache lookups (its hashes are still remembered once committed: a client
	// may push again with the id it was answered).
	Minted bool

	remaining atomic.Int64
}

// The defaults of Options that the server's variables share: config's defaults are these
// values (its tests check it).
const (
	DefaultShards     = 8                     // QUEEN_V2_FUSION_SHARDS
	DefaultBundleMax  = 64                    // QUEEN_V2_BUNDLE_MAX: partitions per commit
	DefaultHold       = 15 * time.Millisecond // QUEEN_V2_FUSION_HOLD_MS
	DefaultCacheBytes = 512 << 20             // QUEEN_DEDUP_CACHE_MB, in bytes
)

// Options tunes a Batcher; zero values take the defaults in brackets.
type Options struct {
	Shards       int           // [8] QUEEN_V2_FUSION_SHARDS
	BundleMax    int           // [64] QUEEN_V2_BUNDLE_MAX: partitions per commit
	Hold         time.Duration // [15ms] QUEEN_V2_FUSION_HOLD_MS: liveness backstop tick
	MaxInflight  int           // [8] concurrent bundles a shard opens itself (its offers ride others' bundles; the limiter bounds all)
	Limiter      *vegas.Limiter
	Logger       *slog.Logger
	SummaryEvery time.Duration // [10s] cadence of the bundle summary log line
	// CacheBytes bounds the dedup cache's memory across all shards, counted as
	// cacheEntryBytes per remembered hash [512 MiB: QUEEN_DEDUP_CACHE_MB]; negative
	// disables the cache (QUEEN_DEDUP_CACHE=false).
	CacheBytes int64
	// Commits, when set, hears of every committed segment (announced from the goroutine
	// routing the bundle's answers).
	Commits *notify.Commits
	// Stages times the push path's wait, commit and route stages [its own].
	Stages *stages.Timers
}

func (o *Options) defaults() {
	if o.Shards <= 0 {
		o.Shards = DefaultShards
	}
	if o.BundleMax <= 0 {
		o.BundleMax = DefaultBundleMax
	}
	if o.Hold <= 0 {
		o.Hold = DefaultHold
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 8
	}
	if o.Limiter == nil {
		o.Limiter = vegas.New(vegas.Options{})
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SummaryEvery <= 0 {
		o.SummaryEvery = 10 * time.Second
	}
	if o.Stages == nil {
		o.Stages = stages.New()
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
}

// ErrClosed is logged for groups submitted before Start or after Stop; they resolve to
// Error.
var ErrClosed = errors.New("fusion: batcher not running")

// ErrEncrypts is the Err of the frames of a segment the store refused because it holds
// plaintext and its queue encrypts (ports.SegmentEncrypted): the pusher decided from a
// stale encryptionEnabled flag. Nothing was stored; the frames may be sealed and
// pushed again, never spooled as they are.
var ErrEncrypts = errors.New("the queue has encryptionEnabled and the payload was not encrypted; it was not stored")

// Batcher is the fusion layer. Create it with New; it runs from Start until Stop.
type Batcher struct {
	store  ports.SegmentStore
	codec  *segment.Codec
	opts   Options
	shards []*shard

	mu      sync.RWMutex // guards started and closed against concurrent Submit
	started bool
	closed  bool
	wg      sync.WaitGroup // the tick, flushes, routing and warm-up reads
	stop    chan struct{}  // closed by Stop: the summary logger ends
	quit    chan struct{}  // closed by Stop once everything submitted is done: the tick ends
	quitted sync.Once

	warmSlots  chan struct{}   // semaphore of concurrent dedup cache warm-up reads
	warmCtx    context.Context // cancelled by Close: warm-ups are optional work
	cancelWarm context.CancelFunc

	offerMu  sync.Mutex
	offered  []flushPart  // ready partitions handed over by shards that found no permit, oldest first
	nOffered atomic.Int32 // len(offered), read without the lock

	stats counters
	push  *stages.Push // opts.Stages' push path
}

// New returns a Batcher committing through store; it starts nothing (see Start).
func New(store ports.SegmentStore, codec *segment.Codec, opts Options) *Batcher {
	opts.defaults()
	b := &Batcher{
		store:     store,
		codec:     codec,
		opts:      opts,
		stop:      make(chan struct{}),
		quit:      make(chan struct{}),
		warmSlots: make(chan struct{}, warmParallel),
		push:      &opts.Stages.Push,
	}
	b.warmCtx, b.cancelWarm = context.WithCancel(context.Background())
	b.shards = make([]*shard, opts.Shards)
	for i := range b.shards {
		b.shards[i] = newShard(b)
	}
	return b
}

// Start launches the liveness tick and the summary logger. It does nothing when the
// Batcher already started or stopped.
func (b *Batcher) Start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.started || b.closed {
		return
	}
	b.started = true
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.tick()
	}()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.summarize()
	}()
}

// Submit hands groups to their shards; groups of one call that share a shard arrive
// there together, so one request's partitions can ride one bundle. It never waits for
// the commit: each group's Done is called when all its frames have verdicts. Groups
// without frames complete at once. Submit may keep the groups slice until every group
// is done: the caller must not change it meanwhile.
func (b *Batcher) Submit(groups ...*Group) {
	one, same := -1, true // the shard of every group with frames, while they share one
	for _, g := range groups {
		n := len(g.Frames)
		if len(g.Results) != n {
			g.Results = make([]Result, n)
		}
		if n == 0 {
			same = false // not handed over: the groups with frames are sent apart
			continue
		}
		g.remaining.Store(int64(n))
		if i := b.shardOf(g); one < 0 {
			one = i
		} else if i != one {
			same = false
		}
	}
	if one < 0 {
		b.doneEmpty(groups) // no frames at all
		return
	}
	if same {
		// The common case (a single-partition request): the caller's slice, as it is.
		b.handOver(one, groups)
		return
	}
	perShard := make([][]*Group, len(b.shards)) // small: one slice header per shard
	for _, g := range groups {
		if len(g.Frames) > 0 {
			i := b.shardOf(g)
			perShard[i] = append(perShard[i], g)
		}
	}
	b.doneEmpty(groups)
	for i, gs := range perShard {
		if len(gs) > 0 {
			b.handOver(i, gs)
		}
	}
}

// doneEmpty finishes the groups without frames.
func (b *Batcher) doneEmpty(groups []*Group) {
	for _, g := range groups {
		if len(g.Frames) == 0 {
			g.Done()
		}
	}
}

// handOver sends shard i its groups gs, or answers them Error when the Batcher is not
// running.
func (b *Batcher) handOver(i int, gs []*Group) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed || !b.started {
		b.opts.Logger.Warn("push while fusion is not running", loglimit.Cause("fusion not running"), "groups", len(gs), "err", ErrClosed)
		for _, g := range gs {
			for k := range g.Frames {
				complete(ref{g, k}, Result{Status: Error, Err: ErrClosed})
			}
		}
		return
	}
	b.shards[i].submit(gs)
}

// tick is the liveness backstop, every Hold until Stop is done: offers whose permit
// release was missed leave, queued warm-ups take the slots other shards freed, idle
// parts are swept. One goroutine for all shards: a tick per shard woke eight goroutines
// every 15 ms for nothing most of the time.
func (b *Batcher) tick() {
	t := time.NewTicker(b.opts.Hold)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-b.quit:
			return
		}
		b.fireOffers()
		for _, s := range b.shards {
			s.tick()
		}
	}
}

// idle reports whether no frame is held or in flight in any shard (offered partitions
// count as their owner's in flight).
func (b *Batcher) idle() bool {
	for _, s := range b.shards {
		if !s.idle() {
			return false
		}
	}
	return true
}

func (b *Batcher) shardOf(g *Group) int {
	h := xxh3.New()
	h.WriteString(g.Tenant)
	h.WriteString("\x1f")
	h.WriteString(g.Queue)
	h.WriteString("\x1f")
	h.WriteString(g.Partition)
	return int(h.Sum64() % uint64(len(b.shards)))
}

// Stop stops accepting groups, commits everything already submitted and waits for the
// last flush, or until ctx ends.
func (b *Batcher) Stop(ctx context.Context) error {
	b.mu.Lock()
	first := !b.closed
	if first {
		b.closed = true
		close(b.stop)
		b.cancelWarm()
	}
	started := b.started
	b.mu.Unlock()
	if started {
		// What was submitted commits: completions fire what is ready, the tick what was
		// offered. Poll rather than signal: this runs once per process.
		poll := time.NewTicker(time.Millisecond)
		defer poll.Stop()
		for !b.idle() {
			select {
			case <-poll.C:
			case <-ctx.Done():
				return fmt.Errorf("fusion: stop: %w", ctx.Err())
			}
		}
	}
	b.quitted.Do(func() { close(b.quit) })
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("fusion: stop: %w", ctx.Err())
	}
}

// Stats returns cumulative counters.
func (b *Batcher) Stats() Stats { return b.stats.snapshot() }

// complete records a frame's verdict and finishes its group after the last one.
func complete(r ref, res Result) {
	r.g.Results[r.i] = res
	if r.g.remaining.Add(-1) == 0 {
		r.g.Done()
	}
}

// Stats are cumulative fusion counters.
type Stats struct {
	Commits       uint64  // bundles committed
	Failed        uint64  // bundles that failed as a whole
	Segments      uint64  // segments committed or answered duplicate
	Frames        uint64  // frames fired in bundles (layer-2 followers included)
	ItemsPerBatch float64 // moving average of frames per bundle
}

// Combine is the statistics of several batchers as one (a broker on several shards fuses
// per shard): counters add up; the frames per bundle average is weighted by each
// batcher's commits.
func Combine(sts ...Stats) Stats {
	var out Stats
	var weighted float64
	for _, st := range sts {
		out.Commits += st.Commits
		out.Failed += st.Failed
		out.Segments += st.Segments
		out.Frames += st.Frames
		weighted += st.ItemsPerBatch * float64(st.Commits)
	}
	if out.Commits > 0 {
		out.ItemsPerBatch = weighted / float64(out.Commits)
	}
	return out
}

type counters struct {
	commits, failed, segments, frames atomic.Uint64
	itemsPerBatch                     atomic.Uint64 // float64 bits
}

func (c *counters) bundle(segments, frames int) {
	c.commits.Add(1)
	c.segments.Add(uint64(segments))
	c.frames.Add(uint64(frames))
	for {
		old := c.itemsPerBatch.Load()
		avg := math.Float64frombits(old)
		next := float64(frames)
		if avg != 0 {
			next = avg + (next-avg)/16 // exponential average over ~16 bundles
		}
		if c.itemsPerBatch.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

func (c *counters) snapshot() Stats {
	return Stats{
		Commits:       c.commits.Load(),
		Failed:        c.failed.Load(),
		Segments:      c.segments.Load(),
		Frames:        c.frames.Load(),
		ItemsPerBatch: math.Float64frombits(c.itemsPerBatch.Load()),
	}
}

// summarize logs the bundle summary about every SummaryEvery while there is traffic.
func (b *Batcher) summarize() {
	t := time.NewTicker(b.opts.SummaryEvery)
	defer t.Stop()
	var last Stats // the counters start at zero with the Batcher: a late first run misses nothing
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		now := b.stats.snapshot()
		commits, segs := now.Commits-last.Commits, now.Segments-last.Segments
		if commits > 0 || now.Failed > last.Failed {
			b.opts.Logger.Info("fusion bundle summary",
				"target", "fusion",
				"commits", commits,
				"segments", segs,
				"segments_per_commit", math.Round(float64(segs)/float64(max(commits, 1))*100)/100,
				"items", now.Frames-last.Frames,
				"failed_bundles", now.Failed-last.Failed,
				"push_limit", b.opts.Limiter.Limit())
		}
		last = now
	}
}
