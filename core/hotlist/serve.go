package hotlist

import (
	"time"

	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/ports"
)

// Ticket is one pop's check-out: the candidates it will ask SQL about, with the epoch
// each had when it was taken. CheckIn must follow, whatever happened to the pop; until
// then the candidates are in flight.
type Ticket struct {
	l       *List
	q       *queue
	r       *ring
	idx     []uint32
	epochs  []uint32
	ids     []string
	autoAck bool
	done    bool
}

// Candidates are the partition ids to try, in order (ports.PopRequest.Candidates);
// empty when the ring has nothing: then the pop claims nothing without asking SQL.
func (t *Ticket) Candidates() []string { return t.ids }

// CheckOut serves a wildcard pop from the ring of its (queue, group). It returns nil
// when the hot-list does not serve this pop: it is off (or nil), the pop is pinned to a partition
// or is a discovery pop, or the group has no ring yet (its first pop scans in SQL, which
// provisions the queue and records the group's subscription; Scanned then registers the
// ring), or the ring's first reseed has not completed (pops scan until it knows the
// partitions that had work before it existed). Otherwise the ticket holds up to clamp(partitions x 8, 16, 256) candidates:
// due wheel entries first, then ready ones round robin over the sub-rings.
func (l *List) CheckOut(req ports.PopRequest) *Ticket {
	if l == nil || !l.opts.Enabled || req.Queue == "" {
		return nil
	}
	key := notify.QueueKey(req.Tenant, req.Queue)
	q := l.acquire(req.Tenant, req.Queue, key, false)
	if q == nil {
		return nil
	}
	// Every pop of the queue that gets this far claims after every mark so far (pinned
	// and scanning pops included): the next quiet mark may wake at once again (mark).
	q.woken.Store(false)
	if req.Partition != "" {
		q.release()
		return nil
	}
	r, _ := l.ringOf(q, req.Group, false)
	if r == nil || !r.seeded.Load() {
		q.release()
		return nil
	}
	k := min(max(req.Partitions*8, 16), 256)
	t := &Ticket{l: l, q: q, r: r, autoAck: req.AutoAck}
	now := time.Now().UnixNano()
	n := len(r.subs)
	start := int(r.rr.Add(1)) % n
	for pass := 0; pass < n && len(t.idx) < k; pass++ {
		sk := (start + pass) % n
		r.mu[sk].Lock()
		s := r.subs[sk]
		s.due(now)
		// Round robin: an equal share of k from each sub-ring on the first pass, the
		// rest from whoever has more.
		share := max((k-len(t.idx))/(n-pass), 1)
		for taken := 0; taken < share && len(t.idx) < k; taken++ {
			loc := s.popReady()
			if loc == none {
				break
			}
			l.ready.Observe(time.Duration(now - s.revisit[loc]))
			s.state[loc], s.revisit[loc] = inflight, now
			t.idx = append(t.idx, r.index(sk, loc))
			t.epochs = append(t.epochs, s.epoch[loc])
		}
		r.mu[sk].Unlock()
	}
	t.ids = make([]string, 0, len(t.idx))
	keep := t.idx[:0]
	epochs := t.epochs[:0]
	for j, i := range t.idx {
		id, _ := q.idOf(i)
		if id == "" {
			// Marked by name only, never seen with its id: put it back; a reseed or a
			// commit with the id will make it a candidate.
			l.putBack(r, i)
			continue
		}
		keep, epochs = append(keep, i), append(epochs, t.epochs[j])
		t.ids = append(t.ids, id)
	}
	t.idx, t.epochs = keep, epochs
	l.stats.checkouts.Add(1)
	l.stats.candidates.Add(uint64(len(t.ids)))
	if len(t.ids) == 0 {
		l.requestReseed(r, true) // cold: the floor may know better
	}
	if l.trace.on(q.name) {
		l.trace.log(q.name, "serve", "group", req.Group, "candidates", len(t.ids))
	}
	return t
}

// putBack returns an in-flight slot to the ready list.
func (l *List) putBack(r *ring, i uint32) {
	k, loc := r.slot(i)
	r.mu[k].Lock()
	defer r.mu[k].Unlock()
	if s := r.subs[k]; s.state[loc] == inflight {
		s.pushReady(loc, time.Now().UnixNano())
	}
}

