package queen

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// popResp is a 200 pop answer, decoded strictly by field name (api.md §5.2).
type popResp struct {
	Success           bool     `json:"success"`
	Queue             string   `json:"queue"`
	Partition         string   `json:"partition"`
	PartitionID       string   `json:"partitionId"`
	LeaseID           string   `json:"leaseId"`
	ConsumerGroup     string   `json:"consumerGroup"`
	Messages          []popMsg `json:"messages"`
	PartitionsClaimed int      `json:"partitionsClaimed"`
}

type popMsg struct {
	ID              string          `json:"id"`
	TransactionID   string          `json:"transactionId"`
	TraceID         *string         `json:"traceId"`
	Data            json.RawMessage `json:"data"`
	ProducerSub     *string         `json:"producerSub"`
	CreatedAt       string          `json:"createdAt"`
	PartitionID     string          `json:"partitionId"`
	Partition       string          `json:"partition"`
	LeaseID         string          `json:"leaseId"`
	ConsumerGroup   string          `json:"consumerGroup"`
	DeliveryAttempt int             `json:"deliveryAttempt"`
}

// pop GETs path and returns nil on 204, the decoded body on 200, and fails otherwise.
func (a *testApp) pop(t testing.TB, path string) *popResp {
	t.Helper()
	code, body := a.do(t, http.MethodGet, path, "")
	switch code {
	case http.StatusNoContent:
		if len(body) != 0 {
			t.Fatalf("pop %s: 204 with a body %q", path, body)
		}
		return nil
	case http.StatusOK:
	default:
		t.Fatalf("pop %s: status %d, body %s", path, code, body)
	}
	var out popResp
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("pop response %s: %v", body, err)
	}
	return &out
}

// ackResp is one element of an ack answer (api.md §5.3).
type ackResp struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
	Noop          bool    `json:"noop"`
}

// ackBatch posts {"consumerGroup": group, "acknowledgments": items} and decodes the 200.
func (a *testApp) ackBatch(t testing.TB, group string, items ...map[string]any) []ackResp {
	t.Helper()
	body := map[string]any{"acknowledgments": items}
	if group != "" {
		body["consumerGroup"] = group
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	code, resp := a.do(t, http.MethodPost, "/api/v1/ack/batch", string(b))
	if code != http.StatusOK {
		t.Fatalf("ack: status %d, body %s", code, resp)
	}
	var out []ackResp
	dec := json.NewDecoder(bytes.NewReader(resp))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("ack response %s: %v", resp, err)
	}
	if len(out) != len(items) {
		t.Fatalf("ack: %d results for %d items: %s", len(out), len(items), resp)
	}
	return out
}

// ackAll acknowledges every message of p with status (completed when "").
func (a *testApp) ackAll(t testing.TB, p *popResp, status string) []ackResp {
	t.Helper()
	items := make([]map[string]any, len(p.Messages))
	for i, m := range p.Messages {
		items[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID}
		if status != "" {
			items[i]["status"] = status
		}
	}
	return a.ackBatch(t, p.ConsumerGroup, items...)
}
