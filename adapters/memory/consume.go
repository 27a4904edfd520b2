package memory

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

// The consume side of Store mirrors log_pop_v2 and log_extend_lease_v1
// (schema/004_pop.sql) and the adapter's Pop and Release (adapters/postgres/consume.go).
// There are no row locks to skip: one mutex serialises every call, and HoldCursor stands
// in for another transaction holding a cursor.

var (
	_ ports.SegmentStore     = (*Store)(nil)
	_ ports.QueueSettings    = (*Store)(nil)
	_ ports.ConsumeStore     = (*Store)(nil)
	_ ports.TransactionStore = (*Store)(nil)
)

// unconfiguredLease is the lease of a queue that was never configured (docs/api.md §5.6).
const unconfiguredLease = 60 * time.Second

// consumer is a (partition, group) cursor row of queen.log_consumers.
type consumer struct {
	committed int64 // last acked offset; the next wanted is committed + 1
	batchEnd  int64 // last offset of the last delivery; (committed, batchEnd] is unacked
	leaseID   string
	expires   time.Time // zero = no lease
	retry     int       // explicit failures charged to the current batch
	start     int64     // first offset of the last delivery (-1 = none yet)
	attempt   int       // deliveries of a span starting at start
	delivered int64     // highest offset ever delivered (-1: none), for the attempt of a redelivery
	// lastConsumed is the latest pop or ack (zero: none yet), created when the row was
	// made (a first contact or a seek).
	lastConsumed, created time.Time
}

// live reports whether the lease holds at now.
func (c *consumer) live(now time.Time) bool {
	return c.leaseID != "" && c.expires.After(now)
}

// subscription is where a named group's cursors start on a queue (queen.consumer_groups):
// from the oldest message, after the segments created before from (timestamp), or after
// the segments committed up to seq (new). New cuts at the commit order rather than at a
// time, so a test clock that does not move still separates the backlog from what comes
// after the subscription; its from is the instant of the first contact, as SQL records
// it (the admin reads show it).
type subscription struct {
	mode    string // ports.SubscribeAll, SubscribeNew or SubscribeTimestamp
	from    time.Time
	seq     uint64
	created time.Time
}

// seed is the cursor a group with this subscription starts at on partition p: never
// below the retained window (log_start - 1).
func (sub subscription) seed(p *partition) int64 {
	return max(sub.seedOffset(p), p.logStart-1)
}

func (sub subscription) seedOffset(p *partition) int64 {
	if sub.mode == ports.SubscribeAll {
		return -1
	}
	for i := len(p.segs) - 1; i >= 0; i-- {
		sg := p.segs[i]
		if sg.removed {
			continue
		}
		switch {
		case sub.mode == ports.SubscribeNew && sg.seq <= sub.seq,
			sub.mode == ports.SubscribeTimestamp && sg.CreatedAt.Before(sub.from):
			return sg.BaseOffset + int64(sg.Count) - 1
		}
	}
	return -1
}

func consumerKey(partitionID, group string) string { return partitionID + "\x1f" + group }

// subscribe returns the group's subscription to q, recording it at first contact (an
// unknown mode means all, as in log_group_from_v2). Callers hold s.mu.
func (s *Store) subscribe(q *queue, group, mode string, from, now time.Time) subscription {
	if sub, ok := q.groups[group]; ok {
		return sub
	}
	sub := subscription{mode: ports.SubscribeAll, created: now}
	switch mode {
	case ports.SubscribeNew:
		sub = subscription{mode: mode, from: now, seq: s.seq, created: now}
	case ports.SubscribeTimestamp:
		sub = subscription{mode: mode, from: from, created: now}
	}
	q.groups[group] = sub
	return sub
}

// lastSegment is the partition's newest segment still stored, or nil.
func (p *partition) lastSegment() *stored {
	for i := len(p.segs) - 1; i >= 0; i-- {
		if !p.segs[i].removed {
			return &p.segs[i]
		}
	}
	return nil
}

