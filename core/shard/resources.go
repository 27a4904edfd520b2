package shard

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queen-go/queen/ports"
)

// Resources is the admin API's ports.ResourceStore over several shards: a read naming
// one queue runs on the queue's shard; a tenant-wide listing or sum asks every shard in
// parallel and merges their answers into the one a single database holding every queue
// would give (docs/design.md, "Operations that span shards"). A shard that does not
// answer fails the read with *UnreachableError: a listing without it would look
// complete.
type Resources struct {
	shards []ports.ResourceStore // index = shard number
	placer *Placer
}

var _ ports.ResourceStore = (*Resources)(nil)

// NewResources returns the resource store over shards (index = shard number) placed by
// placer.
func NewResources(shards []ports.ResourceStore, placer *Placer) *Resources {
	return &Resources{shards: shards, placer: placer}
}

// mergeCombined is rows offset to offset+limit of a listing in which several shards may
// each hold part of one row (a namespace with queues on two shards): pages and cmp as
// for MergePage, except that rows comparing equal are the same row and add combines
// them. A row among the first offset+limit distinct rows is within the first
// offset+limit rows of every shard holding part of it, so the same asks suffice: each
// part of every row on the page is there.
func mergeCombined[T any](pages [][]T, cmp func(a, b T) int, add func(a, b T) T, offset, limit int) []T {
	end := pageEnd(offset, limit)
	var rows []T
	for _, row := range MergePage(pages, cmp, 0, -1) {
		switch last := len(rows) - 1; {
		case last >= 0 && cmp(rows[last], row) == 0:
			rows[last] = add(rows[last], row)
		case len(rows) == end:
			return rowsOrEmpty(rows[min(offset, len(rows)):])
		default:
			rows = append(rows, row)
		}
	}
	return rowsOrEmpty(rows[min(offset, len(rows)):])
}

// ListQueues implements ports.ResourceStore: a listing of one queue by name on its
// shard; any other from every shard, merged in name order (then by id, a total order
// should a name ever be on two shards), the count the sum of the shards'.
func (r *Resources) ListQueues(ctx context.Context, tenant string, f ports.ResourceFilter, p ports.ResourcePage) ([]ports.QueueResource, int64, error) {
	type answer struct {
		rows  []ports.QueueResource
		total int64
	}
	list := func(s ports.ResourceStore, p ports.ResourcePage) (answer, error) {
		rows, total, err := s.ListQueues(ctx, tenant, f, p)
		return answer{rows, total}, err
	}
	if f.Queue != "" {
		n, err := r.placer.Holder(ctx, tenant, f.Queue)
		if err != nil {
			return nil, 0, fmt.Errorf("shard: list queues: %w", err)
		}
		a, err := askOne(r.shards, n, func(s ports.ResourceStore) (answer, error) { return list(s, p) })
		if err != nil {
			return nil, 0, fmt.Errorf("shard: list queues: %w", err)
		}
		return a.rows, a.total, nil
	}
	each := ports.ResourcePage{Limit: pageEnd(p.Offset, p.Limit)}
	got, err := askAll(r.shards, func(_ int, s ports.ResourceStore) (answer, error) { return list(s, each) })
	if err != nil {
		return nil, 0, fmt.Errorf("shard: list queues: %w", err)
	}
	pages := make([][]ports.QueueResource, len(got))
	var total int64
	for n, a := range got {
		pages[n], total = a.rows, total+a.total
	}
	rows := MergePage(pages, func(a, b ports.QueueResource) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
	}, p.Offset, p.Limit)
	return rowsOrEmpty(rows), total, nil
}

// QueueDetail implements ports.ResourceStore on the queue's shard.
func (r *Resources) QueueDetail(ctx context.Context, tenant, queue string, p ports.ResourcePage) (ports.QueueResourceDetail, bool, error) {
	type answer struct {
		d     ports.QueueResourceDetail
		found bool
	}
	n, err := r.placer.Holder(ctx, tenant, queue)
	if err != nil {
		return ports.QueueResourceDetail{}, false, fmt.Errorf("shard: queue detail: %w", err)
	}
	a, err := askOne(r.shards, n, func(s ports.ResourceStore) (answer, error) {
		d, found, err := s.QueueDetail(ctx, tenant, queue, p)
		return answer{d, found}, err
	})
	if err != nil {
		return ports.QueueResourceDetail{}, false, fmt.Errorf("shard: queue detail: %w", err)
	}
	return a.d, a.found, nil
}

