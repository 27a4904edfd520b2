package fusion

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// ref addresses frame i of group g.
type ref struct {
	g *Group
	i int
}

// part is a shard's state for one (tenant, queue, partition).
type part struct {
	key                      string // partKey(tenant, queue, partition)
	tenant, queue, partition string
	refs                     []ref  // accumulated frames, arrival order
	since                    int64  // arrival of refs[0], unix ns (the wait stage, core/stages)
	inFlight                 bool   // a flush of this partition has not completed
	ready                    bool   // listed in shard.ready
	used                     uint32 // shard.sweeps when frames last arrived (see sweepIdle)
}

// flushed is a completed flush coming back to one of its owner shards: the shard's
// entries (idx) of the bundle and, per bundle entry, the frames that must be flushed
// again (the non-duplicate rest of a segment answered duplicate). Every owner's flushed
// shares the bundle-wide slices, read only.
type flushed struct {
	opened    int // bundles this shard fired itself among its parts (see flushPart.opens)
	idx       []int
	bundle    []flushPart
	remainder [][]ref               // aligned with bundle
	segs      []ports.Segment       // aligned with bundle; nil when the bundle failed
	results   []ports.SegmentResult // aligned with segs
}

// shard owns a disjoint set of partitions. Its state is guarded by mu, which every
// event holds while it runs: a submission (on the request's goroutine), a flush's
// outcome (on the goroutine that routed it), a finished warm-up read, a queue change,
// the Batcher's tick. None of them waits for anything while holding it.
type shard struct {
	b        *Batcher
	mu       sync.Mutex
	parts    map[string]*part
	ready    []*part      // FIFO of partitions with frames and no flush in flight
	bundles  int          // bundles this shard fired that are in flight (the MaxInflight cap)
	inflight int          // partitions taken (fired or offered) whose outcome has not come back
	pending  int          // frames accumulated and not yet dispatched
	backlog  atomic.Int64 // pending, published for tests and diagnostics

	known        map[string]*known    // dedup cache, by partition key (outlives idle parts)
	knownEntries int                  // hashes held in known, bounded by cacheBudget
	warmTried    map[string]time.Time // partition key -> earliest next warm-up
	warming      map[string][]seen    // partition key -> commits learnt while its read is pending
	warmReads    int                  // this shard's reads in flight (at most warmParallel)
	warmQueue    []warmReq            // partitions waiting for a warm-up slot, oldest first
	warmQueued   map[string]struct{}  // keys in warmQueue
	stale        map[string]struct{}  // partition keys whose pending read predates a ForgetQueue

	keyBuf   []byte      // add's partition key, built without allocating
	offerBuf []flushPart // scratch of the parts dispatch offers
	ticks    int         // hold ticks since the last sweep of idle parts
	sweeps   uint32      // sweeps of idle parts so far
}

// sweepTicks is how many hold ticks pass between two sweeps of idle parts (about a
// second at the default 15 ms hold).
const sweepTicks = 64

func newShard(b *Batcher) *shard {
	return &shard{
		b:          b,
		parts:      make(map[string]*part),
		known:      make(map[string]*known),
		warmTried:  make(map[string]time.Time),
		warming:    make(map[string][]seen),
		warmQueued: make(map[string]struct{}),
		stale:      make(map[string]struct{}),
	}
}

// unlock ends an event: whatever became ready has been dispatched, and the backlog
// figure is published before the lock is released.
func (s *shard) unlock() {
	s.dispatch()
	s.backlog.Store(int64(s.pending))
	s.mu.Unlock()
}

// submit is a submission's event: the groups' frames join their partitions, and what
// is ready fires or is offered at once (fire on idle).
func (s *shard) submit(gs []*Group) {
	s.mu.Lock()
	s.add(gs)
	s.unlock()
}

// finished is a flush outcome's event (see complete).
func (s *shard) finished(f *flushed) {
	s.mu.Lock()
	s.complete(f)
	s.unlock()
}

// tick is the Batcher's liveness tick on this shard: queued warm-ups take the slots
// other shards freed, and idle parts are swept now and then.
func (s *shard) tick() {
	s.mu.Lock()
	s.warmNext()
	if s.ticks++; s.ticks >= sweepTicks {
		s.sweepIdle()
	}
	s.unlock()
}

// idle reports whether the shard holds no frame and has no partition in flight: what
// Stop waits for.
func (s *shard) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending == 0 && s.inflight == 0
}

func (s *shard) add(gs []*Group) {
	for _, g := range gs {
		s.keyBuf = appendPartKey(s.keyBuf[:0], g.Tenant, g.Queue, g.Partition)
		p := s.parts[string(s.keyBuf)] // no allocation for the lookup
		if p == nil {
			key := string(s.keyBuf)
			p = &part{key: key, tenant: g.Tenant, queue: g.Queue, partition: g.Partition}
			s.parts[key] = p
		}
		p.used = s.sweeps
		if len(p.refs) == 0 && len(g.Frames) > 0 {
			p.since = time.Now().UnixNano()
		}
		for i := range g.Frames {
			p.refs = append(p.refs, ref{g, i})
		}
		s.pending += len(g.Frames)
		s.markReady(p)
	}
}

func (s *shard) markReady(p *part) {
	if !p.inFlight && !p.ready && len(p.refs) > 0 {
		p.ready = true
		s.ready = append(s.ready, p)
	}
}

