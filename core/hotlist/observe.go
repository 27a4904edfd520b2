package hotlist

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// counters are the hot-list's cumulative counts.
type counters struct {
	marksLocal, marksRemote           atomic.Uint64
	checkouts, candidates             atomic.Uint64
	verdicts                          [ports.VerdictGone + 1]atomic.Uint64
	promotes, reclaimed               atomic.Uint64
	reseeds, reseedRows, reseedErrors atomic.Uint64
	swept                             atomic.Uint64
	wakesNow, wakesTick               atomic.Uint64
}

// Stats is a snapshot of the hot-list for the metrics.
type Stats struct {
	Queues, Rings, Ready, Wheel int
	MarksLocal, MarksRemote     uint64 // marks from this broker's commits, from peers' hints
	Checkouts, Candidates       uint64
	Verdicts                    map[ports.VerdictKind]uint64
	Promotes, Reclaimed         uint64
	Reseeds, ReseedRows         uint64
	ReseedErrors, Swept         uint64
	WakesNow, WakesTick         uint64 // wake calls made at once by marks, and by the wake tick
}

// ringLoad is one ring's size, for the busiest-rings log lines.
type ringLoad struct {
	queue, group string
	ready, wheel int
}

// loads walks every ring (under each sub-ring's lock, briefly).
func (l *List) loads() (queues int, out []ringLoad) {
	l.mu.RLock()
	qs := make([]*queue, 0, len(l.queues))
	for _, q := range l.queues {
		qs = append(qs, q)
	}
	l.mu.RUnlock()
	for _, q := range qs {
		for _, r := range q.ringList() {
			ld := ringLoad{queue: q.name, group: r.group}
			for k := range r.subs {
				r.mu[k].Lock()
				ld.ready += r.subs[k].nready
				ld.wheel += r.subs[k].liveWheel()
				r.mu[k].Unlock()
			}
			out = append(out, ld)
		}
	}
	return len(qs), out
}

// Stats returns the current sizes and the counters.
func (l *List) Stats() Stats {
	nq, loads := l.loads()
	st := Stats{Queues: nq, Rings: len(loads), Verdicts: map[ports.VerdictKind]uint64{},
		MarksLocal: l.stats.marksLocal.Load(), MarksRemote: l.stats.marksRemote.Load(),
		Checkouts: l.stats.checkouts.Load(), Candidates: l.stats.candidates.Load(),
		Promotes: l.stats.promotes.Load(), Reclaimed: l.stats.reclaimed.Load(),
		Reseeds: l.stats.reseeds.Load(), ReseedRows: l.stats.reseedRows.Load(),
		ReseedErrors: l.stats.reseedErrors.Load(), Swept: l.stats.swept.Load(),
		WakesNow: l.stats.wakesNow.Load(), WakesTick: l.stats.wakesTick.Load()}
	for _, ld := range loads {
		st.Ready += ld.ready
		st.Wheel += ld.wheel
	}
	for k := range l.stats.verdicts {
		st.Verdicts[ports.VerdictKind(k)] = l.stats.verdicts[k].Load()
	}
	return st
}

// housekeep runs the idle sweep and the periodic log line.
func (l *List) housekeep(ctx context.Context) {
	logt := time.NewTicker(l.opts.LogEvery)
	defer logt.Stop()
	var sweep <-chan time.Time
	if l.opts.IdleSweep > 0 {
		t := time.NewTicker(l.opts.IdleSweep)
		defer t.Stop()
		sweep = t.C
	}
	last, lastAt := l.Stats(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sweep:
			l.sweep()
		case now := <-logt.C:
			last, lastAt = l.logFloor(last, lastAt, now), now
		}
	}
}

// staleSweeps is how many sweep periods a queue nobody touches keeps its state when some
// of its entries are not idle.
const staleSweeps = 3

