package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// api is a plain JSON client of one broker for the targeted scenarios (the load uses
// bench/load's client).
type api struct {
	t    testing.TB
	base string
	c    *http.Client
}

// setup starts a broker on a fresh database (env on top of startBroker's) and returns
// the database's URL, the broker and a client of it: the start of every targeted
// scenario.
func setup(t testing.TB, env map[string]string) (string, *brokerProc, *api) {
	t.Helper()
	db := pg.newDatabase(t)
	b := startBroker(t, db, env)
	return db, b, newAPI(t, b)
}

func newAPI(t testing.TB, b *brokerProc) *api {
	c := &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return &api{t: t, base: b.URL, c: c}
}

// call sends body (nil: none) as JSON and decodes the answer into out (nil: ignored);
// it returns the status. A transport error fails the test.
func (a *api) call(method, path string, body, out any) int {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.c.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			a.t.Fatalf("%s %s: answer %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// pushResult is one item of a push answer.
type pushResult struct {
	Status    string `json:"status"`
	MessageID string `json:"message_id"`
	Error     string `json:"error"`
}

// pushItem is one push item.
type pushItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition,omitempty"`
	TransactionID string          `json:"transactionId,omitempty"`
	Payload       json.RawMessage `json:"payload"`
}

// push pushes items and returns the per-item results; anything but 201 fails the test.
func (a *api) push(items ...pushItem) []pushResult {
	a.t.Helper()
	var out []pushResult
	if code := a.call(http.MethodPost, "/api/v1/push", map[string]any{"items": items}, &out); code != http.StatusCreated {
		a.t.Fatalf("push: status %d", code)
	}
	if len(out) != len(items) {
		a.t.Fatalf("push: %d results for %d items", len(out), len(items))
	}
	return out
}

// item is a push item of queue/partition with transaction id txn and a small payload.
func item(queue, partition, txn string) pushItem {
	return pushItem{Queue: queue, Partition: partition, TransactionID: txn, Payload: json.RawMessage(fmt.Sprintf(`{"txn":%q}`, txn))}
}

// configure sets queue options.
func (a *api) configure(queue string, options map[string]any) {
	a.t.Helper()
	if code := a.call(http.MethodPost, "/api/v1/configure", map[string]any{"queue": queue, "options": options}, nil); code != http.StatusOK {
		a.t.Fatalf("configure %s: status %d", queue, code)
	}
}

// popped is a pop answer.
type popped struct {
	LeaseID  string `json:"leaseId"`
	Messages []struct {
		ID              string          `json:"id"`
		TransactionID   string          `json:"transactionId"`
		PartitionID     string          `json:"partitionId"`
		Partition       string          `json:"partition"`
		LeaseID         string          `json:"leaseId"`
		Data            json.RawMessage `json:"data"`
		DeliveryAttempt int             `json:"deliveryAttempt"`
	} `json:"messages"`
}

// pop pops with the query (path after /api/v1/pop/queue/); nil on 204.
func (a *api) pop(path string) *popped {
	a.t.Helper()
	var p popped
	switch code := a.call(http.MethodGet, "/api/v1/pop/queue/"+path, nil, &p); code {
	case http.StatusOK:
		return &p
	case http.StatusNoContent:
		return nil
	default:
		a.t.Fatalf("pop %s: status %d", path, code)
		return nil
	}
}

// ackResult is one item of an ack answer.
type ackResult struct {
	Success bool    `json:"success"`
	Error   *string `json:"error"`
	DLQ     bool    `json:"dlq"`
}

// ack acknowledges the messages of p (leaseID overrides the lease when not "") with
// status and error text, in one batch call.
func (a *api) ack(group string, p *popped, leaseID, status, errText string) []ackResult {
	a.t.Helper()
	items := make([]map[string]any, len(p.Messages))
	for i, m := range p.Messages {
		lease := m.LeaseID
		if leaseID != "" {
			lease = leaseID
		}
		items[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": lease,
			"status": status, "error": errText}
	}
	var out []ackResult
	if code := a.call(http.MethodPost, "/api/v1/ack/batch", map[string]any{"consumerGroup": group, "acknowledgments": items}, &out); code != http.StatusOK {
		a.t.Fatalf("ack: status %d", code)
	}
	return out
}