// dispatch fires bundles while the shard is under its cap and permits are free.
//
// Fire on idle: a free permit is taken at once, and the bundle leaves with this shard's
// ready partitions topped up with offered ones. With no permit (or at the cap) the lane
// is contended: the ready partitions are offered (offer.go) to whichever bundle leaves
// next, from any shard, so a freed permit carries everything that waits.
func (s *shard) dispatch() {
	for len(s.ready) > 0 {
		if s.bundles < s.b.opts.MaxInflight && s.b.opts.Limiter.TryAcquire() {
			bundle := s.take(min(len(s.ready), s.b.opts.BundleMax))
			bundle[0].opens = true
			s.bundles++
			s.b.goFlush(bundle)
			continue
		}
		// Offered parts are copied onto the offer list: they are built in a scratch
		// slice the shard reuses, instead of a new one per offer.
		s.offerBuf = s.takeInto(s.offerBuf[:0], len(s.ready))
		s.b.offer(s.offerBuf)
		clear(s.offerBuf) // no references kept from here
		return
	}
}

// take moves the first n ready partitions into a new bundle or an offer: their frames
// are detached and they are in flight until their outcome comes back (complete). Their
// segments are built here, under the shard's lock, so that a flush holding a permit
// only sends them: building a bundle's segments (layer-2 dedup, zstd) at flush time
// kept the database idle between commits (docs/benchmarks.md).
func (s *shard) take(n int) []flushPart {
	if n <= 0 {
		return nil
	}
	return s.takeInto(make([]flushPart, 0, n), n)
}

// takeInto is take appending to bundle (n > 0).
func (s *shard) takeInto(bundle []flushPart, n int) []flushPart {
	start := len(bundle)
	bundle = slices.Grow(bundle, n)[:start+n]
	for k, p := range s.ready[:n] {
		fp := &bundle[start+k]
		*fp = flushPart{s: s, p: p, refs: p.refs, since: p.since, verified: s.known[p.key].verifiedFor(p.refs)}
		fp.seg, fp.plan = s.b.build(*fp)
		s.pending -= len(p.refs)
		p.refs, p.ready, p.inFlight = nil, false, true
	}
	// Compact instead of reslicing past the taken ones: the backing array is reused
	// rather than reallocated as the queue walks forward.
	m := copy(s.ready, s.ready[n:])
	clear(s.ready[m:])
	s.ready = s.ready[:m]
	s.inflight += n
	return bundle
}

// complete takes a finished flush back: its partitions may fire again, remainders first.
func (s *shard) complete(f *flushed) {
	s.bundles -= f.opened
	s.inflight -= len(f.idx)
	for _, k := range f.idx {
		p := f.bundle[k].p
		p.inFlight = false
		if f.segs != nil {
			s.learn(p.key, f.segs[k], f.results[k])
		}
		if rem := f.remainder[k]; len(rem) > 0 {
			p.since = f.bundle[k].since // the remainder arrived before anything pending
			p.refs = append(rem, p.refs...)
			s.pending += len(rem)
		}
		s.markReady(p) // idle parts stay until sweepIdle: the next frames of a busy partition find them
	}
}

// sweepIdle forgets the parts that received no frames since the previous sweep and have
// nothing pending or in flight, so memory follows the active set, a second or two late.
// Keeping them that long spares a busy partition a new part (and its key) per flush.
func (s *shard) sweepIdle() {
	for key, p := range s.parts {
		if p.used != s.sweeps && len(p.refs) == 0 && !p.inFlight && !p.ready {
			delete(s.parts, key)
		}
	}
	s.sweeps++
	s.ticks = 0
}

func partKey(tenant, queue, partition string) string {
	return tenant + "\x1f" + queue + "\x1f" + partition
}

// appendPartKey appends partKey(tenant, queue, partition) to dst.
func appendPartKey(dst []byte, tenant, queue, partition string) []byte {
	dst = append(dst, tenant...)
	dst = append(dst, 0x1f)
	dst = append(dst, queue...)
	dst = append(dst, 0x1f)
	return append(dst, partition...)
}

// learn feeds a committed segment to the partition's dedup cache and keeps the shard's
// cache within its budget by forgetting whole partitions (they fall back to full probes).
func (s *shard) learn(key string, seg ports.Segment, res ports.SegmentResult) {
	if res.Status != ports.SegmentQueued || s.cacheBudget() <= 0 {
		return
	}
	k := s.known[key]
	if k == nil {
		switch {
		case res.Window <= 0:
			return // dedup off: the SQL probe is skipped anyway
		case res.BaseOffset != 0:
			// History written before us: read it; commits landing meanwhile are replayed.
			s.warm(key, res.PartitionID)
			if _, pending := s.warming[key]; pending {
				s.remember(key, seen{res.PartitionID, res.BaseOffset, seg.Hashes, res.CreatedAt, res.Window})
			}
			return
		}
		k = newKnown()
		s.known[key] = k
	}
	s.knownEntries += k.committed(res.PartitionID, res.BaseOffset, seg.Hashes, res.CreatedAt, res.Window)
	budget := s.cacheBudget()
	if s.knownEntries > budget { // not even an iterator's start otherwise: this runs per committed segment
		for other, victim := range s.known {
			if s.knownEntries <= budget {
				break
			}
			if other != key {
				s.forget(other, victim)
			}
		}
	}
	if k.verified < 0 || k.size() > budget {
		// Unknown history (a gap, dedup turned off) can only be re-learnt from a new
		// partition, and one partition alone may not exceed the budget: forget it.
		s.forget(key, k)
	}
}

// cacheBudget is how many hashes this shard's dedup cache may hold: its share of
// Options.CacheBytes, or 0 when the cache is off.
func (s *shard) cacheBudget() int {
	if s.b.opts.CacheBytes <= 0 {
		return 0
	}
	return int(s.b.opts.CacheBytes / cacheEntryBytes / int64(len(s.b.shards)))
}

func (s *shard) forget(key string, k *known) {
	s.knownEntries -= k.size()
	delete(s.known, key)
}