// sweep drops the state of every queue that nothing touched for a whole sweep period,
// that no operation holds, and whose rings are all idle (or that nothing touched for
// staleSweeps periods, whatever its entries). Evicting is never a correctness
// event: the ring is a cache, and the next pop rebuilds it.
func (l *List) sweep() {
	l.mu.RLock()
	qs := make([]*queue, 0, len(l.queues))
	for _, q := range l.queues {
		qs = append(qs, q)
	}
	l.mu.RUnlock()
	for _, q := range qs {
		if q.touched.Swap(false) {
			q.untouched = 0
			continue
		}
		q.untouched++
		// Entries stay ready when their consumers went away (or a reseed listed
		// partitions a drain emptied meanwhile): nothing would ever clear them. A queue
		// nobody touched for staleSweeps periods goes anyway: it is a cache, and the next
		// pop rebuilds it through SQL.
		if !q.idle() && q.untouched < staleSweeps {
			continue
		}
		l.mu.Lock()
		// Under the write lock nobody can acquire the queue: no holder now is no holder.
		if l.queues[q.key] == q && q.refs.Load() == 0 && !q.touched.Load() {
			delete(l.queues, q.key)
			l.stats.swept.Add(1)
		}
		l.mu.Unlock()
	}
}

// idle reports whether every slot of every ring is idle (nothing ready, wheeled or in
// flight) and no wake is pending.
func (q *queue) idle() bool {
	q.wakeMu.Lock()
	pending := len(q.wakes) > 0 || q.wakeAll
	q.wakeMu.Unlock()
	if pending {
		return false
	}
	for _, r := range q.ringList() {
		for k := range r.subs {
			r.mu[k].Lock()
			all := r.subs[k].allIdle()
			r.mu[k].Unlock()
			if !all {
				return false
			}
		}
	}
	return true
}

// logFloor writes the reseed-floor line (reseeds and their rate since the last line,
// live rings, ready and wheel entries, mark counters) and one line per busiest
// non-empty ring, ranked by ready + wheel, at most TopN.
func (l *List) logFloor(last Stats, lastAt, now time.Time) Stats {
	st := l.Stats()
	secs := max(now.Sub(lastAt).Seconds(), 1e-9)
	l.opts.Logger.Info("hotlist reseed floor", "target", "hotlist",
		"reseeds", st.Reseeds-last.Reseeds, "reseed_rows", st.ReseedRows-last.ReseedRows,
		"reseeds_per_s", float64(st.Reseeds-last.Reseeds)/secs,
		"queues", st.Queues, "rings", st.Rings, "ready", st.Ready, "wheel", st.Wheel,
		"marks_local", st.MarksLocal, "marks_remote", st.MarksRemote)
	_, loads := l.loads()
	loads = slices.DeleteFunc(loads, func(ld ringLoad) bool { return ld.ready+ld.wheel == 0 })
	slices.SortFunc(loads, func(a, b ringLoad) int { return (b.ready + b.wheel) - (a.ready + a.wheel) })
	for _, ld := range loads[:min(len(loads), l.opts.TopN)] {
		l.opts.Logger.Info("hotlist ring", "target", "hotlist", "queue", ld.queue, "group", ld.group,
			"ready", ld.ready, "wheel", ld.wheel)
	}
	return st
}

// tracer writes QUEEN_HOTLIST_TRACE breadcrumbs: for queues whose name starts with the
// prefix, at most rate lines a second. It costs one string check when the prefix is
// empty.
type tracer struct {
	prefix string
	rate   int
	logger *slog.Logger

	mu     sync.Mutex
	second int64
	lines  int
}

func newTracer(o Options) *tracer {
	return &tracer{prefix: o.Trace, rate: o.TraceRate, logger: o.Logger}
}

// on reports whether queue is traced. Hot callers check it first: the variadic
// arguments of log escape, so building them costs allocations even when nothing is
// traced (three per mark, on every committed segment).
func (t *tracer) on(queue string) bool { return t.prefix != "" && strings.HasPrefix(queue, t.prefix) }

func (t *tracer) log(queue, what string, args ...any) {
	if !t.on(queue) {
		return
	}
	t.mu.Lock()
	now := time.Now().Unix()
	if now != t.second {
		t.second, t.lines = now, 0
	}
	t.lines++
	over := t.lines > t.rate
	t.mu.Unlock()
	if over {
		return
	}
	t.logger.Info("hotlist trace "+what, append([]any{"target", "hotlist", "queue", queue}, args...)...)
}