// CheckIn applies the verdicts of the claim (one per candidate, in order). With err, or
// verdicts missing (the pop failed or its client left before SQL answered), every
// candidate goes back to the ready list: a dropped pop loses nothing. It is safe to call
// more than once; only the first call counts.
func (t *Ticket) CheckIn(verdicts []ports.Verdict, err error) {
	if t == nil || t.done {
		return
	}
	t.done = true
	defer t.q.release()
	l := t.l
	now := time.Now()
	delayed, window := t.q.deferrals()
	woke := false
	for j, i := range t.idx {
		if err != nil || j >= len(verdicts) || verdicts[j].PartitionID != t.ids[j] {
			l.putBack(t.r, i)
			continue
		}
		v := verdicts[j]
		l.stats.verdicts[v.Kind].Add(1)
		if l.checkIn(t.r, i, t.epochs[j], v, t.autoAck, now, delayed, window) {
			woke = true
		}
	}
	if woke {
		l.opts.Wake(t.q.key, "")
	}
}

// checkIn applies one verdict to slot i and reports whether the slot is ready for
// another pop at once.
func (l *List) checkIn(r *ring, i, epoch uint32, v ports.Verdict, autoAck bool, now time.Time,
	delayed, window time.Duration) bool {
	k, loc := r.slot(i)
	r.mu[k].Lock()
	defer r.mu[k].Unlock()
	s := r.subs[k]
	if s.state[loc] != inflight {
		return false // a reseed reclaimed it meanwhile: it is tracked again already
	}
	ns := now.UnixNano()
	park := func(until time.Time, cap time.Duration, why uint8) {
		at := now.Add(cap)
		if !until.IsZero() && until.Before(at) {
			at = until
		}
		s.toWheel(loc, max(at.UnixNano(), ns), why)
	}
	switch v.Kind {
	case ports.VerdictTook:
		// Drained speaks of what the claim's snapshot saw, so base is the check-out's
		// epoch: a push marked while the claim ran may be past that snapshot, and the
		// taker's ack must then make the partition ready, not clear it (a lost push
		// would wait for the partition's next push or the reseed floor).
		s.drained[loc], s.base[loc] = v.Drained, epoch
		switch {
		case !autoAck:
			// The taker holds a lease: re-offering the partition would only make the
			// next pop find it leased. It waits in the wheel; the taker's ack brings it
			// back early (Acked), the cap bounds a lost promote.
			park(v.LeaseExpires, l.opts.LeasePark, whyLease)
		case window > 0:
			// It just fired: hold it for another window, as the SQL quiet period does.
			s.marks[loc], s.first[loc] = 0, ns
			s.toWheel(loc, ns+int64(window), whyWindow)
		case v.Drained && s.epoch[loc] == epoch:
			s.setIdle(loc)
		default:
			s.pushReady(loc, ns)
			return true
		}
	case ports.VerdictEmpty:
		switch {
		case delayed > 0 || window > 0 || !v.NotBefore.IsZero():
			// A deferral queue's empty claim never clears: a bounded revisit instead.
			d := min(max(v.NotBefore.Sub(now), l.opts.RevisitMin), l.opts.RevisitMax)
			s.toWheel(loc, ns+int64(d), whyRetry)
		case s.epoch[loc] == epoch:
			s.setIdle(loc) // nothing marked since the check-out: really empty
		default:
			s.pushReady(loc, ns) // a push landed meanwhile: its data is real
			return true
		}
	case ports.VerdictLeased:
		park(v.LeaseExpires, l.opts.LeasePark, whyLease)
	case ports.VerdictBusy:
		s.toWheel(loc, ns+int64(l.opts.RevisitMin), whyRetry)
	case ports.VerdictGone:
		s.setIdle(loc)
	default: // skipped: not evaluated, still pending
		s.pushReady(loc, ns)
		return true
	}
	return false
}

