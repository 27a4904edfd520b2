package memory

import (
	"context"
	"time"

	"github.com/queen-go/queen/ports"
)

// Store's ports.ResourceStore follows schema/009_resources.sql (log_partition_counts_v1,
// log_queue_counts_v1, log_retained_span_v1) and adapters/admin/resources.go: counts are
// offset arithmetic over the partitions and their cursors, pages are in name order.

var _ ports.ResourceStore = (*Store)(nil)

// partCounts are one partition's counts, as log_partition_counts_v1 computes them.
type partCounts struct {
	total, pending, processing int64
	leased, leases             int64 // live leased spans (not capped) and how many
	consumed                   int64
	lastActivity               time.Time // zero: no cursor ever popped or acked
}

// countsOf computes p's counts for group ("" = the worst-cursor rule) at now. Callers
// hold s.mu.
func (s *Store) countsOf(p *partition, group string, now time.Time) partCounts {
	var k partCounts
	k.total = max(p.last-p.logStart+1, 0)
	var worstNamed, worstAny, worstGroup *int64
	low := func(w **int64, v int64) {
		if *w == nil || v < **w {
			*w = &v
		}
	}
	for _, gc := range s.cursorsOf(p.id) {
		c := gc.c
		low(&worstAny, c.committed)
		if gc.group != ports.QueueModeGroup {
			low(&worstNamed, c.committed)
		}
		if gc.group == group {
			low(&worstGroup, c.committed)
		}
		if c.expires.After(now) && (group == "" || gc.group == group) {
			k.leased += max(c.batchEnd-c.committed, 0)
			k.leases++
		}
		k.consumed += max(min(c.committed, p.last)-(p.logStart-1), 0)
		if c.lastConsumed.After(k.lastActivity) {
			k.lastActivity = c.lastConsumed
		}
	}
	worst := worstGroup
	if group == "" {
		worst = worstNamed
		if worst == nil {
			worst = worstAny // the queue-mode cursor only when no named group has one
		}
	}
	floor := p.logStart - 1 // no cursor: nothing consumed, everything retained is pending
	if worst != nil {
		floor = max(*worst, floor)
	}
	k.pending = max(p.last-floor, 0)
	k.processing = min(k.leased, k.pending)
	return k
}

func (k partCounts) watermark() ports.WatermarkCounts {
	return ports.WatermarkCounts{Total: k.total, Pending: k.pending, Processing: k.processing}
}

// queueCounts are the sums over a queue's partitions (log_queue_counts_v1).
type queueCounts struct {
	partitions                    int64
	counts                        ports.WatermarkCounts // DeadLetter: the queue's dead-letter rows
	leased, leases, leasePartions int64
	dlqPartitions                 int64
}

// queueCountsOf sums q's partitions with the worst-cursor rule. Callers hold s.mu.
func (s *Store) queueCountsOf(q *queue, now time.Time) queueCounts {
	var out queueCounts
	for _, p := range s.partitionsOf(q) {
		k := s.countsOf(p, "", now)
		out.partitions++
		out.counts = out.counts.Add(k.watermark())
		out.leased += k.leased
		out.leases += k.leases
		if k.leases > 0 {
			out.leasePartions++
		}
		if len(s.deadOf(func(x *partition) bool { return x == p })) > 0 {
			out.dlqPartitions++
		}
	}
	out.counts.DeadLetter = int64(len(s.deadOf(func(p *partition) bool { return p.q == q })))
	return out
}

// page returns the part of n rows a page selects, as [from, to).
func page(n int, p ports.ResourcePage) (from, to int) {
	from = min(max(p.Offset, 0), n)
	return from, from + min(max(p.Limit, 0), n-from)
}

// ListQueues implements ports.ResourceStore.
func (s *Store) ListQueues(ctx context.Context, tenant string, f ports.ResourceFilter, p ports.ResourcePage) ([]ports.QueueResource, int64, error) {
	if err := s.begin(ctx, "ListQueues"); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	qs := s.tenantQueues(tenant, f.Queue, f.Namespace, f.Task)
	from, to := page(len(qs), p)
	out := make([]ports.QueueResource, 0, to-from)
	for _, q := range qs[from:to] {
		c := s.queueCountsOf(q, now)
		out = append(out, ports.QueueResource{ID: q.id, Name: q.name, Namespace: q.namespace, Task: q.task,
			CreatedAt: q.created, Partitions: c.partitions, Counts: c.counts})
	}
	return out, int64(len(qs)), nil
}

