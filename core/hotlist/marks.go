package hotlist

import (
	"context"
	"time"

	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// Committed takes a commit notification (core/notify). A local push marks its
// partition quietly: the wake tick wakes the queue's parked pops at most once per tick,
// however many pushes landed. A transaction commit or a dead-letter move marks and wakes
// at once. With the hot-list off it only wakes, at once.
func (l *List) Committed(c notify.Commit) {
	key := notify.QueueKey(c.Tenant, c.Queue)
	if !l.opts.Enabled {
		l.opts.Wake(key, c.Partition)
		return
	}
	l.stats.marksLocal.Add(1)
	l.mark(c.Tenant, c.Queue, key, c.Partition, c.PartitionID, c.Messages, c.Source != notify.Pushed)
}

// Hinted takes the hints another broker sent (a peer's pushes): each marks its partition
// and wakes at once. Hints are never sent on: only local commits are.
func (l *List) Hinted(hints []ports.Hint) {
	for _, h := range hints {
		key := notify.QueueKey(h.Tenant, h.Queue)
		if !l.opts.Enabled {
			l.opts.Wake(key, h.Partition)
			continue
		}
		l.stats.marksRemote.Add(1)
		l.mark(h.Tenant, h.Queue, key, h.Partition, h.PartitionID, 1, true)
	}
}

// mark records that partition received count messages, in every ring of its queue, and
// wakes the queue's parked pops (now, or at the next wake tick).
func (l *List) mark(tenant, queueName, key, partition, id string, count int, now bool) {
	q := l.acquire(tenant, queueName, key, true)
	defer q.release()
	i := q.intern(partition, id)
	at := time.Now().UnixNano()
	for _, r := range q.ringList() {
		l.markRing(r, i, uint32(max(count, 0)), at)
	}
	if l.trace.on(q.name) {
		l.trace.log(q.name, "mark", "partition", partition, "messages", count, "wake_now", now)
	}
	// A queue with no ring still wakes: a pop pinned to the partition parks on the
	// queue's gate without a ring, and must not be stranded.
	//
	// A quiet mark wakes at once too when no wake of the queue is outstanding: the pop
	// it wakes checks out every ready candidate, those of the marks that land before it
	// runs included, so one wake per claim suffices and the tick only carries the marks
	// that arrive while a woken pop has not looked yet. Waits for the tick alone cost
	// each message half a tick, on average, on its way to an idle consumer
	// (docs/benchmarks.md, "Latency beside River").
	if now || q.woken.CompareAndSwap(false, true) {
		l.stats.wakesNow.Add(1)
		l.opts.Wake(key, partition)
		return
	}
	q.wakeMu.Lock()
	if !q.wakeAll {
		q.wakes[partition] = struct{}{}
		if len(q.wakes) > maxWakes {
			q.wakeAll = true
			clear(q.wakes)
		}
	}
	q.wakeMu.Unlock()
}

// markRing applies one mark to slot i of ring r (the rules of doc.go) and reports
// whether the slot became ready.
func (l *List) markRing(r *ring, i uint32, count uint32, now int64) bool {
	k, loc := r.slot(i)
	delayed, window := r.q.deferrals()
	r.mu[k].Lock()
	defer r.mu[k].Unlock()
	s := r.subs[k]
	s.grow(loc)
	s.epoch[loc]++
	if s.state[loc] == idle {
		s.first[loc] = now
	}
	s.marks[loc] += count
	switch s.state[loc] {
	case idle:
		switch {
		case delayed > 0:
			s.toWheel(loc, now+int64(delayed)+int64(300*time.Millisecond), whyDelay)
		case window > 0 && s.marks[loc] < uint32(l.opts.WindowBatch):
			s.toWheel(loc, s.first[loc]+int64(window), whyWindow)
		default:
			s.pushReady(loc, now)
			return true
		}
	case wheeled:
		// A fat enough batch ends a windowBuffer hold early; a delayedProcessing
		// deadline is never shortened, and a lease park waits for its own end.
		if s.why[loc] == whyWindow && window > 0 && s.marks[loc] >= uint32(l.opts.WindowBatch) {
			s.revisit[loc] = 0 // the heap entry goes stale
			s.pushReady(loc, now)
			return true
		}
	}
	// ready: nothing to do; inflight: the epoch bump makes the pop's check-in keep it.
	return false
}

// tickWakes wakes, every WakeTick, the pops parked on the queues that local pushes
// marked since the last tick.
func (l *List) tickWakes(ctx context.Context) {
	t := time.NewTicker(l.opts.WakeTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.mu.RLock()
		qs := make([]*queue, 0, len(l.queues))
		for _, q := range l.queues {
			qs = append(qs, q)
		}
		l.mu.RUnlock()
		for _, q := range qs {
			q.wakeMu.Lock()
			all := q.wakeAll
			var parts map[string]struct{}
			if len(q.wakes) > 0 {
				parts, q.wakes = q.wakes, make(map[string]struct{}, len(q.wakes))
			}
			q.wakeAll = false
			q.wakeMu.Unlock()
			if all {
				l.stats.wakesTick.Add(1)
				l.opts.Wake(q.key, "")
			}
			for p := range parts {
				l.stats.wakesTick.Add(1)
				l.opts.Wake(q.key, p)
			}
		}
	}
}