// covering returns copies of the segments covering start..end in offset order: from the
// last one starting at or before start (all from the first when none does) to the last
// one starting at or before end.
func (p *partition) covering(start, end int64) []ports.StoredSegment {
	var from int64
	for _, sg := range p.segs {
		if !sg.removed && sg.BaseOffset <= start {
			from = sg.BaseOffset
		}
	}
	var out []ports.StoredSegment
	for _, sg := range p.segs {
		if !sg.removed && sg.BaseOffset >= from && sg.BaseOffset <= end {
			c := sg.StoredSegment
			c.Blob = bytes.Clone(c.Blob)
			out = append(out, c)
		}
	}
	return out
}

// popQueues are the queues a pop reads: the named one (provisioned), or every queue of
// the tenant matching the namespace and task ("" matches any), in name order.
func (s *Store) popQueues(tenant string, req ports.PopRequest) []*queue {
	if req.Queue != "" {
		return []*queue{s.queueOf(tenant, req.Queue, nil)}
	}
	var out []*queue
	for _, q := range s.queues {
		if q.tenant == tenant && (req.Namespace == "" || q.namespace == req.Namespace) &&
			(req.Task == "" || q.task == req.Task) {
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b *queue) int { return strings.Compare(a.name, b.name) })
	return out
}

// popTarget is a partition a pop tries: p is nil when the candidate names none of the
// pop's partitions (gone); idx is the candidate's position in PopRequest.Candidates, or
// -1 when the pop reports no verdicts (a scan, a pinned pop).
type popTarget struct {
	p   *partition
	idx int
}

// popTargets lists what a pop tries, in order: the pinned partition, the given
// candidates, or every partition of the pop's queues with data, most recently written
// first (the SQL scan's order; it breaks ties at random, this by id). As the adapter
// does, a candidate that is not a UUID is answered gone without being tried, and a
// repeat is tried once, at its first position. verdicts are the candidates' starting
// verdicts: skipped (not evaluated), gone for a malformed id.
func (s *Store) popTargets(req ports.PopRequest, qs []*queue) (out []popTarget, verdicts []ports.Verdict) {
	in := func(p *partition) bool { return slices.Contains(qs, p.q) }
	var seen map[uuid.UUID]bool
	if req.Candidates != nil {
		verdicts = make([]ports.Verdict, len(req.Candidates))
		seen = make(map[uuid.UUID]bool, len(req.Candidates))
	}
	for i, id := range req.Candidates {
		verdicts[i] = ports.Verdict{PartitionID: id, Kind: ports.VerdictSkipped}
		u, err := uuid.Parse(id)
		if err != nil {
			verdicts[i].Kind = ports.VerdictGone
			continue
		}
		if req.Partition != "" || seen[u] {
			continue // a pinned pop ignores candidates; a repeat stays skipped
		}
		seen[u] = true
		t := popTarget{idx: i}
		if p := s.byID[u.String()]; p != nil && in(p) {
			t.p = p
		}
		out = append(out, t)
	}
	switch {
	case req.Partition != "":
		// The partition of the first queue (a discovery pop naming one is not a pop
		// the core makes; the SQL takes the first matching queue too).
		if len(qs) == 0 {
			break
		}
		if p := s.partitions[qs[0].key+"\x1f"+req.Partition]; p != nil {
			out = append(out, popTarget{p: p, idx: -1})
		}
	case req.Candidates == nil:
		for _, p := range s.byID {
			if p.last >= p.logStart && in(p) {
				out = append(out, popTarget{p: p, idx: -1})
			}
		}
		slices.SortFunc(out, func(a, b popTarget) int {
			if c := b.p.lastWrite.Compare(a.p.lastWrite); c != 0 {
				return c
			}
			return strings.Compare(a.p.id, b.p.id)
		})
	}
	return out, verdicts
}

