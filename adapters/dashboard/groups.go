package dashboard

import (
	"cmp"
	"context"
	"net/url"
	"slices"
	"time"

	"github.com/queen-go/queen/core/admin"
)

// maxLagging is how many partitions behind the groups page reads without a group
// chosen: the oldest first.
const maxLagging = 1000

// partitionRow is where one group stands on one partition.
type partitionRow struct {
	Group, Queue, Partition string
	OffsetLag               int64
	TimeLag                 time.Duration
	LastConsumedAt          *time.Time
	Worker                  string // the live lease's holder
}

type groupsData struct {
	Group, Queue    string // the filters
	Sort            string
	Pairs           []admin.GroupSummary
	PairsPager      pager
	Partitions      []partitionRow
	PartitionsPager pager
	// Lagging: without a group filter the partitions are those with something to read
	// (of every group, oldest first, at most the admin use case's MaxLimit of them).
	Lagging, LaggingCapped bool
	Truncated              bool
	Now                    time.Time
	May                    permissions
}

// groups is the consumer-groups page: the (group, queue) pairs with their lag, and the
// partitions behind (of one group when one is chosen), a page of each.
func (h *Handler) groups(ctx context.Context, rq *request) (string, any, error) {
	if h.svc.Groups == nil {
		return "unavailable", unavailable{"consumer groups"}, nil
	}
	d := groupsData{Group: rq.str("group"), Queue: rq.str("queue"), Sort: rq.oneOf("sort", "name", "name", "lag"),
		Now: h.opts.Now(), May: rq.may}
	offset, poffset := rq.offset(maxScan), 0
	if v := rq.q.Get("poffset"); v != "" {
		p := &request{q: url.Values{"offset": {v}}}
		poffset = p.offset(1 << 30)
		if p.err != nil {
			rq.fail("poffset", "poffset must be a whole number, got %q", v)
		}
	}
	if rq.err != nil {
		return "", nil, rq.err
	}
	pairs, truncated, err := h.allGroups(ctx)
	if err != nil {
		return "", nil, err
	}
	d.Truncated = truncated
	pairs = slices.DeleteFunc(pairs, func(g admin.GroupSummary) bool {
		return d.Group != "" && g.Name != d.Group || d.Queue != "" && g.Queue != d.Queue
	})
	if d.Sort == "lag" {
		slices.SortStableFunc(pairs, func(a, b admin.GroupSummary) int {
			return cmp.Or(cmp.Compare(b.MaxTimeLag, a.MaxTimeLag), cmp.Compare(b.TotalLag, a.TotalLag))
		})
	}
	q := url.Values{}
	for k, v := range map[string]string{"group": d.Group, "queue": d.Queue} {
		if v != "" {
			q.Set(k, v)
		}
	}
	pq := cloneValues(q)
	if d.Sort != "name" {
		pq.Set("sort", d.Sort)
	}
	end := min(offset+rq.size, len(pairs))
	if offset < end {
		d.Pairs = pairs[offset:end]
	}
	if poffset > 0 {
		pq.Set("poffset", itoa(poffset))
	}
	d.PairsPager = newPager("/ui/groups", pq, offset, rq.size, len(d.Pairs), end < len(pairs), int64(len(pairs)))
	if d.Group != "" {
		err = h.groupPartitions(ctx, rq, &d, q, offset, poffset)
	} else {
		err = h.laggingPartitions(ctx, rq, &d, q, offset, poffset)
	}
	if err != nil {
		return "", nil, err
	}
	return "groups", d, nil
}

// groupPartitions pages the partitions of the chosen group (of the chosen queue only,
// when one is: the page is of the group's partitions, filtered after).
func (h *Handler) groupPartitions(ctx context.Context, rq *request, d *groupsData, q url.Values, offset, poffset int) error {
	limit := rq.size
	qs, err := h.svc.Groups.Describe(ctx, h.opts.Tenant, d.Group, admin.GroupPageQuery{Limit: &limit, Offset: &poffset})
	if err != nil {
		return err
	}
	n := 0
	for _, gq := range qs {
		for _, p := range gq.Partitions {
			n++
			if d.Queue != "" && gq.Queue != d.Queue {
				continue
			}
			d.Partitions = append(d.Partitions, partitionRow{Group: d.Group, Queue: gq.Queue, Partition: p.Partition,
				OffsetLag: p.OffsetLag, TimeLag: p.TimeLag, LastConsumedAt: p.LastConsumedAt, Worker: p.WorkerID})
		}
	}
	d.PartitionsPager = partitionsPager(q, offset, poffset, rq.size, n, n == limit, -1)
	d.PartitionsPager.Shown = len(d.Partitions)
	return nil
}

// laggingPartitions pages the partitions of every group with something to read.
func (h *Handler) laggingPartitions(ctx context.Context, rq *request, d *groupsData, q url.Values, offset, poffset int) error {
	zero, limit := 0, maxLagging
	rows, err := h.svc.Groups.Lagging(ctx, h.opts.Tenant, admin.LaggingQuery{MinLagSeconds: &zero, Limit: &limit})
	if err != nil {
		return err
	}
	d.Lagging, d.LaggingCapped = true, len(rows) >= maxLagging
	all := make([]partitionRow, 0, len(rows))
	for _, r := range rows {
		if d.Queue != "" && r.Queue != d.Queue {
			continue
		}
		all = append(all, partitionRow{Group: r.Group, Queue: r.Queue, Partition: r.Partition, OffsetLag: r.OffsetLag,
			TimeLag: r.TimeLag, LastConsumedAt: r.LastConsumedAt, Worker: r.WorkerID})
	}
	end := min(poffset+rq.size, len(all))
	if poffset < end {
		d.Partitions = all[poffset:end]
	}
	d.PartitionsPager = partitionsPager(q, offset, poffset, rq.size, len(d.Partitions), end < len(all), int64(len(all)))
	return nil
}

// partitionsPager pages the partitions table with its own offset (poffset), keeping the
// pairs table's.
func partitionsPager(q url.Values, offset, poffset, size, shown int, more bool, total int64) pager {
	q = cloneValues(q)
	if offset > 0 {
		q.Set("offset", itoa(offset))
	}
	p := pager{Offset: poffset, Shown: shown, Total: total}
	if poffset > 0 {
		p.Prev = link("/ui/groups", q, "poffset", itoa(max(poffset-size, 0)))
	}
	if more {
		p.Next = link("/ui/groups", q, "poffset", itoa(poffset+size))
	}
	return p
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
