package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

// txnResp is the answer of POST /api/v1/transaction (docs/api.md §5.4).
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
		// An ack that cannot name a message is refused like a push that cannot be stored
		// (400), not answered as a rollback (200).
		{"ack partitionId not a UUID", `{"operations":[{"type":"ack","transactionId":"t","partitionId":"p1"}]}`, "partitionId is not a UUID"},
		{"ack without transactionId", `{"operations":[{"type":"ack","partitionId":"0198e4c1-0000-7000-8000-000000000001"}]}`, "transactionId is required"},
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

// wakeBound is how soon a parked pop must hear of an ack that made its partition
// claimable again: far below the re-check interval and the hot-list's reseed floor set
// below, so only a wake-up can meet it.
const wakeBound = time.Second

// TestTransactionAckWakesParkedPop: an ack made through /api/v1/transaction makes what
// it changed known as one made through /api/v1/ack does (core/consume Applied): the
// hot-list hears of the lease it released, and a message it moved to the dead-letter
// queue is announced. Either wakes a long poll parked on the partition within
// wakeBound; without them it would learn only at its next re-check (30 s here) or the
// reseed (60 s). Each case runs through both routes.
func TestTransactionAckWakesParkedPop(t *testing.T) {
	t.Parallel()
	slow := map[string]string{"POP_WAIT_INITIAL_INTERVAL_MS": "30000", "POP_WAIT_MAX_INTERVAL_MS": "30000",
		"QUEEN_HOTLIST_RESEED_MS": "60000"}
	noHotlist := maps.Clone(slow)
	noHotlist["QUEEN_HOTLIST"] = "false"
	tests := []struct {
		name   string
		env    map[string]string
		status string
		// The partition holds messages 0 .. n-1; 0 is leased when the pop parks, and the
		// parked pop must get want.
		n    int
		want string
	}{
		// Failed: the message is available again; the released lease is the only news.
		{name: "failed releases the lease (hot-list)", env: slow, status: "failed", n: 1, want: "w-0"},
		// Dead-lettered: its successor is claimable; without the hot-list the
		// announcement is the only news.
		{name: "dlq is announced (no hot-list)", env: noHotlist, status: "dlq", n: 2, want: "w-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := startBroker(t, tt.env)
			for _, route := range []string{"ack", "transaction"} {
				t.Run(route, func(t *testing.T) {
					queue := "tw-" + route
					b.pushN(t, queue, "Default", "w", tt.n)
					leased := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1&leaseSeconds=300").Messages[0]
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					done := b.startPop(ctx, "/api/v1/pop/queue/"+queue+"?batch=1&wait=true&timeout=30000")
					eventually(t, 10*time.Second, "the pop to park", func() bool { return b.metric(t, "queen_pop_parked") == 1 })
					acked := time.Now()
					b.ackVia(t, route, ackItemOf(leased, tt.status))
					var r popAnswer
					select {
					case r = <-done:
					case <-time.After(wakeBound):
						t.Fatalf("the parked pop did not answer within %v of the %s", wakeBound, route)
					}
					p, err := decodePop(r.code, r.body)
					if r.err != nil || err != nil || p == nil {
						t.Fatalf("parked pop: %d %s %v %v", r.code, r.body, r.err, err)
					}
					wantTxns(t, p, tt.want)
					t.Logf("woken %v after the %s", r.at.Sub(acked), route)
					b.ackAll(t, p, "")
				})
			}
		})
	}
}

// ackVia acknowledges item through /api/v1/ack/batch or as the one operation of a
// /api/v1/transaction, and wants it applied.
func (b *broker) ackVia(t *testing.T, route string, item map[string]any) {
	t.Helper()
	if route == "ack" {
		if res := b.ackBatch(t, "", item); !res[0].Success || !res[0].LeaseReleased {
			t.Fatalf("ack: %+v", res[0])
		}
		return
	}
	op := maps.Clone(item)
	op["type"] = "ack"
	code, r := b.txn(t, map[string]any{"operations": []any{op}})
	if code != http.StatusOK || !r.Success || len(r.Results) != 1 || !r.Results[0].Success {
		t.Fatalf("transaction: %d %+v", code, r)
	}
}