// Pop implements ports.ConsumeStore.
func (s *Store) Pop(_ context.Context, req ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	tenant := req.Tenant
	if tenant == "" {
		tenant = ports.DefaultTenant
	}
	qs := s.popQueues(tenant, req)
	// A named group subscribes to every queue it pops at its first contact with the
	// queue, even when no partition is there yet.
	subs := make(map[*queue]subscription, len(qs))
	if req.Group != ports.QueueModeGroup {
		for _, q := range qs {
			subs[q] = s.subscribe(q, req.Group, req.SubscribeMode, req.SubscribeFrom, now)
		}
	}
	left, maxParts := max(req.Batch, 1), max(req.Partitions, 1)
	targets, verdicts := s.popTargets(req, qs)
	var claims []ports.Claim
	for _, t := range targets {
		if len(claims) >= maxParts || left <= 0 {
			break // the rest stay skipped
		}
		v, cl := s.claim(t.p, req, subs, left, now)
		if t.idx >= 0 {
			v.PartitionID = req.Candidates[t.idx]
			verdicts[t.idx] = v
		}
		if cl != nil {
			claims = append(claims, *cl)
			left -= int(cl.End - cl.Start + 1)
		}
	}
	return claims, verdicts, nil
}

// claim is the claim core of log_pop_v2 for one partition (nil: not one of the pop's):
// its verdict, and the claim when it took. Callers hold s.mu.
func (s *Store) claim(p *partition, req ports.PopRequest, subs map[*queue]subscription, left int,
	now time.Time) (ports.Verdict, *ports.Claim) {
	switch {
	case p == nil:
		return ports.Verdict{Kind: ports.VerdictGone}, nil
	case p.last < p.logStart: // nothing retained
		return ports.Verdict{Kind: ports.VerdictEmpty}, nil
	}
	// The order of log_pop_v2's decisions: what the cursor shows without a lock
	// (leased, nothing after it), the window, and only then the lock (busy) and the
	// cursor's creation.
	key := consumerKey(p.id, req.Group)
	c := s.consumers[key]
	empty := ports.Verdict{Kind: ports.VerdictEmpty}
	if c != nil {
		if c.live(now) {
			return ports.Verdict{Kind: ports.VerdictLeased, LeaseExpires: c.expires}, nil
		}
		if max(c.committed, p.logStart-1) >= p.last {
			return empty, nil
		}
	}
	opts := p.q.opts
	// windowBuffer: a partition written in the last W seconds is quiet, until its last
	// segment is W old.
	if w := time.Duration(opts.WindowBuffer) * time.Second; w > 0 {
		if last := p.lastSegment(); last != nil && last.CreatedAt.After(now.Add(-w)) {
			empty.NotBefore = last.CreatedAt.Add(w)
			return empty, nil
		}
	}
	if s.held[key] > 0 {
		return ports.Verdict{Kind: ports.VerdictBusy}, nil
	}
	if c == nil {
		seed := p.logStart - 1
		if req.Group != ports.QueueModeGroup {
			seed = subs[p.q].seed(p)
		}
		c = &consumer{committed: seed, batchEnd: seed, start: -1, delivered: -1, created: now}
		s.consumers[key] = c
		if c.committed >= p.last {
			return empty, nil
		}
	}
	// Offsets retention removed are past for every cursor.
	committed := max(c.committed, p.logStart-1)
	end := min(committed+int64(left), p.last)
	// delayedProcessing: only segments at least D seconds old are visible.
	if d := time.Duration(opts.DelayedProcessing) * time.Second; d > 0 {
		vis := int64(-1)
		found := false
		var next *stored // the segment holding the next wanted offset
		for i, sg := range p.segs {
			if sg.removed {
				continue
			}
			if sg.BaseOffset <= end && !sg.CreatedAt.After(now.Add(-d)) {
				vis, found = sg.BaseOffset+int64(sg.Count)-1, true
			}
			if sg.BaseOffset <= committed+1 {
				next = &p.segs[i]
			}
		}
		if !found || vis <= committed {
			if next != nil {
				empty.NotBefore = next.CreatedAt.Add(d)
			}
			return empty, nil
		}
		end = min(end, vis)
	}
	start := committed + 1
	// As log_pop_v2: inside the last delivered span the attempt counts up; past it but
	// not past everything delivered so far it is at least the second; beyond, the first.
	attempt := 1
	switch {
	case c.start >= 0 && start >= c.start && start <= c.batchEnd:
		attempt = c.attempt + 1
	case start <= c.delivered:
		attempt = 2
	}
	delivered := max(c.delivered, end)
	cl := ports.Claim{Queue: p.q.name, Partition: p.name, PartitionID: p.id, Start: start, End: end, Attempt: attempt}
	c.lastConsumed = now
	if req.AutoAck {
		*c = consumer{committed: end, batchEnd: end, start: start, attempt: attempt, delivered: delivered, lastConsumed: now, created: c.created}
	} else {
		lease := time.Duration(req.LeaseSeconds) * time.Second
		switch {
		case req.LeaseSeconds > 0:
		case p.q.configured:
			lease = time.Duration(opts.LeaseTime) * time.Second
		default:
			lease = unconfiguredLease
		}
		cl.LeaseExpires = now.Add(lease)
		c.committed, c.batchEnd, c.leaseID, c.expires = committed, end, strings.ToLower(req.LeaseID), cl.LeaseExpires
		c.start, c.attempt, c.delivered = start, attempt, delivered
	}
	cl.Segments = p.covering(start, end)
	return ports.Verdict{Kind: ports.VerdictTook, Drained: end >= p.last, LeaseExpires: cl.LeaseExpires}, &cl
}

