package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

// RetentionStore is the Store's ports.RetentionStore, over the same state. It is a view
// of its own because ports.RetentionStore's Trim is not the test hook Store.Trim (which
// only moves watermarks). It follows the SQL functions of schema/012_retention.sql, whose
// comments state the rules (ports/porttest.RetentionStore checks both):
//
//   - Trim walks partitions in id order (the string order of the ids, which is the uuid
//     order PostgreSQL walks) and, on each due one, removes the expired prefix of the log
//     (the segment is gone, log_start moves to the first kept one) and the expired hash
//     sidecar rows (txns_start moves past the last removed), at most rows in all;
//   - PurgeDeadLetters, PurgeTraces and DropEmptyPartitions remove expired rows;
//   - Lead is one flag of the store: the advisory lock of the SQL store.
//
// There are no row locks to skip: one mutex serialises every call, and a cursor held by
// HoldCursor stands in for a pop or an ack holding it, so the partition is left for the
// next walk as SKIP LOCKED leaves it. A context already done fails every call, and
// AdminFault sees each one as "Retention." and the method's name.
type RetentionStore struct{ s *Store }

var _ ports.RetentionStore = (*RetentionStore)(nil)

// Retention returns the store's ports.RetentionStore.
func (s *Store) Retention() *RetentionStore { return &RetentionStore{s: s} }

// Lead implements ports.RetentionStore: one lead of the store at a time; a Lead while
// another runs (a nested one too) does not run fn.
func (r *RetentionStore) Lead(ctx context.Context, fn func(context.Context) error) (bool, error) {
	s := r.s
	if err := s.begin(ctx, "Retention.Lead"); err != nil {
		return false, err
	}
	s.mu.Lock()
	if s.leading {
		s.mu.Unlock()
		return false, nil
	}
	s.leading = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.leading = false
		s.mu.Unlock()
	}()
	return true, fn(ctx)
}

// cutoffs are a queue's retention cutoffs at an instant (log_retention_cutoffs_v1); a
// zero time is SQL's NULL: no such rule.
type cutoffs struct {
	age  time.Time // segments created before it go, consumed or not
	done time.Time // consumed segments created before it go
	seg  time.Time // the later of age and done: no segment older, nothing to trim
	hash time.Time // hash sidecar rows created before it go
	// ageJob is the age rule's job: ports.JobEviction when maxWaitTimeSeconds is the
	// shorter rule or the only one, else ports.JobRetention.
	ageJob string
}

// cutoffsOf computes q's cutoffs at now. The age rule is the shorter of retentionSeconds
// (when retentionEnabled) and maxWaitTimeSeconds (even without it); the hash rule is the
// resolution window acks search, max(dedup window, completedRetentionSeconds, 900 s), so
// dedup (which never looks past the dedup window) stays exact. Callers hold s.mu.
func (s *Store) cutoffsOf(q *queue, now time.Time) cutoffs {
	o := q.opts
	var c cutoffs
	var age time.Duration
	if o.RetentionEnabled && o.RetentionSeconds > 0 {
		age = time.Duration(o.RetentionSeconds) * time.Second
	}
	c.ageJob = ports.JobRetention
	if w := time.Duration(o.MaxWaitTimeSeconds) * time.Second; w > 0 && (age == 0 || w < age) {
		age = w
		c.ageJob = ports.JobEviction
	}
	if age > 0 {
		c.age = now.Add(-age)
	}
	if o.RetentionEnabled && o.CompletedRetentionSeconds > 0 {
		c.done = now.Add(-time.Duration(o.CompletedRetentionSeconds) * time.Second)
	}
	c.seg = c.age // greatest() ignores a NULL
	if c.done.After(c.seg) {
		c.seg = c.done
	}
	c.hash = now.Add(-max(s.window(q.key), time.Duration(o.CompletedRetentionSeconds)*time.Second, minResolution))
	return c
}

// firstSegment is the oldest stored segment at or after log_start (nil: none), the probe
// of the walk and of the trim.
func (p *partition) firstSegment() *stored {
	for i := range p.segs {
		if sg := &p.segs[i]; !sg.removed && sg.BaseOffset >= p.logStart {
			return sg
		}
	}
	return nil
}

// firstHash is the oldest hash sidecar row ending at or after txns_start (nil: none).
func (p *partition) firstHash() *stored {
	for i := range p.segs {
		if sg := &p.segs[i]; !sg.hashGone && sg.BaseOffset+int64(sg.Count)-1 >= p.txnsStart {
			return sg
		}
	}
	return nil
}