// QueueDepth implements ports.ResourceStore on the queue's shard.
func (r *Resources) QueueDepth(ctx context.Context, tenant, queue, group string, p ports.ResourcePage) (ports.QueueDepthResult, bool, error) {
	type answer struct {
		d     ports.QueueDepthResult
		found bool
	}
	n, err := r.placer.Holder(ctx, tenant, queue)
	if err != nil {
		return ports.QueueDepthResult{}, false, fmt.Errorf("shard: queue depth: %w", err)
	}
	a, err := askOne(r.shards, n, func(s ports.ResourceStore) (answer, error) {
		d, found, err := s.QueueDepth(ctx, tenant, queue, group, p)
		return answer{d, found}, err
	})
	if err != nil {
		return ports.QueueDepthResult{}, false, fmt.Errorf("shard: queue depth: %w", err)
	}
	return a.d, a.found, nil
}

// CountsBy implements ports.ResourceStore: every shard's rows merged in key order. A
// namespace or task may have queues on several shards (an explicit placement splits a
// namespace; tasks are not co-located at all): its rows are one row, their queues,
// partitions and counts added.
func (r *Resources) CountsBy(ctx context.Context, tenant string, key ports.ResourceKey, p ports.ResourcePage) ([]ports.KeyCounts, error) {
	each := ports.ResourcePage{Limit: pageEnd(p.Offset, p.Limit)}
	pages, err := askAll(r.shards, func(_ int, s ports.ResourceStore) ([]ports.KeyCounts, error) {
		return s.CountsBy(ctx, tenant, key, each)
	})
	if err != nil {
		return nil, fmt.Errorf("shard: counts by key: %w", err)
	}
	return mergeCombined(pages, func(a, b ports.KeyCounts) int { return strings.Compare(a.Key, b.Key) },
		func(a, b ports.KeyCounts) ports.KeyCounts {
			return ports.KeyCounts{Key: a.Key, Queues: a.Queues + b.Queues, Partitions: a.Partitions + b.Partitions,
				Counts: a.Counts.Add(b.Counts)}
		}, p.Offset, p.Limit), nil
}

// Overview implements ports.ResourceStore. Queues, partitions and message counts add
// up (a queue and its partitions live on one shard). Namespaces, Tasks and
// ConsumerGroups count distinct names, which two shards may share: see distinctKeys and
// distinctGroups.
func (r *Resources) Overview(ctx context.Context, tenant string) (ports.ResourceOverview, error) {
	got, err := askAll(r.shards, func(_ int, s ports.ResourceStore) (ports.ResourceOverview, error) {
		return s.Overview(ctx, tenant)
	})
	if err != nil {
		return ports.ResourceOverview{}, fmt.Errorf("shard: overview: %w", err)
	}
	var o ports.ResourceOverview
	for _, g := range got {
		o.Queues += g.Queues
		o.Partitions += g.Partitions
		o.Counts = o.Counts.Add(g.Counts)
	}
	if o.Namespaces, err = r.distinctKeys(ctx, tenant, ports.ByNamespace, got, func(o ports.ResourceOverview) int64 { return o.Namespaces }); err != nil {
		return ports.ResourceOverview{}, fmt.Errorf("shard: overview: namespaces: %w", err)
	}
	if o.Tasks, err = r.distinctKeys(ctx, tenant, ports.ByTask, got, func(o ports.ResourceOverview) int64 { return o.Tasks }); err != nil {
		return ports.ResourceOverview{}, fmt.Errorf("shard: overview: tasks: %w", err)
	}
	if o.ConsumerGroups, err = r.distinctGroups(ctx, tenant, got); err != nil {
		return ports.ResourceOverview{}, fmt.Errorf("shard: overview: consumer groups: %w", err)
	}
	return o, nil
}

// distinctHolders returns the shards whose count of distinct names is not 0. When there is at
// most one, the sum of the counts is already the distinct count, and distinctHolders returns
// nil.
func distinctHolders(got []ports.ResourceOverview, count func(ports.ResourceOverview) int64) (sum int64, shards []bool) {
	shards = make([]bool, len(got))
	var some int
	for n, o := range got {
		sum += count(o)
		if count(o) > 0 {
			shards[n] = true
			some++
		}
	}
	if some <= 1 {
		return sum, nil
	}
	return sum, shards
}

