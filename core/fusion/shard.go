package fusion

import "time"

// ref addresses frame i of group g.
type ref struct {
	g *Group
	i int
}

// part is a shard's state for one (tenant, queue, partition).
type part struct {
	tenant, queue, partition string
	refs                     []ref // accumulated frames, arrival order
	inFlight                 bool  // a flush of this partition has not completed
	ready                    bool  // listed in shard.ready
}

// flushed is a completed flush coming back to its shard: per bundle entry, the frames
// that must be flushed again (the non-duplicate rest of a segment answered duplicate).
type flushed struct {
	parts     []*part
	remainder [][]ref
}

// shard owns a disjoint set of partitions; only its goroutine touches its state.
type shard struct {
	b       *Batcher
	in      chan []*Group
	done    chan *flushed
	wake    chan struct{}
	parts   map[string]*part
	ready   []*part // FIFO of partitions with frames and no flush in flight
	bundles int     // bundles in flight
	pending int     // frames accumulated and not yet dispatched
}

func newShard(b *Batcher) *shard {
	return &shard{
		b:     b,
		in:    make(chan []*Group, 4096),
		done:  make(chan *flushed, 64),
		wake:  make(chan struct{}, 1),
		parts: make(map[string]*part),
	}
}

// poke wakes the shard without blocking (used when a permit is freed elsewhere).
func (s *shard) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// maxDrain bounds how many queued submissions one wake-up absorbs before dispatching,
// so a burst is bundled without starving completions.
const maxDrain = 1024

func (s *shard) run() {
	tick := time.NewTicker(s.b.opts.Hold)
	defer tick.Stop()
	stop := s.b.stop
	closing := false
	for {
		select {
		case gs := <-s.in:
			s.add(gs)
			s.drain()
		case f := <-s.done:
			s.complete(f)
		case <-s.wake:
		case <-tick.C:
		case <-stop:
			closing, stop = true, nil
			s.drain()
		}
		s.dispatch()
		if closing && s.pending == 0 && s.bundles == 0 && len(s.in) == 0 {
			return
		}
	}
}

func (s *shard) drain() {
	for range maxDrain {
		select {
		case gs := <-s.in:
			s.add(gs)
		default:
			return
		}
	}
}

func (s *shard) add(gs []*Group) {
	for _, g := range gs {
		key := g.Tenant + "\x1f" + g.Queue + "\x1f" + g.Partition
		p := s.parts[key]
		if p == nil {
			p = &part{tenant: g.Tenant, queue: g.Queue, partition: g.Partition}
			s.parts[key] = p
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
func (s *shard) dispatch() {
	for len(s.ready) > 0 && s.bundles < s.b.opts.MaxInflight {
		if !s.b.opts.Limiter.TryAcquire() {
			s.b.wantPermit(s)
			return
		}
		n := min(len(s.ready), s.b.opts.BundleMax)
		bundle := make([]flushPart, n)
		for k, p := range s.ready[:n] {
			bundle[k] = flushPart{p: p, refs: p.refs}
			s.pending -= len(p.refs)
			p.refs, p.ready, p.inFlight = nil, false, true
		}
		clear(s.ready[:n])
		s.ready = s.ready[n:]
		s.bundles++
		go s.b.flush(s, bundle)
	}
}

// complete takes a finished flush back: its partitions may fire again, remainders first.
func (s *shard) complete(f *flushed) {
	s.bundles--
	for k, p := range f.parts {
		p.inFlight = false
		if rem := f.remainder[k]; len(rem) > 0 {
			p.refs = append(rem, p.refs...)
			s.pending += len(rem)
		}
		if len(p.refs) == 0 {
			// Idle partitions are forgotten so memory follows the active set.
			delete(s.parts, p.tenant+"\x1f"+p.queue+"\x1f"+p.partition)
			continue
		}
		s.markReady(p)
	}
}
