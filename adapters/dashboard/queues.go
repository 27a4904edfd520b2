package dashboard

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// maxScan bounds the rows a sorted or filtered table reads to sort or filter them (the
// listings come a page of at most the admin use cases' MaxLimit at a time): a tenant
// with more queues or (group, queue) pairs shows the first maxScan, and says so.
const maxScan = 10_000

// allQueues reads the tenant's queues in name order, at most maxScan; truncated says
// there were more.
func (h *Handler) allQueues(ctx context.Context) (out []admin.QueueSummary, truncated bool, err error) {
	for {
		limit := min(maxScan-len(out), 1000)
		l, err := h.svc.Resources.Queues(ctx, h.opts.Tenant, admin.QueueQuery{Page: admin.PageQuery{Limit: &limit, Offset: len(out)}})
		if err != nil {
			return nil, false, err
		}
		out = append(out, l.Queues...)
		if len(l.Queues) == 0 || int64(len(out)) >= l.Matching {
			return out, false, nil
		}
		if len(out) >= maxScan {
			return out, true, nil
		}
	}
}

// allGroups reads the tenant's (group, queue) pairs in name order, at most maxScan.
func (h *Handler) allGroups(ctx context.Context) (out []admin.GroupSummary, truncated bool, err error) {
	for {
		limit, offset := min(maxScan-len(out), 1000), len(out)
		page, err := h.svc.Groups.List(ctx, h.opts.Tenant, admin.GroupPageQuery{Limit: &limit, Offset: &offset})
		if err != nil {
			return nil, false, err
		}
		out = append(out, page...)
		if len(page) < limit {
			return out, false, nil
		}
		if len(out) >= maxScan {
			return out, true, nil
		}
	}
}

// queueLags is the largest time lag of any group on each queue (no entry: no group).
func queueLags(groups []admin.GroupSummary) map[string]time.Duration {
	out := make(map[string]time.Duration)
	for _, g := range groups {
		out[g.Queue] = max(out[g.Queue], g.MaxTimeLag)
	}
	return out
}

// queueRow is one row of the queues table.
type queueRow struct {
	admin.QueueSummary
	Lag    time.Duration
	HasLag bool // some group reads the queue
	Href   string
	// PushRate and PopRate are messages per second over the last hour.
	PushRate, PopRate float64
}

// sortLink is one sortable column's header link.
type sortLink struct {
	Key, Label, Href string
	Current          bool
	Dir              string // "ascending" or "descending" when Current (aria-sort)
}

type queuesData struct {
	Rows      []queueRow
	Sorts     []sortLink
	Pager     pager
	Truncated bool
	Rates     bool // the rate columns are known (the metrics history)
	May       permissions
}

// queueSorts are the sortable columns of the queues table with their orders.
var queueSorts = []struct {
	key, label string
	less       func(a, b queueRow) int
}{
	{"name", "Queue", func(a, b queueRow) int { return cmp.Compare(a.Name, b.Name) }},
	{"partitions", "Partitions", func(a, b queueRow) int { return cmp.Compare(a.Partitions, b.Partitions) }},
	{"total", "Messages", func(a, b queueRow) int { return cmp.Compare(a.Messages.Total, b.Messages.Total) }},
	{"backlog", "Backlog", func(a, b queueRow) int { return cmp.Compare(a.Messages.Pending, b.Messages.Pending) }},
	{"processing", "Processing", func(a, b queueRow) int { return cmp.Compare(a.Messages.Processing, b.Messages.Processing) }},
	{"dlq", "Dead letters", func(a, b queueRow) int { return cmp.Compare(a.Messages.DeadLetter, b.Messages.DeadLetter) }},
	{"lag", "Time lag", func(a, b queueRow) int { return cmp.Compare(a.Lag, b.Lag) }},
	{"push", "Pushed/s", func(a, b queueRow) int { return cmp.Compare(a.PushRate, b.PushRate) }},
	{"pop", "Popped/s", func(a, b queueRow) int { return cmp.Compare(a.PopRate, b.PopRate) }},
}

