package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// txnResp is the answer of POST /api/v1/transaction (api.md §5.4).
type txnResp struct {
	TransactionID string `json:"transactionId"`
	Success       bool   `json:"success"`
	Error         string `json:"error"`
	Reason        string `json:"reason"`
	Results       []struct {
		Index         int     `json:"index"`
		Type          string  `json:"type"`
		Success       bool    `json:"success"`
		TransactionID string  `json:"transactionId"`
		Error         *string `json:"error"`
		DLQ           *bool   `json:"dlq"`
		MessageID     string  `json:"messageId"`
		QueueName     string  `json:"queueName"`
		Duplicate     bool    `json:"duplicate"`
	} `json:"results"`
}

func (b *broker) txn(t *testing.T, body any) (int, txnResp) {
	t.Helper()
	code, raw := b.post(t, "/api/v1/transaction", mustJSON(t, body))
	var out txnResp
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("transaction response %s: %v", raw, err)
	}
	if out.TransactionID == "" {
		t.Fatalf("transaction response without transactionId: %s", raw)
	}
	return code, out
}

// popOne pops one message of queue (queue mode) and fails when there is none.
func (b *broker) popOne(t *testing.T, queue string) popMsg {
	t.Helper()
	p := b.pop(t, "/api/v1/pop/queue/"+queue+"?batch=1")
	if p == nil || len(p.Messages) != 1 {
		t.Fatalf("pop %s: %+v", queue, p)
	}
	return p.Messages[0]
}

func TestTransactionCommitsPushesAndAcksTogether(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.push(t, map[string]any{"queue": "tx-in", "payload": map[string]any{"n": 1}, "transactionId": "in-1"})
	in := b.popOne(t, "tx-in")
	const trace = "0191d7a2-0000-7000-8000-000000000001"
	code, r := b.txn(t, map[string]any{"operations": []any{
		map[string]any{"type": "ack", "transactionId": "in-1", "partitionId": in.PartitionID, "leaseId": in.LeaseID},
		map[string]any{"type": "push", "items": []any{
			map[string]any{"queue": "tx-out", "partition": "p2", "payload": map[string]any{"x": 1}, "transactionId": "out-1", "traceId": trace},
			map[string]any{"queue": "tx-out", "partition": "p2", "payload": map[string]any{"x": 2}, "transactionId": "out-1"},
		}},
		map[string]any{"type": "push", "queue": "tx-out", "data": map[string]any{"flat": true}, "traceId": "not-a-uuid"},
	}, "requiredLeases": []string{in.LeaseID}})
	if code != http.StatusOK || !r.Success || len(r.Results) != 4 {
		t.Fatalf("transaction: %d %+v", code, r)
	}
	if x := r.Results[0]; x.Type != "ack" || !x.Success || x.TransactionID != "in-1" || x.DLQ == nil || *x.DLQ {
		t.Fatalf("ack result: %+v", x)
	}
	if x := r.Results[1]; x.Type != "push" || !x.Success || x.TransactionID != "out-1" || x.QueueName != "tx-out" || x.Duplicate || x.MessageID == "" {
		t.Fatalf("push result: %+v", x)
	}
	if x := r.Results[2]; !x.Duplicate || x.MessageID != r.Results[1].MessageID {
		t.Fatalf("in-transaction duplicate: %+v (first %+v)", x, r.Results[1])
	}
	if b.pop(t, "/api/v1/pop/queue/tx-in?batch=1") != nil {
		t.Fatal("acked input delivered again")
	}
	got := b.popOne(t, "tx-out/partition/p2")
	if got.TransactionID != "out-1" || got.TraceID == nil || *got.TraceID != trace || string(got.Data) != `{"x":1}` {
		t.Fatalf("pushed message: %+v", got)
	}
	flat := b.popOne(t, "tx-out/partition/Default")
	if flat.TraceID != nil || string(flat.Data) != `{"flat":true}` || flat.ID != r.Results[3].MessageID {
		t.Fatalf("flat push: %+v", flat)
	}
}

func TestTransactionRollsBack(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.push(t, map[string]any{"queue": "rb-in", "payload": 1, "transactionId": "known"})
	in := b.popOne(t, "rb-in")
	b.push(t, map[string]any{"queue": "rb-dup", "payload": 1, "transactionId": "taken"})
	pushOut := map[string]any{"type": "push", "items": []any{map[string]any{"queue": "rb-out", "payload": 1}}}
	tests := []struct {
		name   string
		ops    []any
		leases []string
		reason string
		text   string
	}{
		{"unknown transactionId", []any{pushOut,
			map[string]any{"type": "ack", "transactionId": "never-pushed", "partitionId": in.PartitionID}}, nil, "ack_rejected", "QTXN"},
		{"stale lease", []any{pushOut,
			map[string]any{"type": "ack", "transactionId": "known", "partitionId": in.PartitionID,
				"leaseId": "0191d7a2-0000-7000-8000-0000000000ff"}}, nil, "ack_rejected", "lease"},
		{"cross-request duplicate", []any{pushOut,
			map[string]any{"type": "push", "queue": "rb-dup", "payload": 2, "transactionId": "taken"}}, nil, "duplicate", "QDUP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, r := b.txn(t, map[string]any{"operations": tt.ops, "requiredLeases": tt.leases})
			if code != http.StatusOK || r.Success || len(r.Results) != 0 || r.Reason != tt.reason || !strings.Contains(r.Error, tt.text) {
				t.Fatalf("got %d %+v, want a rollback (%s, %q)", code, r, tt.reason, tt.text)
			}
			if p := b.pop(t, "/api/v1/pop/queue/rb-out?batch=10"); p != nil {
				t.Fatalf("a rolled-back push was delivered: %+v", p)
			}
		})
	}
	// The input is still leased and unacked: its ack still works with its lease.
	res := b.ackBatch(t, "", map[string]any{"transactionId": "known", "partitionId": in.PartitionID, "leaseId": in.LeaseID})
	if !res[0].Success {
		t.Fatalf("ack after rollbacks: %+v", res[0])
	}
}

func TestTransactionBadRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{`, "bad body"},
		{"no operations", `{}`, "transaction requires an operations array"},
		{"unknown type", `{"operations":[{"type":"kv"}]}`, "segments transaction supports only push and ack operations"},
		{"push without queue", `{"operations":[{"type":"push","items":[{"payload":1}]}]}`, "missing field `queue`"},
		{"bad queue name", `{"operations":[{"type":"push","queue":"a\u0001b","payload":1}]}`, "queue"},
		{"empty partition", `{"operations":[{"type":"push","queue":"q","partition":"","payload":1}]}`, "partition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, raw := b.postBad(t, "/api/v1/transaction", tt.body)
			var r txnResp
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			if code != http.StatusBadRequest || r.Success || !strings.Contains(r.Error, tt.want) || r.Results == nil {
				t.Fatalf("got %d %s, want 400 mentioning %q", code, raw, tt.want)
			}
		})
	}
}
