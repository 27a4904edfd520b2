package hotlist

import (
	"context"
	"time"
)

// requestReseed queues ring r for a reseed: at once after its registration or a
// configure, and when a pop finds it cold (gap: at most one such reseed per ReseedGap).
func (l *List) requestReseed(r *ring, gap bool) {
	r.reseedMu.Lock()
	if r.requested || (gap && time.Since(r.lastReseed) < max(r.coldGap, l.opts.ReseedGap)) {
		r.reseedMu.Unlock()
		return
	}
	r.requested = true
	r.reseedMu.Unlock()
	select {
	case l.reseedq <- r:
	default:
		// The queue is full: the floor reaches the ring anyway.
		r.reseedMu.Lock()
		r.requested = false
		r.reseedMu.Unlock()
	}
}

// reseedLoop runs the reseeds pops asked for, and the periodic floor: every ring is
// reseeded every Reseed, at its own phase, whether it is busy or not. That is what
// recovers a partition wrongly dropped from a busy ring (a missed mark, a lost peer hint,
// a false clear) within one period. Reseeds run one at a time.
func (l *List) reseedLoop(ctx context.Context) {
	floor := time.NewTicker(min(l.opts.Reseed/10, time.Second))
	defer floor.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-l.reseedq:
			l.reseed(ctx, r)
		case <-floor.C:
			for _, r := range l.dueRings(time.Now()) {
				if ctx.Err() != nil {
					return
				}
				l.reseed(ctx, r)
			}
		}
	}
}

// dueRings returns the rings whose floor is due at now, and schedules their next one.
func (l *List) dueRings(now time.Time) []*ring {
	l.mu.RLock()
	qs := make([]*queue, 0, len(l.queues))
	for _, q := range l.queues {
		qs = append(qs, q)
	}
	l.mu.RUnlock()
	var due []*ring
	for _, q := range qs {
		for _, r := range q.ringList() {
			r.reseedMu.Lock()
			if !now.Before(r.nextFloor) {
				r.nextFloor = now.Add(max(l.opts.Reseed, floorCostFactor*r.lastCost))
				due = append(due, r)
			}
			r.reseedMu.Unlock()
		}
	}
	return due
}

// floorCostFactor bounds the floor's cost: a ring is reseeded at most every
// floorCostFactor times its last reseed's duration (a reseed of a queue of 100,000
// partitions takes about a second: the floor then spends at most 5% of a database core
// on it instead of 20% at a 5 s period).
const floorCostFactor = 20

// reseed walks the ring's probably-pending partitions in keyset pages and marks each
// (a local discovery: nothing is broadcast), learning names, ids and the queue's
// deferral options; it takes back slots left in flight longer than Stranded.
func (l *List) reseed(ctx context.Context, r *ring) {
	q := r.q
	q.refs.Add(1)
	defer q.release()
	started := time.Now()
	r.reseedMu.Lock()
	r.requested, r.lastReseed = false, started
	r.reseedMu.Unlock()
	l.reclaim(r, started)
	after, rows := "", 0
	for page := 0; page < l.opts.ReseedPages; page++ {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		p, err := l.store.Pending(pctx, q.tenant, q.name, r.group, after, l.opts.ReseedPage)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				l.opts.Logger.Warn("hotlist: reseed failed; the next floor retries", "target", "hotlist",
					"queue", q.name, "group", r.group, "err", err)
				l.stats.reseedErrors.Add(1)
			}
			return
		}
		q.delayed.Store(int64(p.DelayedProcessing))
		q.window.Store(int64(p.WindowBuffer))
		now := time.Now().UnixNano()
		woke := false
		for _, pp := range p.Partitions {
			if l.markRing(r, q.intern(pp.Name, pp.ID), 0, now) {
				woke = true
			}
		}
		rows += len(p.Partitions)
		if woke {
			l.opts.Wake(q.key, "")
		}
		if len(p.Partitions) < l.opts.ReseedPage {
			break
		}
		after = p.Partitions[len(p.Partitions)-1].ID
	}
	r.seeded.Store(true)
	r.reseedMu.Lock()
	r.lastCost = time.Since(started)
	if rows == 0 {
		r.coldGap = min(2*max(r.coldGap, l.opts.ReseedGap), max(l.opts.Reseed, l.opts.ReseedGap))
	} else {
		r.coldGap = l.opts.ReseedGap
	}
	r.reseedMu.Unlock()
	l.stats.reseeds.Add(1)
	l.stats.reseedRows.Add(uint64(rows))
	l.trace.log(q.name, "reseed", "group", r.group, "rows", rows, "took", time.Since(started))
}

// reclaim takes back the slots checked out before now - Stranded: their pop was dropped
// between check-out and check-in (the ticket's own drop guard is the first line of
// defence; this is the last).
func (l *List) reclaim(r *ring, now time.Time) {
	limit := now.Add(-l.opts.Stranded).UnixNano()
	for k := range r.subs {
		r.mu[k].Lock()
		s := r.subs[k]
		for loc, st := range s.state {
			if st == inflight && s.revisit[loc] < limit {
				s.pushReady(int32(loc), now.UnixNano())
				l.stats.reclaimed.Add(1)
			}
		}
		r.mu[k].Unlock()
	}
}
