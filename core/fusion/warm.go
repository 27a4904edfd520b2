package fusion

import (
	"context"
	"time"

	"github.com/queen-go/queen/ports"
)

// warmRetry is how long a partition whose warm-up failed waits before the next attempt;
// one whose history did not fit waits warmRetryLarge (its history will not shrink soon).
const (
	warmRetry      = time.Minute
	warmRetryLarge = 30 * time.Minute
)

// warmed is the outcome of one warm-up read.
type warmed struct {
	key, pid string
	window   time.Duration
	recent   ports.RecentHashes
	err      error
}

// warm starts reading a partition's recent dedup history, so that a broker that did
// not write the partition since it started (a restart, another broker's writes) can
// claim a watermark again instead of making every push probe the whole window in SQL.
// At most one read per partition per warmRetry; the read runs off the shard goroutine
// and its result comes back through s.warmed.
func (s *shard) warm(key, pid string, window time.Duration) {
	if next, ok := s.warmTried[key]; ok && time.Now().Before(next) {
		return
	}
	s.warmTried[key] = time.Now().Add(warmRetry)
	// A window's history is worth reading only if a quarter of the shard's budget
	// holds it (segments hold at least one frame each).
	maxSegments := max(1, s.b.opts.CacheEntries/len(s.b.shards)/4)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rh, err := s.b.store.RecentHashes(ctx, pid, window, maxSegments)
		select {
		case s.warmed <- &warmed{key: key, pid: pid, window: window, recent: rh, err: err}:
		default: // the shard is saturated with results or gone: this warm-up is dropped
		}
	}()
}

// install turns a warm-up read into the partition's cache, unless the cache came back
// meanwhile, the read failed, or the history does not fit the shard's budget.
func (s *shard) install(w *warmed) {
	if w.err != nil {
		s.b.opts.Logger.Debug("fusion: dedup cache warm-up failed", "partition_id", w.pid, "err", w.err)
		return
	}
	if w.recent.TooLarge {
		s.warmTried[w.key] = time.Now().Add(warmRetryLarge)
		return
	}
	if s.known[w.key] != nil || w.recent.LastOffset < 0 {
		return
	}
	frames := 0
	for _, sg := range w.recent.Segments {
		frames += len(sg.Hashes) / 16
	}
	if s.knownEntries+frames > s.b.opts.CacheEntries/len(s.b.shards) {
		s.warmTried[w.key] = time.Now().Add(warmRetryLarge)
		return // too much history for the budget: this partition keeps probing in SQL
	}
	k := newKnown()
	k.pid, k.window, k.verified = w.pid, w.window, w.recent.LastOffset
	for _, sg := range w.recent.Segments {
		for i := 0; i+16 <= len(sg.Hashes); i += 16 {
			h := [16]byte(sg.Hashes[i : i+16])
			k.hashes[h] = sg.CreatedAt
			k.fifo = append(k.fifo, stamped{h, sg.CreatedAt})
		}
	}
	s.known[w.key] = k
	s.knownEntries += len(k.fifo)
	delete(s.warmTried, w.key)
}
