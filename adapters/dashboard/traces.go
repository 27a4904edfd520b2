package dashboard

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"time"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/ports"
)

// traceEvent is one event of a timeline.
type traceEvent struct {
	ports.Trace
	Since   time.Duration // after the timeline's first event
	Payload payload
	Message string // the message's page
}

type tracesData struct {
	Name, PartitionID, TransactionID string
	Names                            []ports.TraceName
	Events                           []traceEvent
	Pager                            pager
	// Mode is "names" (the names in use), "name" (the events of one name) or "message"
	// (the events of one message).
	Mode string
}

// traces shows the trace names in use, or the events of one name or of one message as
// a timeline (oldest first).
func (h *Handler) traces(ctx context.Context, rq *request) (string, any, error) {
	if h.svc.Traces == nil {
		return "unavailable", unavailable{"traces"}, nil
	}
	d := tracesData{Name: rq.str("name"), PartitionID: rq.str("partitionId"), TransactionID: rq.str("transactionId")}
	offset := rq.offset(100_000)
	if rq.err != nil {
		return "", nil, rq.err
	}
	var (
		events []ports.Trace
		err    error
	)
	q := url.Values{}
	switch {
	case d.PartitionID != "" || d.TransactionID != "":
		d.Mode = "message"
		events, err = h.svc.Traces.ForMessage(ctx, h.opts.Tenant, d.PartitionID, d.TransactionID)
	case d.Name != "":
		d.Mode = "name"
		q.Set("name", d.Name)
		var page admin.Page
		events, page, err = h.svc.Traces.ByName(ctx, h.opts.Tenant, d.Name, rq.size, offset)
		if err == nil {
			slices.Reverse(events) // newest first from the store; a timeline reads forward
			d.Pager = newPager("/ui/traces", q, offset, rq.size, len(events), int64(offset+len(events)) < page.Total, page.Total)
		}
	default:
		d.Mode = "names"
		var page admin.Page
		d.Names, page, err = h.svc.Traces.Names(ctx, h.opts.Tenant, rq.size, offset)
		if err == nil {
			d.Pager = newPager("/ui/traces", q, offset, rq.size, len(d.Names), int64(offset+len(d.Names)) < page.Total, page.Total)
		}
	}
	if err != nil {
		return "", nil, err
	}
	for i, t := range events {
		e := traceEvent{Trace: t, Payload: showPayload(json.RawMessage(t.Data), rowPayloadBytes),
			Message: messageHref(t.PartitionID, t.TransactionID)}
		if i > 0 {
			e.Since = t.CreatedAt.Sub(events[0].CreatedAt)
		}
		d.Events = append(d.Events, e)
	}
	return "traces", d, nil
}