// Scanned follows a wildcard pop that the hot-list did not serve (CheckOut returned nil)
// and that SQL answered: the queue and the group's subscription exist now, so the group
// gets its ring, filled by a reseed at once.
func (l *List) Scanned(req ports.PopRequest) {
	if l == nil || !l.opts.Enabled || req.Partition != "" || req.Queue == "" {
		return
	}
	q := l.acquire(req.Tenant, req.Queue, notify.QueueKey(req.Tenant, req.Queue), true)
	defer q.release()
	if r, created := l.ringOf(q, req.Group, true); created {
		l.requestReseed(r, false)
	}
}

// Acked takes an ack that released group's lease on a partition. Pushes that arrived
// during the lease, or a span not consumed to the end (a failure, a retry, a dead
// letter, a claim that did not drain the partition), make it ready again and wake the
// queue; a drained partition with no mark since its claim is cleared. completed says
// every acked message of the partition was completed.
func (l *List) Acked(tenant, queueName, group, partitionID string, completed bool) {
	if l == nil || !l.opts.Enabled || queueName == "" {
		return
	}
	key := notify.QueueKey(tenant, queueName)
	q := l.acquire(tenant, queueName, key, false)
	if q == nil {
		return
	}
	defer q.release()
	r, _ := l.ringOf(q, group, false)
	i, ok := q.byPartitionID(partitionID)
	if r == nil || !ok {
		return
	}
	k, loc := r.slot(i)
	r.mu[k].Lock()
	s := r.subs[k]
	promoted := false
	if int(loc) < len(s.state) {
		switch st := s.state[loc]; {
		case st == inflight:
			// A pop holds it: its check-in decides, and must not clear it on a claim that
			// ran before this release (the epoch bump makes it keep the slot).
			s.epoch[loc]++
		case completed && s.drained[loc] && s.epoch[loc] == s.base[loc]:
			if st == ready {
				s.unlink(loc)
			}
			s.setIdle(loc)
		case st != ready:
			s.pushReady(loc, time.Now().UnixNano())
			promoted = true
		}
	}
	r.mu[k].Unlock()
	if promoted {
		l.stats.promotes.Add(1)
		l.opts.Wake(key, "")
	}
}

// DropGroup forgets group's ring on one queue (the group was deleted there): a ring
// that survived would hide the re-consume until the next floor. Dropping too much only
// costs a cold start.
func (l *List) DropGroup(tenant, queueName, group string) {
	q := l.acquire(tenant, queueName, notify.QueueKey(tenant, queueName), false)
	if q == nil {
		return
	}
	defer q.release()
	q.mu.Lock()
	delete(q.rings, group)
	q.mu.Unlock()
}

// DropGroupEverywhere forgets group's rings on every queue of tenant, and only of that
// tenant: a group name common to several tenants is theirs each.
func (l *List) DropGroupEverywhere(tenant, group string) {
	l.mu.RLock()
	var qs []*queue
	for _, q := range l.queues {
		if q.tenant == tenant {
			qs = append(qs, q)
		}
	}
	l.mu.RUnlock()
	for _, q := range qs {
		q.mu.Lock()
		delete(q.rings, group)
		q.mu.Unlock()
	}
}

// GroupChanged takes a consumer-group change (a deletion, a seek): the group's rings on
// the queue it names, or on every queue of its tenant, are dropped, whatever the kind of
// change (a seek of one partition too: the next pop rebuilds the ring with a reseed, which
// is only a cold start).
func (l *List) GroupChanged(c notify.GroupChange) {
	if c.Queue == "" {
		l.DropGroupEverywhere(c.Tenant, c.Group)
		return
	}
	l.DropGroup(c.Tenant, c.Queue, c.Group)
}

// QueueChanged takes a queue-change notification: a deleted queue's state is dropped; a
// reconfigured queue's rings are reseeded, which reads its deferral options again.
func (l *List) QueueChanged(c notify.QueueChange) {
	if !l.opts.Enabled {
		return
	}
	key := notify.QueueKey(c.Tenant, c.Queue)
	if c.Deleted {
		l.mu.Lock()
		delete(l.queues, key)
		l.mu.Unlock()
		return
	}
	q := l.acquire(c.Tenant, c.Queue, key, false)
	if q == nil {
		return
	}
	defer q.release()
	for _, r := range q.ringList() {
		l.requestReseed(r, false)
	}
}
