package admin

import (
	"context"
	"sync"
	"time"
)

// listing shares the answers of the tenant-wide listings dashboards poll (queue lists,
// the overview, consumer groups): within window of one computation, every caller with
// the same key gets its answer, and callers arriving while it runs wait for it instead
// of starting their own. A dashboard polling a route every 100 ms then costs the
// database one read per window instead of ten (docs/benchmarks.md, the admin API).
//
// Answers are at most window old: mutations made through this broker (configure,
// queue and group deletion, seeks) call forget, so their effect shows at once; pushes,
// pops and acks, and other brokers' changes, show within window. Errors are not kept.
// window 0 turns sharing off (every call reads).
type listing[T any] struct {
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*listingEntry[T]
	gen     uint64 // forget calls so far: a computation that overlapped one is not kept
}

type listingEntry[T any] struct {
	done chan struct{} // closed when val and err are set
	at   time.Time
	gen  uint64
	val  T
	err  error
}

// maxListingEntries bounds the answers kept (keys carry the query's filters and page).
const maxListingEntries = 1024

func newListing[T any](window time.Duration, now func() time.Time) *listing[T] {
	return &listing[T]{window: window, now: now, entries: make(map[string]*listingEntry[T])}
}

// get returns key's answer: the one computed within window, the one being computed, or
// a new one by compute. compute runs without ctx's cancellation (others may wait for
// it); a caller whose ctx ends stops waiting.
func (l *listing[T]) get(ctx context.Context, key string, compute func(context.Context) (T, error)) (T, error) {
	if l.window <= 0 {
		return compute(ctx)
	}
	l.mu.Lock()
	e, ok := l.entries[key]
	if ok && e.gen == l.gen && (e.at.IsZero() || l.now().Sub(e.at) < l.window) {
		l.mu.Unlock()
		return l.wait(ctx, e)
	}
	if len(l.entries) >= maxListingEntries {
		l.entries = make(map[string]*listingEntry[T])
	}
	e = &listingEntry[T]{done: make(chan struct{}), gen: l.gen}
	l.entries[key] = e
	l.mu.Unlock()

	val, err := compute(context.WithoutCancel(ctx))
	l.mu.Lock()
	e.val, e.err, e.at = val, err, l.now()
	if err != nil && l.entries[key] == e {
		delete(l.entries, key)
	}
	l.mu.Unlock()
	close(e.done)
	return val, err
}

func (l *listing[T]) wait(ctx context.Context, e *listingEntry[T]) (T, error) {
	select {
	case <-e.done:
		return e.val, e.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// forget drops every answer: the next call of each key reads again.
func (l *listing[T]) forget() {
	l.mu.Lock()
	l.gen++
	clear(l.entries)
	l.mu.Unlock()
}