// QueueDetail implements ports.ResourceStore.
func (s *Store) QueueDetail(ctx context.Context, tenant, queue string, pg ports.ResourcePage) (ports.QueueResourceDetail, bool, error) {
	if err := s.begin(ctx, "QueueDetail"); err != nil {
		return ports.QueueResourceDetail{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[tenant+"\x1f"+queue]
	if q == nil {
		return ports.QueueResourceDetail{}, false, nil
	}
	now := s.Now()
	c := s.queueCountsOf(q, now)
	d := ports.QueueResourceDetail{Config: s.configOf(q), CreatedAt: q.created, Partitions: c.partitions, Totals: c.counts}
	parts := s.partitionsOf(q)
	from, to := page(len(parts), pg)
	d.Page = make([]ports.PartitionResource, 0, to-from)
	for _, p := range parts[from:to] {
		k := s.countsOf(p, "", now)
		r := ports.PartitionResource{ID: p.id, Name: p.name, CreatedAt: p.created, Counts: k.watermark(),
			Consumed: k.consumed, LastActivity: timePtr(k.lastActivity)}
		r.Counts.DeadLetter = int64(len(s.deadOf(func(x *partition) bool { return x == p })))
		if k.total > 0 {
			r.Oldest, r.Newest = p.retainedSpan()
		}
		d.Page = append(d.Page, r)
	}
	return d, true, nil
}

// retainedSpan returns the commit times of the first and last retained segments, as
// log_retained_span_v1 finds them: the segment covering log_start (else the first one
// after it), and the last one.
func (p *partition) retainedSpan() (oldest, newest *time.Time) {
	if sg := p.segmentCovering(p.logStart); sg != nil {
		oldest = timePtr(sg.CreatedAt)
	} else {
		for i := range p.segs {
			if sg := &p.segs[i]; !sg.removed && sg.BaseOffset > p.logStart {
				oldest = timePtr(sg.CreatedAt)
				break
			}
		}
	}
	if last := p.lastSegment(); last != nil {
		newest = timePtr(last.CreatedAt)
	}
	return oldest, newest
}

// QueueDepth implements ports.ResourceStore.
func (s *Store) QueueDepth(ctx context.Context, tenant, queue, group string, pg ports.ResourcePage) (ports.QueueDepthResult, bool, error) {
	if err := s.begin(ctx, "QueueDepth"); err != nil {
		return ports.QueueDepthResult{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[tenant+"\x1f"+queue]
	if q == nil {
		return ports.QueueDepthResult{}, false, nil
	}
	now := s.Now()
	var d ports.QueueDepthResult
	parts := s.partitionsOf(q)
	from, to := page(len(parts), pg)
	d.Page = make([]ports.PartitionDepth, 0, to-from)
	for i, p := range parts {
		k := s.countsOf(p, group, now)
		d.Totals.Pending += k.pending
		d.Totals.Processing += k.processing
		if k.pending > 0 {
			d.PartitionsPending++
		}
		if k.pending > k.processing {
			d.PartitionsReady++
		}
		if i >= from && i < to {
			d.Page = append(d.Page, ports.PartitionDepth{Name: p.name,
				Counts: ports.WatermarkCounts{Pending: k.pending, Processing: k.processing}})
		}
	}
	return d, true, nil
}

// CountsBy implements ports.ResourceStore.
func (s *Store) CountsBy(ctx context.Context, tenant string, key ports.ResourceKey, pg ports.ResourcePage) ([]ports.KeyCounts, error) {
	if err := s.begin(ctx, "CountsBy"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var out []ports.KeyCounts
	index := make(map[string]int)
	for _, q := range s.tenantQueues(tenant, "", "", "") {
		k := q.namespace
		if key == ports.ByTask {
			k = q.task
		}
		if k == "" {
			continue
		}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, ports.KeyCounts{Key: k})
		}
		c := s.queueCountsOf(q, now)
		c.counts.DeadLetter = 0 // not counted here
		out[i].Queues++
		out[i].Partitions += c.partitions
		out[i].Counts = out[i].Counts.Add(c.counts)
	}
	sortBy(out, func(k ports.KeyCounts) string { return k.Key })
	from, to := page(len(out), pg)
	return out[from:to:to], nil
}

// Overview implements ports.ResourceStore.
func (s *Store) Overview(ctx context.Context, tenant string) (ports.ResourceOverview, error) {
	if err := s.begin(ctx, "Overview"); err != nil {
		return ports.ResourceOverview{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var o ports.ResourceOverview
	namespaces, tasks, groups := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, q := range s.tenantQueues(tenant, "", "", "") {
		c := s.queueCountsOf(q, now)
		o.Queues++
		o.Partitions += c.partitions
		o.Counts = o.Counts.Add(c.counts)
		if q.namespace != "" {
			namespaces[q.namespace] = true
		}
		if q.task != "" {
			tasks[q.task] = true
		}
		for g := range q.groups {
			groups[g] = true
		}
	}
	o.Namespaces, o.Tasks, o.ConsumerGroups = int64(len(namespaces)), int64(len(tasks)), int64(len(groups))
	return o, nil
}

// Status implements ports.ResourceStore.
func (s *Store) Status(ctx context.Context, tenant string, f ports.ResourceFilter) (ports.ResourceStatus, error) {
	if err := s.begin(ctx, "Status"); err != nil {
		return ports.ResourceStatus{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	var st ports.ResourceStatus
	for _, q := range s.tenantQueues(tenant, f.Queue, f.Namespace, f.Task) {
		c := s.queueCountsOf(q, now)
		st.Queues++
		st.Partitions += c.partitions
		st.Counts = st.Counts.Add(c.counts)
		st.Leases.Active += c.leases
		st.Leases.Partitions += c.leasePartions
		st.Leases.Messages += c.leased
		st.DeadLetters.Current += c.counts.DeadLetter
		st.DeadLetters.Partitions += c.dlqPartitions
	}
	return st, nil
}

// StorageTotals implements ports.ResourceStore: the bytes of every stored segment's
// blob, how many segments are stored, and the retained messages of every tenant.
func (s *Store) StorageTotals(ctx context.Context) (ports.StorageTotals, error) {
	if err := s.begin(ctx, "StorageTotals"); err != nil {
		return ports.StorageTotals{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var t ports.StorageTotals
	for _, p := range s.byID {
		t.Messages += max(p.last-p.logStart+1, 0)
		for _, sg := range p.segs {
			if !sg.removed {
				t.Segments++
				t.SegmentBytes += int64(len(sg.Blob))
			}
		}
	}
	return t, nil
}
