package dashboard

import (
	"cmp"
	"context"
	"net/url"
	"slices"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/drain"
)

// topRows is how many queues and groups the overview's top lists show.
const topRows = 10

// rangeLink is one of the time ranges a page offers.
type rangeLink struct {
	Key, Href string
	Current   bool
}

func rangeLinks(path string, q url.Values, current string) []rangeLink {
	out := make([]rangeLink, len(rangeKeys))
	for i, k := range rangeKeys {
		out[i] = rangeLink{Key: k, Href: link(path, q, "range", k, "offset", ""), Current: k == current}
	}
	return out
}

type overviewData struct {
	Overview      admin.SystemOverview
	Ranges        []rangeLink
	Charts        []Chart
	History       bool // the charts come from the metrics history
	TopQueues     []queueRow
	LaggingGroups []admin.GroupSummary
	Truncated     bool // more queues or pairs than maxScan: the top lists are of the first ones
	Spool         *drain.Status
	Brokers       []admin.WorkerSummary // every broker's last minutes (nil: no history)
}

// overview is the tenant at a glance: counts, activity charts over the range, the
// queues with the largest backlog and the groups furthest behind, the spool.
func (h *Handler) overview(ctx context.Context, rq *request) (string, any, error) {
	if h.svc.Resources == nil || h.svc.Groups == nil {
		return "unavailable", unavailable{"the overview"}, nil
	}
	rng := rq.oneOf("range", "1h", rangeKeys...)
	if rq.err != nil {
		return "", nil, rq.err
	}
	o, err := h.svc.Resources.Overview(ctx, h.opts.Tenant)
	if err != nil {
		return "", nil, err
	}
	qs, qTrunc, err := h.allQueues(ctx)
	if err != nil {
		return "", nil, err
	}
	groups, gTrunc, err := h.allGroups(ctx)
	if err != nil {
		return "", nil, err
	}
	brokers, err := h.brokers(ctx, ranges[rng])
	if err != nil {
		return "", nil, err
	}
	charts, err := h.charts(ctx, "", ranges[rng], o.Messages.Pending, brokers)
	if err != nil {
		return "", nil, err
	}
	d := overviewData{Overview: o, Ranges: rangeLinks("/", nil, rng), History: h.svc.Analytics != nil,
		Charts: charts, Truncated: qTrunc || gTrunc}
	if brokers != nil {
		d.Brokers = brokers.Workers
	}
	lags := queueLags(groups)
	slices.SortStableFunc(qs, func(a, b admin.QueueSummary) int { return cmp.Compare(b.Messages.Pending, a.Messages.Pending) })
	for _, q := range qs[:min(topRows, len(qs))] {
		if q.Messages.Pending == 0 {
			break
		}
		lag, ok := lags[q.Name]
		d.TopQueues = append(d.TopQueues, queueRow{QueueSummary: q, Lag: lag, HasLag: ok, Href: queuePath(q.Name)})
	}
	slices.SortStableFunc(groups, func(a, b admin.GroupSummary) int {
		return cmp.Or(cmp.Compare(b.MaxTimeLag, a.MaxTimeLag), cmp.Compare(b.TotalLag, a.TotalLag))
	})
	for _, g := range groups[:min(topRows, len(groups))] {
		if g.TotalLag == 0 {
			break
		}
		d.LaggingGroups = append(d.LaggingGroups, g)
	}
	if h.svc.Spool != nil {
		st := h.svc.Spool()
		d.Spool = &st
	}
	return "overview", d, nil
}