// HoldCursor holds the (partition, group) cursor as another transaction would (a pop or
// an ack under way, or the cursor's creation): pops answer busy for it until release is
// called. Only pops look at it (an ack in SQL would wait; here it is not held up).
func (s *Store) HoldCursor(partitionID, group string) (release func()) {
	key := consumerKey(strings.ToLower(partitionID), group)
	s.mu.Lock()
	s.held[key]++
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.held[key]--; s.held[key] <= 0 {
				delete(s.held, key)
			}
		})
	}
}

// Release implements ports.ConsumeStore.
func (s *Store) Release(_ context.Context, group, leaseID string, autoAck bool, claims []ports.Claim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	leaseID = strings.ToLower(leaseID)
	done := make(map[*consumer]bool)
	for _, cl := range claims {
		c := s.consumers[consumerKey(strings.ToLower(cl.PartitionID), group)]
		if c == nil || done[c] {
			continue
		}
		switch {
		case autoAck:
			// Only a cursor still where this delivery left it, with no lease taken since.
			if c.committed != cl.End || c.leaseID != "" {
				continue
			}
			c.committed, c.batchEnd = cl.Start-1, cl.Start-1
		case leaseID != "" && c.leaseID == leaseID:
			c.leaseID, c.expires, c.batchEnd = "", time.Time{}, c.committed
		default:
			continue
		}
		if c.attempt <= 1 {
			c.delivered = c.committed // a released first delivery was never seen
		}
		c.attempt = max(c.attempt-1, 0)
		done[c] = true
	}
	return nil
}

// ExtendLease implements ports.ConsumeStore: live leases only, never shortened, to
// whole seconds as the SQL function takes them.
func (s *Store) ExtendLease(_ context.Context, leaseID string, d time.Duration) (int, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	leaseID = strings.ToLower(leaseID)
	to := now.Add(d / time.Second * time.Second)
	n := 0
	var earliest time.Time
	for _, c := range s.consumers {
		if leaseID == "" || c.leaseID != leaseID || !c.live(now) {
			continue
		}
		if to.After(c.expires) {
			c.expires = to
		}
		if n == 0 || c.expires.Before(earliest) {
			earliest = c.expires
		}
		n++
	}
	return n, earliest, nil
}

// ExpireLease moves the lease of (partition, group) into the past, as if its time had
// run out; ok is false when there was no lease.
func (s *Store) ExpireLease(partitionID, group string) (ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.consumers[consumerKey(strings.ToLower(partitionID), group)]
	if c == nil || c.expires.IsZero() {
		return false
	}
	c.expires = s.Now().Add(-time.Second)
	return true
}

// Cursor returns the committed offset of (partition, group); ok is false when the group
// never popped the partition.
func (s *Store) Cursor(partitionID, group string) (committed int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.consumers[consumerKey(strings.ToLower(partitionID), group)]
	if c == nil {
		return 0, false
	}
	return c.committed, true
}