// due reports whether the partition has something past a cutoff: its oldest retained
// segment past the later segment cutoff, or its oldest retained hash row past the hash
// cutoff.
func (p *partition) due(c cutoffs) bool {
	if !c.seg.IsZero() && p.last >= p.logStart {
		if sg := p.firstSegment(); sg != nil && sg.CreatedAt.Before(c.seg) {
			return true
		}
	}
	sg := p.firstHash()
	return sg != nil && sg.CreatedAt.Before(c.hash)
}

// cursorHeld reports whether a cursor of the partition is held (HoldCursor): a pop or an
// ack under way, whose cursor lock retention's SKIP LOCKED would not get. Callers hold
// s.mu.
func (s *Store) cursorHeld(pid string) bool {
	prefix := pid + "\x1f"
	for k, n := range s.held {
		if n > 0 && strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// parseAfter is the walk's start as the SQL store takes it: "" (from the first) or a
// uuid, canonical.
func parseAfter(op, after string) (string, error) {
	if after == "" {
		return "", nil
	}
	u, err := uuid.Parse(after)
	if err != nil {
		return "", fmt.Errorf("memory: %s: after %q: %w", op, after, ports.ErrInvalid)
	}
	return u.String(), nil
}

// Trim implements ports.RetentionStore (log_retention_step_v1): the walk of at most
// partitions partitions after after, then the due ones in id order while the row budget
// lasts. A partition the budget reaches zero on may hold more, so Last stays before it.
func (r *RetentionStore) Trim(ctx context.Context, after string, partitions, rows int) (ports.TrimStep, error) {
	s := r.s
	if err := s.begin(ctx, "Retention.Trim"); err != nil {
		return ports.TrimStep{}, err
	}
	after, err := parseAfter("retention trim", after)
	if err != nil {
		return ports.TrimStep{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()

	// 1. The walk.
	var walk []*partition
	for _, p := range s.byID {
		if p.id > after {
			walk = append(walk, p)
		}
	}
	slices.SortFunc(walk, func(a, b *partition) int { return strings.Compare(a.id, b.id) })
	walk = walk[:min(len(walk), max(partitions, 1))]
	var st ports.TrimStep
	st.Walked = len(walk)
	if len(walk) > 0 {
		st.Last = walk[len(walk)-1].id
	}

	// 2. The due partitions, in id order.
	budget := max(rows, 1)
	var runs ports.RunTally
	before := after // the walked partition before the last due one visited
	for i, p := range walk {
		c := s.cutoffsOf(p.q, now)
		if !p.due(c) {
			continue
		}
		before = after
		if i > 0 {
			before = walk[i-1].id
		}
		if budget <= 0 {
			st.Last = before // not done with this one: the next step starts at it
			st.Removals = runs.Runs()
			return st, nil
		}
		if s.cursorHeld(p.id) {
			continue // a pop or an ack holds a cursor: the next walk
		}
		budget -= s.trimPartition(p, c, budget, &st, &runs)
	}
	if budget <= 0 {
		st.Last = before // the budget ran out on the last partition trimmed: it may hold more
	}
	st.Removals = runs.Runs()
	return st, nil
}

// trimPartition removes what of p is past c, at most budget rows (segments first, then
// hash rows), adds it to st and to runs (per rule) and returns the rows removed. Callers
// hold s.mu.
func (s *Store) trimPartition(p *partition, c cutoffs, budget int, st *ports.TrimStep, runs *ports.RunTally) int {
	run := func(job string, rows, bytes int64) {
		runs.Add(ports.RetentionRun{Job: job, Tenant: p.q.tenant, Queue: p.q.name, Rows: rows, Bytes: bytes})
	}
	used := 0
	start := p.logStart
	if !c.seg.IsZero() && p.last >= p.logStart {
		done := s.consumedByAll(p, c)
		// The first segment to keep among the next budget + 1: creation times grow with
		// offsets, and so does "consumed", so what goes is a prefix.
		kept, gone, seen, lastSeen := int64(-1), 0, 0, int64(-1)
		for i := range p.segs {
			sg := &p.segs[i]
			if sg.removed || sg.BaseOffset < p.logStart {
				continue
			}
			if seen == budget+1 {
				break
			}
			seen++
			lastSeen = sg.BaseOffset
			end := sg.BaseOffset + int64(sg.Count) - 1
			if (!c.age.IsZero() && sg.CreatedAt.Before(c.age)) ||
				(!c.done.IsZero() && sg.CreatedAt.Before(c.done) && end <= done) {
				gone++
			} else if kept < 0 {
				kept = sg.BaseOffset
			}
		}
		if kept < 0 && gone > budget {
			kept = lastSeen // all budget + 1 could go: the last one waits for the next step
		}
		start = p.last + 1
		if kept >= 0 {
			start = kept
		}
		if start > p.logStart {
			for i := range p.segs {
				sg := &p.segs[i]
				if sg.removed || sg.BaseOffset < p.logStart || sg.BaseOffset >= start {
					continue
				}
				st.Segments++
				st.SegmentBytes += int64(len(sg.Blob))
				job := ports.JobCompletedRetention // a segment past both rules goes by age
				if !c.age.IsZero() && sg.CreatedAt.Before(c.age) {
					job = c.ageJob
				}
				run(job, int64(sg.Count), int64(len(sg.Blob)))
				sg.removed, sg.Blob = true, nil
				used++
			}
			st.Messages += start - p.logStart
		}
	}

	// Hashes, by their own watermark: the oldest rows past the cutoff, in offset order.
	hend := int64(-1)
	for i := range p.segs {
		if used >= budget {
			break
		}
		sg := &p.segs[i]
		end := sg.BaseOffset + int64(sg.Count) - 1
		if sg.hashGone || end < p.txnsStart || !sg.CreatedAt.Before(c.hash) {
			continue
		}
		st.HashRows++
		st.HashBytes += int64(len(sg.hashes))
		run(ports.JobHashRows, 1, int64(len(sg.hashes)))
		sg.hashGone, sg.hashes = true, nil
		hend = end
		used++
	}

	if start > p.logStart || hend >= 0 {
		p.logStart = max(p.logStart, start)
		if hend >= 0 {
			p.txnsStart = max(p.txnsStart, hend+1)
		}
		st.Trimmed++
		p.segs = slices.DeleteFunc(p.segs, func(sg stored) bool { return sg.removed && sg.hashGone })
	}
	return used
}

// consumedByAll is the last offset every group consumed on p: the smallest committed
// offset over its cursors, or -1 (nothing) when it has none, when a durable group of the
// queue has no cursor there yet, or when no completed rule applies. Callers hold s.mu.
func (s *Store) consumedByAll(p *partition, c cutoffs) int64 {
	cursors := s.cursorsOf(p.id)
	if c.done.IsZero() || len(cursors) == 0 {
		return -1
	}
	has := make(map[string]bool, len(cursors))
	for _, gc := range cursors {
		has[gc.group] = true
	}
	for g := range p.q.groups {
		if !has[g] {
			return -1
		}
	}
	done := cursors[0].c.committed
	for _, gc := range cursors[1:] {
		done = min(done, gc.c.committed)
	}
	return done
}

// deadQueue is the queue of a dead letter of partition pid: the partition's, or the one
// a dropped partition had (nil: none). Callers hold s.mu.
func (s *Store) deadQueue(pid string) *queue {
	if p := s.byID[pid]; p != nil {
		return p.q
	}
	return s.orphans[pid]
}

// PurgeDeadLetters implements ports.RetentionStore (log_purge_dead_letters_v1): the
// dead letters that failed more than their queue's retentionSeconds ago (when
// retentionEnabled), oldest failure first, at most rows; bytes are their blobs'.
func (r *RetentionStore) PurgeDeadLetters(ctx context.Context, rows int) (ports.Removed, error) {
	s := r.s
	if err := s.begin(ctx, "Retention.PurgeDeadLetters"); err != nil {
		return ports.Removed{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var expired []*ports.DeadLetter
	for i := range s.dead {
		d := &s.dead[i]
		q := s.deadQueue(d.PartitionID)
		if q == nil || !q.opts.RetentionEnabled || q.opts.RetentionSeconds <= 0 {
			continue
		}
		if d.FailedAt.Before(now.Add(-time.Duration(q.opts.RetentionSeconds) * time.Second)) {
			expired = append(expired, d)
		}
	}
	slices.SortFunc(expired, func(a, b *ports.DeadLetter) int {
		return cmp.Or(a.FailedAt.Compare(b.FailedAt), strings.Compare(a.ID, b.ID))
	})
	var out ports.Removed
	var runs ports.RunTally
	drop := make(map[string]bool)
	for _, d := range expired[:min(len(expired), max(rows, 1))] {
		drop[d.ID] = true
		out.Rows++
		out.Bytes += int64(len(d.Blob))
		q := s.deadQueue(d.PartitionID)
		runs.Add(ports.RetentionRun{Job: ports.JobDeadLetters, Tenant: q.tenant, Queue: q.name, Rows: 1, Bytes: int64(len(d.Blob))})
	}
	out.Queues = runs.Runs()
	s.dead = slices.DeleteFunc(s.dead, func(d ports.DeadLetter) bool { return drop[d.ID] })
	s.pruneOrphans()
	return out, nil
}

// pruneOrphans forgets the queues of dropped partitions no dead letter names any more.
// Callers hold s.mu.
func (s *Store) pruneOrphans() {
	if len(s.orphans) == 0 {
		return
	}
	named := make(map[string]bool)
	for _, d := range s.dead {
		named[d.PartitionID] = true
	}
	for pid := range s.orphans {
		if !named[pid] {
			delete(s.orphans, pid)
		}
	}
}

// PurgeTraces implements ports.RetentionStore (log_purge_traces_v1): traces whose
// expiry passed, earliest expiry first, at most rows; bytes are their data's.
func (r *RetentionStore) PurgeTraces(ctx context.Context, rows int) (ports.Removed, error) {
	s := r.s
	if err := s.begin(ctx, "Retention.PurgeTraces"); err != nil {
		return ports.Removed{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var expired []*trace
	for _, tr := range s.traces {
		if tr.expires.Before(now) {
			expired = append(expired, tr)
		}
	}
	slices.SortStableFunc(expired, func(a, b *trace) int { return a.expires.Compare(b.expires) })
	var out ports.Removed
	var runs ports.RunTally
	drop := make(map[*trace]bool)
	for _, tr := range expired[:min(len(expired), max(rows, 1))] {
		drop[tr] = true
		out.Rows++
		out.Bytes += int64(len(tr.t.Data))
		queue := "" // the trace's partition is gone
		if p := s.byID[tr.t.PartitionID]; p != nil {
			queue = p.q.name
		}
		runs.Add(ports.RetentionRun{Job: ports.JobTraces, Tenant: tr.tenant, Queue: queue, Rows: 1, Bytes: int64(len(tr.t.Data))})
	}
	out.Queues = runs.Runs()
	s.traces = slices.DeleteFunc(s.traces, func(tr *trace) bool { return drop[tr] })
	return out, nil
}

// DropEmptyPartitions implements ports.RetentionStore (log_drop_empty_partitions_v1):
// at most rows partitions, in id order, that retain no message and no hash row and were
// last written more than idle ago, with their cursors; one with a held cursor stays for
// the next call. A push naming a dropped partition creates it again, with a new id, from
// offset 0. Its dead letters stay, with their queue (see Store.orphans); traces naming
// it stay and read without names, as they do in SQL.
func (r *RetentionStore) DropEmptyPartitions(ctx context.Context, idle time.Duration, rows int) (ports.Removed, error) {
	s := r.s
	if err := s.begin(ctx, "Retention.DropEmptyPartitions"); err != nil {
		return ports.Removed{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cutoff := s.Now().Add(-idle)
	var empty []*partition
	for _, p := range s.byID {
		if p.last < p.logStart && p.last < p.txnsStart && p.lastWrite.Before(cutoff) {
			empty = append(empty, p)
		}
	}
	slices.SortFunc(empty, func(a, b *partition) int { return strings.Compare(a.id, b.id) })
	var out ports.Removed
	var runs ports.RunTally
	for _, p := range empty[:min(len(empty), max(rows, 1))] {
		if s.cursorHeld(p.id) {
			continue
		}
		s.dropPartition(p)
		out.Rows++
		runs.Add(ports.RetentionRun{Job: ports.JobPartitions, Tenant: p.q.tenant, Queue: p.q.name, Rows: 1})
	}
	out.Queues = runs.Runs()
	return out, nil
}

// dropPartition deletes p and its cursors. Callers hold s.mu.
func (s *Store) dropPartition(p *partition) {
	delete(s.partitions, p.queueKey+"\x1f"+p.name)
	delete(s.byID, p.id)
	prefix := p.id + "\x1f"
	for k := range s.consumers {
		if strings.HasPrefix(k, prefix) {
			delete(s.consumers, k)
		}
	}
	for _, d := range s.dead {
		if d.PartitionID == p.id {
			if s.orphans == nil {
				s.orphans = make(map[string]*queue)
			}
			s.orphans[p.id] = p.q
			break
		}
	}
}
