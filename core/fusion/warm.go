package fusion

import (
	"context"
	"time"

	"github.com/queen-go/queen/ports"
)

const (
	// warmRetry is the least time between two warm-ups of one partition (after a
	// failure, or after the cache was reset again).
	warmRetry = time.Minute
	// warmRetryLarge is the wait after a history too large for the budget: it will not
	// shrink soon.
	warmRetryLarge = 30 * time.Minute
	// warmParallel bounds concurrent warm-up reads per Batcher, so a restart does not
	// take the pool away from pushes; it also bounds each shard's reads in flight.
	warmParallel = 4
	// warmBacklog bounds the commits remembered per partition while its read is pending.
	warmBacklog = 1024
	// warmQueueMax bounds the partitions per shard waiting for a warm-up slot; beyond it a
	// later commit asks again.
	warmQueueMax = 4096
)

// warmReq is a partition waiting for a warm-up slot.
type warmReq struct{ key, pid string }

// warmed is the outcome of one warm-up read.
type warmed struct {
	key, pid string
	recent   ports.RecentHashes
	err      error
}

// seen is a commit learnt while the partition's warm-up read is pending: it is replayed
// over the snapshot when the read lands (commits after the snapshot extend it).
type seen struct {
	pid    string
	base   int64
	hashes []byte
	at     time.Time
	window time.Duration
}

// warm starts reading a partition's recent dedup history, so that a broker that did
// not write the partition since it started (a restart, another broker's writes) can
// claim a watermark again instead of making every push probe the whole window in SQL.
// At most one read per partition per warmRetry, warmParallel reads at a time. A
// partition that finds no free slot waits in the shard's queue and is read as soon as
// one frees (warmNext): after a restart every active partition is cold at once, and
// reading them back to back ends the window-wide probes of their pushes sooner than
// starting a read only on a commit that finds a free slot (docs/benchmarks.md, "Pushes
// after a broker restart"). The read runs on a goroutine of its own, which installs its
// result under the shard's lock. Called with s.mu held.
func (s *shard) warm(key, pid string) {
	if _, pending := s.warming[key]; pending {
		return
	}
	if _, queued := s.warmQueued[key]; queued {
		return
	}
	if next, ok := s.warmTried[key]; ok && time.Now().Before(next) {
		return
	}
	if !s.startWarm(key, pid) && len(s.warmQueue) < warmQueueMax {
		s.warmQueued[key] = struct{}{}
		s.warmQueue = append(s.warmQueue, warmReq{key, pid})
	}
}

// warmNext starts queued reads while slots are free (skipping partitions whose cache
// exists by now).
func (s *shard) warmNext() {
	for len(s.warmQueue) > 0 {
		r := s.warmQueue[0]
		if s.known[r.key] == nil && !s.startWarm(r.key, r.pid) {
			return
		}
		s.warmQueue[0] = warmReq{}
		s.warmQueue = s.warmQueue[1:]
		delete(s.warmQueued, r.key)
	}
	s.warmQueue = nil // let the drained backing array go
}

// startWarm starts the read if a slot is free, and reports whether it did.
func (s *shard) startWarm(key, pid string) bool {
	if s.b.warmCtx.Err() != nil || s.warmReads >= warmParallel {
		return false
	}
	select {
	case s.b.warmSlots <- struct{}{}:
	default:
		return false
	}
	now := time.Now()
	s.sweepWarmTried(now)
	s.warmTried[key] = now.Add(warmRetry)
	s.warming[key] = nil
	s.warmReads++
	// A window's history is worth reading only if a quarter of the shard's budget
	// holds it (segments hold at least one frame each).
	maxSegments := max(1, s.cacheBudget()/4)
	s.b.wg.Add(1)
	go func() {
		defer s.b.wg.Done()
		ctx, cancel := context.WithTimeout(s.b.warmCtx, 30*time.Second)
		rh, err := s.b.store.RecentHashes(ctx, pid, maxSegments)
		cancel()
		<-s.b.warmSlots // free before installing, so install can start the next read
		s.mu.Lock()
		s.install(&warmed{key: key, pid: pid, recent: rh, err: err})
		s.unlock()
	}()
	return true
}

// remember keeps a commit learnt while the partition's read is pending.
func (s *shard) remember(key string, c seen) {
	if b := s.warming[key]; len(b) < warmBacklog {
		s.warming[key] = append(b, c)
	}
}

// install turns a warm-up read into the partition's cache, then replays the commits
// learnt while it was pending; it gives up when the read failed, the history does not fit
// the budget, or a replayed commit leaves a gap.
func (s *shard) install(w *warmed) {
	s.warmReads--
	defer s.warmNext()
	backlog := s.warming[w.key]
	delete(s.warming, w.key)
	if _, stale := s.stale[w.key]; stale {
		// The queue was reconfigured or deleted while the read was pending: its snapshot
		// may hold the old window or the old partition. Drop it; the next commit asks again.
		delete(s.stale, w.key)
		delete(s.warmTried, w.key)
		return
	}
	switch {
	case w.err != nil:
		s.b.opts.Logger.Debug("fusion: dedup cache warm-up failed", "partition_id", w.pid, "err", w.err)
		return
	case w.recent.TooLarge:
		s.warmTried[w.key] = time.Now().Add(warmRetryLarge)
		return
	case s.known[w.key] != nil || w.recent.LastOffset < 0 || w.recent.Window <= 0:
		return
	}
	frames := 0
	for _, sg := range w.recent.Segments {
		frames += len(sg.Hashes) / 16
	}
	if s.knownEntries+frames > s.cacheBudget() {
		s.warmTried[w.key] = time.Now().Add(warmRetryLarge)
		return // too much history for the budget: this partition keeps probing in SQL
	}
	k := newKnown()
	// The window is the queue's, read in the same snapshot as the hashes it selected.
	k.pid, k.window, k.verified = w.pid, w.recent.Window, w.recent.LastOffset
	for _, sg := range w.recent.Segments {
		for i := 0; i+16 <= len(sg.Hashes); i += 16 {
			k.add(hashKey(sg.Hashes[i:]), sg.CreatedAt.UnixNano())
		}
	}
	for _, c := range backlog {
		k.committed(c.pid, c.base, c.hashes, c.at, c.window)
	}
	if k.verified < 0 {
		return // a replayed commit left a gap: the next attempt waits warmRetry
	}
	s.known[w.key] = k
	s.knownEntries += k.size()
}

// sweepWarmTried drops expired back-off entries once the map has grown, so it follows
// the set of recently failing partitions rather than every partition ever seen.
func (s *shard) sweepWarmTried(now time.Time) {
	if len(s.warmTried) < 4096 {
		return
	}
	for key, next := range s.warmTried {
		if now.After(next) {
			delete(s.warmTried, key)
		}
	}
}