// distinctKeys is the number of distinct non-empty namespaces (or tasks) of the tenant.
// When only one shard has any, it is that shard's count; otherwise the shards that have
// some list theirs (CountsBy, whole) and the names are counted once each.
func (r *Resources) distinctKeys(ctx context.Context, tenant string, key ports.ResourceKey, got []ports.ResourceOverview, count func(ports.ResourceOverview) int64) (int64, error) {
	sum, ask := distinctHolders(got, count)
	if ask == nil {
		return sum, nil
	}
	lists, err := askAll(r.shards, func(n int, s ports.ResourceStore) ([]ports.KeyCounts, error) {
		if !ask[n] {
			return nil, nil
		}
		return s.CountsBy(ctx, tenant, key, ports.ResourcePage{Limit: wholeListing})
	})
	if err != nil {
		return 0, err
	}
	seen := make(map[string]bool)
	for _, l := range lists {
		for _, k := range l {
			seen[k.Key] = true
		}
	}
	return int64(len(seen)), nil
}

// groupLister is the read distinctGroups names consumer groups with: a shard's store
// that also implements ports.GroupStore (the PostgreSQL and memory stores both do).
type groupLister interface {
	GroupSummaries(ctx context.Context, tenant string, page ports.GroupPage) (time.Time, []ports.GroupSummary, error)
}

// distinctGroups is the number of distinct consumer groups subscribed to any of the
// tenant's queues. A group may be subscribed to queues of several shards, so when more
// than one shard has groups their names are read (the pairs with a subscription, from
// GroupSummaries: the ports have no cheaper read of the names; it runs only in that
// case) and counted once each. A shard store without that read leaves the sum of the
// shards' counts, which counts a group once per shard it is on.
func (r *Resources) distinctGroups(ctx context.Context, tenant string, got []ports.ResourceOverview) (int64, error) {
	sum, ask := distinctHolders(got, func(o ports.ResourceOverview) int64 { return o.ConsumerGroups })
	if ask == nil {
		return sum, nil
	}
	for n := range ask {
		if _, ok := r.shards[n].(groupLister); ask[n] && !ok {
			return sum, nil
		}
	}
	lists, err := askAll(r.shards, func(n int, s ports.ResourceStore) ([]ports.GroupSummary, error) {
		if !ask[n] {
			return nil, nil
		}
		_, rows, err := s.(groupLister).GroupSummaries(ctx, tenant, ports.GroupPage{Limit: wholeListing})
		return rows, err
	})
	if err != nil {
		return 0, err
	}
	seen := make(map[string]bool)
	for _, l := range lists {
		for _, g := range l {
			if g.Subscription != nil {
				seen[g.Group] = true
			}
		}
	}
	return int64(len(seen)), nil
}

// Status implements ports.ResourceStore: one queue's on its shard; any other selection
// from every shard, added up. Every field is a count over queues, partitions, leases or
// dead letters, each of which lives on one shard, so the sums are exact.
func (r *Resources) Status(ctx context.Context, tenant string, f ports.ResourceFilter) (ports.ResourceStatus, error) {
	if f.Queue != "" {
		n, err := r.placer.Holder(ctx, tenant, f.Queue)
		if err != nil {
			return ports.ResourceStatus{}, fmt.Errorf("shard: status: %w", err)
		}
		st, err := askOne(r.shards, n, func(s ports.ResourceStore) (ports.ResourceStatus, error) {
			return s.Status(ctx, tenant, f)
		})
		if err != nil {
			return ports.ResourceStatus{}, fmt.Errorf("shard: status: %w", err)
		}
		return st, nil
	}
	got, err := askAll(r.shards, func(_ int, s ports.ResourceStore) (ports.ResourceStatus, error) {
		return s.Status(ctx, tenant, f)
	})
	if err != nil {
		return ports.ResourceStatus{}, fmt.Errorf("shard: status: %w", err)
	}
	var st ports.ResourceStatus
	for _, g := range got {
		st.Queues += g.Queues
		st.Partitions += g.Partitions
		st.Counts = st.Counts.Add(g.Counts)
		st.Leases.Active += g.Leases.Active
		st.Leases.Partitions += g.Leases.Partitions
		st.Leases.Messages += g.Leases.Messages
		st.DeadLetters.Current += g.DeadLetters.Current
		st.DeadLetters.Partitions += g.DeadLetters.Partitions
	}
	return st, nil
}

// StorageTotals implements ports.ResourceStore: each shard has a segment table of its
// own, so the bytes, rows and retained messages of the whole are the sums of the
// shards'.
func (r *Resources) StorageTotals(ctx context.Context) (ports.StorageTotals, error) {
	got, err := askAll(r.shards, func(_ int, s ports.ResourceStore) (ports.StorageTotals, error) {
		return s.StorageTotals(ctx)
	})
	if err != nil {
		return ports.StorageTotals{}, fmt.Errorf("shard: storage totals: %w", err)
	}
	var t ports.StorageTotals
	for _, g := range got {
		t.SegmentBytes += g.SegmentBytes
		t.Segments += g.Segments
		t.Messages += g.Messages
	}
	return t, nil
}
