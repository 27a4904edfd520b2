package load

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Item is one message to push.
type Item struct {
	Queue, Partition, TransactionID string
	Payload                         []byte // raw JSON
}

// StatusError is a broker answer with an unexpected status.
type StatusError struct {
	Op   string
	Code int
	Body string
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: status %d: %s", e.Op, e.Code, e.Body) }

func statusErr(op string, code int, body []byte) error {
	if len(body) > 200 {
		body = body[:200]
	}
	return &StatusError{Op: op, Code: code, Body: string(body)}
}

// Push posts items and returns how many the broker did not accept (status other than
// queued, duplicate or buffered) and how many of the accepted ones it spooled
// (buffered: on disk, replayed later), reading only the status fields of the answer.
func (c *Client) Push(items []Item) (notStored, buffered int, err error) {
	statuses, err := c.PushStatuses(items)
	if err != nil {
		return len(items), 0, err
	}
	for _, st := range statuses {
		switch st {
		case "queued", "duplicate":
		case "buffered":
			buffered++
		default:
			notStored++
		}
	}
	return notStored, buffered, nil
}

// PushStatuses posts items and returns each item's status in the broker's answer
// (queued, duplicate, buffered, failed, ...), in item order: what a producer's ledger
// records.
func (c *Client) PushStatuses(items []Item) ([]string, error) {
	body := make([]byte, 0, 64+len(items)*96)
	body = append(body, `{"items":[`...)
	for i, it := range items {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, `{"queue":`...)
		body = appendQuoted(body, it.Queue)
		body = append(body, `,"partition":`...)
		body = appendQuoted(body, it.Partition)
		if it.TransactionID != "" {
			body = append(body, `,"transactionId":`...)
			body = appendQuoted(body, it.TransactionID)
		}
		body = append(body, `,"payload":`...)
		body = append(body, it.Payload...)
		body = append(body, '}')
	}
	body = append(body, "]}"...)
	code, resp, err := c.Do("POST", "/api/v1/push", body)
	if err != nil {
		return nil, err
	}
	if code != 201 {
		return nil, statusErr("push", code, resp)
	}
	var rs []struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(resp, &rs); err != nil {
		return nil, fmt.Errorf("push: answer: %w", err)
	}
	if len(rs) != len(items) {
		return nil, fmt.Errorf("push: %d results for %d items", len(rs), len(items))
	}
	statuses := make([]string, len(rs))
	for i, r := range rs {
		statuses[i] = r.Status
	}
	return statuses, nil
}

// Message is one popped message (the fields the tool needs).
type Message struct {
	ID              string          `json:"id"`
	TransactionID   string          `json:"transactionId"`
	PartitionID     string          `json:"partitionId"`
	Partition       string          `json:"partition"`
	LeaseID         string          `json:"leaseId"`
	ConsumerGroup   string          `json:"consumerGroup"`
	Data            json.RawMessage `json:"data"`
	DeliveryAttempt int             `json:"deliveryAttempt"`
}

// Batch is a 200 pop answer.
type Batch struct {
	LeaseID       string    `json:"leaseId"`
	ConsumerGroup string    `json:"consumerGroup"`
	Messages      []Message `json:"messages"`
}

// PopParams are a pop's query parameters.
type PopParams struct {
	Queue, Partition string // Partition "" = wildcard
	Group            string // "" = queue mode
	Batch            int
	Partitions       int
	Wait             bool
	TimeoutMS        int
	AutoAck          bool
	SubscriptionMode string
}

// Path renders the pop route and query.
func (p PopParams) Path() string {
	path := "/api/v1/pop/queue/" + url.PathEscape(p.Queue)
	if p.Partition != "" {
		path += "/partition/" + url.PathEscape(p.Partition)
	}
	q := url.Values{}
	q.Set("batch", strconv.Itoa(max(p.Batch, 1)))
	if p.Partitions > 1 {
		q.Set("partitions", strconv.Itoa(p.Partitions))
	}
	q.Set("wait", strconv.FormatBool(p.Wait))
	if p.Wait {
		q.Set("timeout", strconv.Itoa(p.TimeoutMS))
	}
	if p.Group != "" {
		q.Set("consumerGroup", p.Group)
	}
	if p.AutoAck {
		q.Set("autoAck", "true")
	}
	if p.SubscriptionMode != "" {
		q.Set("subscriptionMode", p.SubscriptionMode)
	}
	return path + "?" + q.Encode()
}

// Pop claims messages; nil when the broker answered 204.
func (c *Client) Pop(path string) (*Batch, error) {
	code, resp, err := c.Do("GET", path, nil)
	if err != nil {
		return nil, err
	}
	switch code {
	case 204:
		return nil, nil
	case 200:
	default:
		return nil, statusErr("pop", code, resp)
	}
	var b Batch
	if scanBatch(resp, &b) {
		return &b, nil
	}
	b = Batch{}
	if err := json.Unmarshal(resp, &b); err != nil {
		return nil, fmt.Errorf("pop: answer: %w", err)
	}
	return &b, nil
}

// Ack acknowledges every message of b with status ("completed" when empty) except
// those in failed (by index), acked "failed". It returns how many items the broker
// refused.
func (c *Client) Ack(b *Batch, status string, failed map[int]bool) (refused int, err error) {
	if status == "" {
		status = "completed"
	}
	body := make([]byte, 0, 64+len(b.Messages)*160)
	body = append(body, `{"consumerGroup":`...)
	body = appendQuoted(body, b.ConsumerGroup)
	body = append(body, `,"acknowledgments":[`...)
	for i, m := range b.Messages {
		if i > 0 {
			body = append(body, ',')
		}
		st := status
		if failed[i] {
			st = "failed"
		}
		body = append(body, `{"transactionId":`...)
		body = appendQuoted(body, m.TransactionID)
		body = append(body, `,"partitionId":`...)
		body = appendQuoted(body, m.PartitionID)
		body = append(body, `,"leaseId":`...)
		body = appendQuoted(body, m.LeaseID)
		body = append(body, `,"status":`...)
		body = appendQuoted(body, st)
		body = append(body, '}')
	}
	body = append(body, "]}"...)
	code, resp, err := c.Do("POST", "/api/v1/ack/batch", body)
	if err != nil {
		return len(b.Messages), err
	}
	if code != 200 {
		return len(b.Messages), statusErr("ack", code, resp)
	}
	if refused, ok := scanAckRefused(resp); ok {
		return refused, nil
	}
	var rs []struct {
		Success bool `json:"success"`
	}
	if err := json.Unmarshal(resp, &rs); err != nil {
		return len(b.Messages), fmt.Errorf("ack: answer: %w", err)
	}
	for _, r := range rs {
		if !r.Success {
			refused++
		}
	}
	return refused, nil
}

// Configure sets queue options (POST /api/v1/configure).
func (c *Client) Configure(queue string, options map[string]any) error {
	body, err := json.Marshal(map[string]any{"queue": queue, "options": options})
	if err != nil {
		return err
	}
	code, resp, err := c.Do("POST", "/api/v1/configure", body)
	if err != nil {
		return err
	}
	if code != 200 {
		return statusErr("configure", code, resp)
	}
	return nil
}

// Scrape reads one unlabelled sample from GET /metrics/prometheus; ok is false when the
// broker does not expose it (not every Queen-compatible broker does).
func (c *Client) Scrape(name string) (v float64, ok bool) {
	code, body, err := c.Do("GET", "/metrics/prometheus", nil)
	if err != nil || code != 200 {
		return 0, false
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		rest, found := strings.CutPrefix(line, name+" ")
		if !found {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil && v >= 0
	}
	return 0, false
}