// queueList is the queues table: every queue, sorted by any column, a page at a time.
func (h *Handler) queueList(ctx context.Context, rq *request) (string, any, error) {
	if h.svc.Resources == nil || h.svc.Groups == nil {
		return "unavailable", unavailable{"queue listings"}, nil
	}
	keys := make([]string, len(queueSorts))
	for i, s := range queueSorts {
		keys[i] = s.key
	}
	sortKey := rq.oneOf("sort", "name", keys...)
	defDir := "desc"
	if sortKey == "name" {
		defDir = "asc"
	}
	dir := rq.oneOf("dir", defDir, "asc", "desc")
	offset := rq.offset(maxScan)
	if rq.err != nil {
		return "", nil, rq.err
	}
	qs, truncated, err := h.allQueues(ctx)
	if err != nil {
		return "", nil, err
	}
	groups, gTrunc, err := h.allGroups(ctx)
	if err != nil {
		return "", nil, err
	}
	rates, err := h.queueRates(ctx)
	if err != nil {
		return "", nil, err
	}
	lags := queueLags(groups)
	rows := make([]queueRow, len(qs))
	for i, q := range qs {
		lag, ok := lags[q.Name]
		r := rates[q.Name]
		rows[i] = queueRow{QueueSummary: q, Lag: lag, HasLag: ok, Href: queuePath(q.Name), PushRate: r.PushPerSecond,
			PopRate: r.PopPerSecond}
	}
	for _, s := range queueSorts {
		if s.key == sortKey {
			slices.SortStableFunc(rows, func(a, b queueRow) int {
				if dir == "desc" {
					return s.less(b, a)
				}
				return s.less(a, b)
			})
		}
	}
	d := queuesData{Truncated: truncated || gTrunc, Rates: rates != nil, May: rq.may}
	end := min(offset+rq.size, len(rows))
	if offset < end {
		d.Rows = rows[offset:end]
	}
	q := url.Values{"sort": {sortKey}, "dir": {dir}}
	d.Pager = newPager("/ui/queues", q, offset, rq.size, len(d.Rows), end < len(rows), int64(len(rows)))
	d.Sorts = queueSortLinks(sortKey, dir, d.Rates)
	return "queues", d, nil
}

// queueSortLinks are the queues table's column heading links: the current column's
// reverses its order, the others sort by themselves (numbers largest first).
func queueSortLinks(sortKey, dir string, rates bool) []sortLink {
	var out []sortLink
	for _, s := range queueSorts {
		if !rates && (s.key == "push" || s.key == "pop") {
			continue
		}
		l := sortLink{Key: s.key, Label: s.label}
		next := "desc"
		if s.key == "name" {
			next = "asc"
		}
		if s.key == sortKey {
			l.Current = true
			l.Dir = map[string]string{"asc": "ascending", "desc": "descending"}[dir]
			next = map[string]string{"asc": "desc", "desc": "asc"}[dir]
		}
		l.Href = link("/ui/queues", nil, "sort", s.key, "dir", next)
		out = append(out, l)
	}
	return out
}

// option is one configuration entry of a queue page.
type option struct{ Name, Value string }

type queueData struct {
	Name           string
	Detail         admin.QueueDetail
	Options        []option
	Pager          pager
	Groups         []admin.GroupSummary
	GroupsTrunc    bool
	Charts         []Chart
	Ranges         []rangeLink
	Messages, DLQs string // links to the queue's messages and dead letters
	May            permissions
}

// queue is one queue's page: configuration, totals, charts, a page of partitions, its
// groups.
func (h *Handler) queue(ctx context.Context, rq *request) (string, any, error) {
	if h.svc.Resources == nil || h.svc.Groups == nil {
		return "unavailable", unavailable{"queue details"}, nil
	}
	name := rq.str("name")
	if name == "" && rq.err == nil {
		rq.fail("name", "name (the queue) is required")
	}
	offset := rq.offset(1 << 30)
	rng := rq.oneOf("range", "1h", rangeKeys...)
	if rq.err != nil {
		return "", nil, rq.err
	}
	size := rq.size
	d, err := h.svc.Resources.Queue(ctx, h.opts.Tenant, name, admin.PageQuery{Limit: &size, Offset: offset})
	if err != nil {
		return "", nil, err
	}
	groups, trunc, err := h.allGroups(ctx)
	if err != nil {
		return "", nil, err
	}
	out := queueData{Name: name, Detail: d, GroupsTrunc: trunc, May: rq.may,
		Messages: link("/ui/messages", nil, "queue", name), DLQs: link("/ui/dlq", nil, "queue", name)}
	for _, g := range groups {
		if g.Queue == name {
			out.Groups = append(out.Groups, g)
		}
	}
	out.Options = queueOptions(d.Config)
	q := url.Values{"range": {rng}}
	out.Pager = newPager(queuePath(name), q, offset, size, len(d.Page), int64(offset+len(d.Page)) < d.Partitions, d.Partitions)
	out.Ranges = rangeLinks(queuePath(name), q, rng)
	if out.Charts, err = h.charts(ctx, name, ranges[rng], d.Totals.Pending, nil); err != nil {
		return "", nil, err
	}
	return "queue", out, nil
}

// queueOptions lists a queue's configuration under the options' wire names, in their
// order (docs/api.md §5.6).
func queueOptions(c ports.QueueConfig) []option {
	out := []option{{"namespace", c.Namespace}, {"task", c.Task}}
	b, err := json.Marshal(c.QueueOptions)
	if err != nil {
		return out
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return out
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return out
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return out
		}
		out = append(out, option{Name: fmt.Sprint(k), Value: fmt.Sprint(v)})
	}
	return out
}
