package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// Payload sizes shown: a table row shows the start of a payload, the message page the
// whole of any reasonable one.
const (
	rowPayloadBytes    = 2 << 10
	detailPayloadBytes = 256 << 10
)

// payload is a stored payload as the pages show it: indented JSON, cut at limit bytes.
type payload struct {
	Text      string
	Cut       bool // the text is the payload's start
	Available bool // there is something to show
}

func showPayload(raw json.RawMessage, limit int) payload {
	if len(raw) == 0 {
		return payload{}
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		b.Reset()
		b.Write(raw)
	}
	s := b.String()
	if len(s) <= limit {
		return payload{Text: s, Available: true}
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return payload{Text: s[:cut], Cut: true, Available: true}
}

// windows are the spans a message browse looks back over, by their parameter.
var windows = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour,
	"7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

var windowKeys = []string{"1h", "6h", "24h", "7d", "30d"}

// statuses are the browse's status filter values ("" is any).
var statuses = []string{admin.StatusPending, admin.StatusProcessing, admin.StatusCompleted, admin.StatusDeadLetter}

type messageRow struct {
	admin.Message
	Payload payload
	Href    string // the message's page
}

type messagesData struct {
	Queue, Partition, Status, Window string
	Statuses, Windows                []string
	Rows                             []messageRow
	Pager                            pager
	May                              permissions
}

// messages browses messages by queue, partition, status and window, newest first, a
// page at a time; with partitionId and transactionId it shows one message.
func (h *Handler) messages(ctx context.Context, rq *request) (string, any, error) {
	if h.svc.Messages == nil {
		return "unavailable", unavailable{"message browsing"}, nil
	}
	if rq.q.Has("partitionId") || rq.q.Has("transactionId") {
		return h.message(ctx, rq)
	}
	d := messagesData{Queue: rq.str("queue"), Partition: rq.str("partition"),
		Status: rq.oneOf("status", "", statuses...), Window: rq.oneOf("window", "1h", windowKeys...),
		Statuses: statuses, Windows: windowKeys, May: rq.may}
	offset := rq.offset(admin.MaxMessagesOffset)
	if rq.err != nil {
		return "", nil, rq.err
	}
	l, err := h.svc.Messages.List(ctx, h.opts.Tenant, admin.MessageQuery{Queue: d.Queue, Partition: d.Partition,
		Status: d.Status, From: h.opts.Now().Add(-windows[d.Window]), Limit: rq.size + 1, Offset: offset})
	if err != nil {
		return "", nil, err
	}
	more := len(l.Messages) > rq.size
	for _, m := range l.Messages[:min(rq.size, len(l.Messages))] {
		d.Rows = append(d.Rows, messageRow{Message: m, Payload: showPayload(m.Data, rowPayloadBytes),
			Href: messageHref(m.PartitionID, m.TransactionID)})
	}
	q := url.Values{}
	for k, v := range map[string]string{"queue": d.Queue, "partition": d.Partition, "status": d.Status} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if d.Window != "1h" {
		q.Set("window", d.Window)
	}
	d.Pager = newPager("/ui/messages", q, offset, rq.size, len(d.Rows), more, -1)
	return "messages", d, nil
}

func messageHref(partitionID, transactionID string) string {
	return link("/ui/messages", nil, "partitionId", partitionID, "transactionId", transactionID)
}

type messageData struct {
	admin.MessageDetail
	Payload payload
	Traces  string // the message's traces page
	May     permissions
}

// message is one message with its payload and its status in every group.
func (h *Handler) message(ctx context.Context, rq *request) (string, any, error) {
	pid, txn := rq.str("partitionId"), rq.str("transactionId")
	if rq.err != nil {
		return "", nil, rq.err
	}
	m, err := h.svc.Messages.Get(ctx, h.opts.Tenant, pid, txn)
	if err != nil {
		return "", nil, err
	}
	return "message", messageData{MessageDetail: m, Payload: showPayload(m.Data, detailPayloadBytes),
		Traces: link("/ui/traces", nil, "partitionId", pid, "transactionId", txn), May: rq.may}, nil
}

type deadLetterRow struct {
	queues.DeadLetter
	Payload payload
	Href    string // the message's page
}

type deadLettersData struct {
	Queue, Group string
	Rows         []deadLetterRow
	Pager        pager
	May          permissions
}

// deadLetters lists dead letters, newest failure first, by queue and group.
func (h *Handler) deadLetters(ctx context.Context, rq *request) (string, any, error) {
	if h.svc.Queues == nil {
		return "unavailable", unavailable{"dead letters"}, nil
	}
	d := deadLettersData{Queue: rq.str("queue"), Group: rq.str("group"), May: rq.may}
	offset := rq.offset(1 << 30)
	if rq.err != nil {
		return "", nil, rq.err
	}
	page, err := h.svc.Queues.DeadLetters(ctx, h.opts.Tenant, ports.DeadLetterFilter{Queue: d.Queue, ConsumerGroup: d.Group,
		Limit: rq.size + 1, Offset: offset})
	if err != nil {
		return "", nil, err
	}
	more := len(page.Letters) > rq.size
	for _, l := range page.Letters[:min(rq.size, len(page.Letters))] {
		d.Rows = append(d.Rows, deadLetterRow{DeadLetter: l, Payload: showPayload(l.Data, rowPayloadBytes),
			Href: messageHref(l.PartitionID, l.TransactionID)})
	}
	q := url.Values{}
	for k, v := range map[string]string{"queue": d.Queue, "group": d.Group} {
		if v != "" {
			q.Set(k, v)
		}
	}
	d.Pager = newPager("/ui/dlq", q, offset, rq.size, len(d.Rows), more, -1)
	return "dlq", d, nil
}
