package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// Acks: implicit prefix acks, explicit signals, the retry budget and dead letters, status
// normalisation, honesty below the cursor, and per-item errors.

const alreadyCommitted = "already committed: the cursor moved past this message before this ack"

// wantCursorAt checks, through acks only, that the group of p's messages has committed
// exactly up to message c of p while p's lease is still held: a completed ack of message c
// without a lease is a no-op (the cursor is there already), and one of message c+1 under
// the lease is not (it moves the cursor). The rest of p is then acked under its lease,
// which releases it.
func (b *broker) wantCursorAt(t testing.TB, p *popResp, c int) {
	t.Helper()
	m := p.Messages[c]
	at := b.ackBatch(t, p.ConsumerGroup, map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID})[0]
	if !at.Success || !at.Noop {
		t.Fatalf("ack of %s, at the cursor: %+v, want a success that changes nothing", m.TransactionID, at)
	}
	last := len(p.Messages) - 1
	next := b.ackBatch(t, p.ConsumerGroup, ackItemOf(p.Messages[c+1], ""))[0]
	if !next.Success || next.Noop || next.LeaseReleased != (c+1 == last) {
		t.Fatalf("ack of %s, after the cursor: %+v, want a success that moves it", p.Messages[c+1].TransactionID, next)
	}
	if c+1 < last {
		if r := b.ackBatch(t, p.ConsumerGroup, ackItemOf(p.Messages[last], ""))[0]; !r.Success || !r.LeaseReleased {
			t.Fatalf("ack of the rest: %+v", r)
		}
	}
}

func TestAckImplicitAndExplicit(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	// Each case pops m-0..m-4 from its own queue, acks the listed items (message index
	// and status) in one call, and checks the answer, where the cursor stands and the
	// next pop.
	type ack struct {
		msg    int
		status string
	}
	tests := []struct {
		name        string
		acks        []ack
		wantRelease bool
		committed   int      // the cursor, as an index into the pop (-1: before m-0)
		next        []string // the next pop (nil = 204 while the lease is still held)
		attempt     int      // deliveryAttempt of the next pop
	}{
		{"acking the last message commits the whole batch", []ack{{4, ""}}, true, 4, []string{}, 0},
		{"acking a prefix keeps the lease", []ack{{0, "completed"}, {1, "completed"}}, false, 1, nil, 0},
		{"the highest completed wins, order does not matter", []ack{{3, ""}, {1, ""}}, false, 3, nil, 0},
		// m-1.. were delivered before: a redelivery, whatever offset it starts at.
		{"failed below a completed clamps the cursor", []ack{{0, ""}, {1, "failed"}, {2, ""}, {3, ""}},
			true, 0, txnRange("m", 1, 4), 2},
		{"failed at the head redelivers the batch", []ack{{0, "failed"}}, true, -1, txnRange("m", 0, 4), 2},
		{"retry at the head redelivers the batch", []ack{{2, ""}, {0, "retry"}}, true, -1, txnRange("m", 0, 4), 2},
		{"an explicit signal beats a completed ack of the same message", []ack{{0, "completed"}, {0, "failed"}},
			true, -1, txnRange("m", 0, 4), 2},
		{"the lowest signal wins", []ack{{3, "failed"}, {2, "retry"}, {1, ""}}, true, 1, txnRange("m", 2, 4), 2},
		{"dlq beats failed at the same offset", []ack{{1, "failed"}, {1, "dlq"}}, true, 1, txnRange("m", 2, 4), 2},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprintf("acks%d", i)
			b.pushN(t, queue, "p", "m", 5)
			p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=10")
			items := make([]map[string]any, len(tt.acks))
			for k, ak := range tt.acks {
				items[k] = ackItemOf(p.Messages[ak.msg], ak.status)
			}
			for k, r := range b.ackBatch(t, "", items...) {
				// dlq:true marks the signals on the dead-lettered message.
				ak := tt.acks[k]
				wantDLQ := ak.status != "" && ak.status != "completed" &&
					slices.ContainsFunc(tt.acks, func(x ack) bool { return x.status == "dlq" && x.msg == ak.msg })
				if !r.Success || r.Error != nil || r.LeaseReleased != tt.wantRelease || r.DLQ != wantDLQ || r.Noop || r.Index != k {
					t.Fatalf("ack result %d: %+v", k, r)
				}
			}
			next := b.pop(t, "/api/v1/pop/queue/"+queue+"?batch=10")
			switch {
			case tt.next == nil:
				if next != nil {
					t.Fatalf("the lease was released: %v delivered", txnsOf(next))
				}
				// The cursor stands at the highest completed message, and the rest of the
				// batch can still be acked under the kept lease.
				b.wantCursorAt(t, p, tt.committed)
			case len(tt.next) == 0:
				if next != nil {
					t.Fatalf("delivered %v, want 204", txnsOf(next))
				}
			default:
				if next == nil {
					t.Fatalf("204, want %v", tt.next)
				}
				// The next delivery starts just after the cursor.
				if want := fmt.Sprintf("m-%d", tt.committed+1); tt.next[0] != want {
					t.Fatalf("bad case: next delivery %v does not start after the cursor %d", tt.next, tt.committed)
				}
				wantTxns(t, next, tt.next...)
				if next.Messages[0].DeliveryAttempt != tt.attempt {
					t.Fatalf("deliveryAttempt %d, want %d", next.Messages[0].DeliveryAttempt, tt.attempt)
				}
			}
		})
	}
}

// deadLetterWant is what GET /api/v1/dlq must list for m-0 of a queue.
type deadLetterWant struct {
	errorMessage string
	retryCount   int
}

// wantDeadLetters checks queue's dead letters: none, or exactly m-0 (payload {"i":0}) of
// the queue-mode group with want's error and retry count.
func (b *broker) wantDeadLetters(t testing.TB, queue string, want *deadLetterWant) {
	t.Helper()
	_, ms := b.deadLetters(t, "?queue="+queue)
	if want == nil {
		if len(ms) != 0 {
			t.Fatalf("dead letters %+v, want none", ms)
		}
		return
	}
	if len(ms) != 1 {
		t.Fatalf("dead letters %+v, want m-0 only", ms)
	}
	d := ms[0]
	if d.ConsumerGroup != "__QUEUE_MODE__" || d.TransactionID != "m-0" || string(d.Data) != `{"i":0}` ||
		d.ErrorMessage == nil || *d.ErrorMessage != want.errorMessage || d.RetryCount != want.retryCount || d.Queue != queue {
		t.Fatalf("dead letter %+v (data %s), want m-0 of __QUEUE_MODE__ with error %q and retry count %d",
			d, d.Data, want.errorMessage, want.retryCount)
	}
}

func TestAckRetryBudgetAndDLQ(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	// Each case pops m-0 (batch=1) once per step and acks it with the step's status and
	// error; after the steps, the next pop must deliver m-1.
	type step struct {
		status, err string
		dlq         bool // the ack's answer
	}
	tests := []struct {
		name    string
		options map[string]any
		steps   []step
		dlq     *deadLetterWant // the dead letter of m-0, nil = none
	}{
		{"failed retryLimit times, then dead-lettered with the ack's error", map[string]any{"retryLimit": 2},
			[]step{{"failed", "boom", false}, {"failed", "boom", false}, {"failed", "boom", true}},
			&deadLetterWant{"boom", 2}},
		{"no error given: Retries exhausted", map[string]any{"retryLimit": 1},
			[]step{{"failed", "", false}, {"failed", "", true}},
			&deadLetterWant{"Retries exhausted", 1}},
		{"retryLimit 0 dead-letters the first failure", map[string]any{"retryLimit": 0},
			[]step{{"failed", "bad", true}}, &deadLetterWant{"bad", 0}},
		{"retry does not charge the budget", map[string]any{"retryLimit": 1},
			[]step{{"retry", "", false}, {"retry", "", false}, {"retry", "", false}, {"failed", "x", false}, {"failed", "y", true}},
			&deadLetterWant{"y", 1}},
		{"dlq dead-letters at once", map[string]any{"retryLimit": 5},
			[]step{{"dlq", "poison", true}}, &deadLetterWant{"poison", 0}},
		{"dlqAfterMaxRetries alone still dead-letters", map[string]any{"retryLimit": 0, "deadLetterQueue": false},
			[]step{{"failed", "z", true}}, &deadLetterWant{"z", 0}},
		{"deadLetterQueue alone still dead-letters", map[string]any{"retryLimit": 0, "dlqAfterMaxRetries": false},
			[]step{{"failed", "z", true}}, &deadLetterWant{"z", 0}},
		{"DLQ disabled drops the message", map[string]any{"retryLimit": 1, "deadLetterQueue": false, "dlqAfterMaxRetries": false},
			[]step{{"failed", "a", false}, {"failed", "b", false}}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprintf("budget%d", i)
			b.setOptions(t, queue, tt.options)
			b.pushN(t, queue, "p", "m", 2)
			for k, s := range tt.steps {
				p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1")
				wantTxns(t, p, "m-0")
				if p.Messages[0].DeliveryAttempt != k+1 {
					t.Fatalf("step %d: deliveryAttempt %d, want %d", k, p.Messages[0].DeliveryAttempt, k+1)
				}
				it := ackItemOf(p.Messages[0], s.status)
				if s.err != "" {
					it["error"] = s.err
				}
				res := b.ackBatch(t, "", it)
				if !res[0].Success || !res[0].LeaseReleased || res[0].DLQ != s.dlq {
					t.Fatalf("step %d (%s): %+v, want dlq %v", k, s.status, res[0], s.dlq)
				}
			}
			// The partition moved on, with a fresh budget: m-1 is a first delivery.
			p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1")
			wantTxns(t, p, "m-1")
			if p.Messages[0].DeliveryAttempt != 1 {
				t.Fatalf("deliveryAttempt %d after moving on", p.Messages[0].DeliveryAttempt)
			}
			b.wantDeadLetters(t, queue, tt.dlq)
		})
	}
}

func TestAckRetryBudgetResets(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	// With retryLimit 1 a failure is dead-lettered only if one was already charged.
	failOnce := func(t *testing.T, queue string, m popMsg) {
		t.Helper()
		res := b.ackBatch(t, "", ackItemOf(m, "failed"))
		if !res[0].Success || res[0].DLQ {
			t.Fatalf("failure of %s: %+v, want a retry, not a dead letter", m.TransactionID, res[0])
		}
		b.wantDeadLetters(t, queue, nil)
	}

	t.Run("completing a batch resets the budget", func(t *testing.T) {
		t.Parallel()
		b.setOptions(t, "reset", map[string]any{"retryLimit": 1})
		b.pushN(t, "reset", "p", "m", 2)
		failOnce(t, "reset", b.popMust(t, "/api/v1/pop/queue/reset?batch=1").Messages[0])
		b.ackAll(t, b.popMust(t, "/api/v1/pop/queue/reset?batch=1"), "")
		failOnce(t, "reset", b.popMust(t, "/api/v1/pop/queue/reset?batch=1").Messages[0])
	})

	t.Run("lease expiry does not charge the budget", func(t *testing.T) {
		t.Parallel()
		b.setOptions(t, "expiry-free", map[string]any{"retryLimit": 1})
		b.pushN(t, "expiry-free", "p", "m", 1)
		b.popMust(t, "/api/v1/pop/queue/expiry-free?leaseSeconds=1")
		var p *popResp
		eventually(t, 4*time.Second, "the lease to expire and redeliver", func() bool {
			p = b.pop(t, "/api/v1/pop/queue/expiry-free")
			return p != nil
		})
		failOnce(t, "expiry-free", p.Messages[0])
		p = b.popMust(t, "/api/v1/pop/queue/expiry-free")
		if p.Messages[0].DeliveryAttempt != 3 {
			t.Fatalf("deliveryAttempt %d, want 3", p.Messages[0].DeliveryAttempt)
		}
	})
}

func TestAckStatusNormalization(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.setOptions(t, "norm", map[string]any{"retryLimit": 3})
	tests := []struct {
		status    any // nil = no status key
		completed bool
	}{
		{nil, true}, {"", true}, {"completed", true}, {"success", true}, {"acked", true}, {"ok", true},
		{"failed", false}, {"Completed", false}, {"OK", false}, {"SUCCESS", false}, {"done", false}, {"nack", false},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%v", tt.status), func(t *testing.T) {
			t.Parallel()
			part := fmt.Sprintf("p%d", i)
			b.pushN(t, "norm", part, "m", 2)
			p := b.popMust(t, "/api/v1/pop/queue/norm/partition/"+part+"?batch=1")
			it := ackItemOf(p.Messages[0], "")
			if tt.status != nil {
				it["status"] = tt.status
			}
			if res := b.ackBatch(t, "", it); !res[0].Success || !res[0].LeaseReleased {
				t.Fatalf("ack: %+v", res[0])
			}
			next := b.popMust(t, "/api/v1/pop/queue/norm/partition/"+part+"?batch=1")
			if tt.completed {
				// The cursor moved past m-0; no retry was charged.
				wantTxns(t, next, "m-1")
				if next.Messages[0].DeliveryAttempt != 1 {
					t.Fatalf("completed: m-1 delivered with attempt %d", next.Messages[0].DeliveryAttempt)
				}
			} else {
				// Failed: m-0 again, one retry charged.
				wantTxns(t, next, "m-0")
				if next.Messages[0].DeliveryAttempt != 2 {
					t.Fatalf("failed: m-0 redelivered with attempt %d, want 2", next.Messages[0].DeliveryAttempt)
				}
			}
		})
	}
}

func TestAckBelowCursor(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "below", "p", "m", 3)
	p := b.popMust(t, "/api/v1/pop/queue/below?batch=10")
	b.ackAll(t, p, "")
	m := p.Messages[1]
	tests := []struct {
		status  string
		ok      bool
		wantErr string
	}{
		{"completed", true, ""},
		{"", true, ""},
		{"failed", false, alreadyCommitted},
		{"retry", false, alreadyCommitted},
		{"dlq", false, alreadyCommitted},
	}
	for _, tt := range tests {
		t.Run("status "+tt.status, func(t *testing.T) {
			it := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": tt.status}
			r := b.ackBatch(t, "", it)[0]
			if tt.ok {
				if !r.Success || !r.Noop || r.Error != nil || r.DLQ {
					t.Fatalf("%+v, want success and noop", r)
				}
			} else if r.Success || r.Noop || r.Error == nil || *r.Error != tt.wantErr || r.DLQ {
				t.Fatalf("%+v, want error %q", r, tt.wantErr)
			}
		})
	}
	// The cursor stayed at the end: nothing is redelivered, nothing dead-lettered.
	b.popEmpty(t, "/api/v1/pop/queue/below?batch=10")
	b.wantDeadLetters(t, "below", nil)
}

func TestAckItemErrors(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "items", "p", "m", 3)
	p := b.popMust(t, "/api/v1/pop/queue/items?batch=10")
	m := p.Messages[0]

	t.Run("bad items fail alone, the call answers 200", func(t *testing.T) {
		items := []map[string]any{
			{"transactionId": "never-pushed", "partitionId": m.PartitionID, "leaseId": m.LeaseID},
			{"transactionId": m.TransactionID},
			{"transactionId": m.TransactionID, "partitionId": "not-a-uuid"},
			{"partitionId": m.PartitionID},
			{"transactionId": m.TransactionID, "partitionId": "01a22b50-1a84-7820-85f4-7a4428a03ed3"},
			ackItemOf(m, "completed"),
		}
		code, body := b.post(t, "/api/v1/ack/batch", mustJSON(t, map[string]any{"acknowledgments": items}))
		if code != http.StatusOK {
			t.Fatalf("status %d, body %s", code, body)
		}
		var generic []json.RawMessage
		if err := json.Unmarshal(body, &generic); err != nil || len(generic) != len(items) {
			t.Fatalf("answer %s: %v", body, err)
		}
		for i, g := range generic {
			if got := jsonKeys(t, g); !slices.Equal(got, ackRespKeys) {
				t.Fatalf("result %d keys %v, want %v", i, got, ackRespKeys)
			}
		}
		var res []ackResp
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatal(err)
		}
		for i, r := range res[:len(res)-1] {
			if r.Success || r.Error == nil || *r.Error == "" || r.Index != i || r.LeaseReleased {
				t.Errorf("item %d: %+v, want a failure with an error", i, r)
			}
		}
		if last := res[len(res)-1]; !last.Success || last.Error != nil || last.TransactionID != m.TransactionID {
			t.Errorf("the valid item: %+v", last)
		}
		// Only m-0 was acked: acking it again changes nothing, acking m-1 moves the cursor.
		if r := b.ackBatch(t, "", map[string]any{"transactionId": "m-0", "partitionId": m.PartitionID})[0]; !r.Success || !r.Noop {
			t.Errorf("m-0 again: %+v, want a no-op", r)
		}
		if r := b.ackBatch(t, "", ackItemOf(p.Messages[1], ""))[0]; !r.Success || r.Noop || r.LeaseReleased {
			t.Errorf("m-1: %+v, want the cursor moved and the lease kept", r)
		}
	})

	t.Run("single ack answers a one-element array", func(t *testing.T) {
		code, body := b.post(t, "/api/v1/ack", mustJSON(t, ackItemOf(p.Messages[2], "completed")))
		var res []ackResp
		if code != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res) != 1 {
			t.Fatalf("status %d, body %s", code, body)
		}
		if r := res[0]; r.Index != 0 || !r.Success || r.TransactionID != "m-2" || !r.LeaseReleased {
			t.Fatalf("%+v", r)
		}
		if got := jsonKeys(t, body[1:len(body)-1]); !slices.Equal(got, ackRespKeys) {
			t.Fatalf("keys %v, want %v", got, ackRespKeys)
		}
		// Unknown and malformed identities fail the item, not the call.
		code, body = b.post(t, "/api/v1/ack", `{"transactionId":"m-0","partitionId":"nope"}`)
		if code != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res) != 1 || res[0].Success {
			t.Fatalf("status %d, body %s", code, body)
		}
	})

	t.Run("a named group's single ack", func(t *testing.T) {
		g := b.popMust(t, "/api/v1/pop/queue/items?batch=10&consumerGroup=g&subscriptionMode=all")
		body := ackItemOf(g.Messages[2], "")
		body["consumerGroup"] = "g"
		code, raw := b.post(t, "/api/v1/ack", mustJSON(t, body))
		var res []ackResp
		if code != http.StatusOK || json.Unmarshal(raw, &res) != nil || !res[0].Success || !res[0].LeaseReleased {
			t.Fatalf("status %d, body %s", code, raw)
		}
		// Group g's cursor is at the end: nothing more for it.
		b.popEmpty(t, "/api/v1/pop/queue/items?batch=10&consumerGroup=g")
	})

	t.Run("a message past the delivered span is not acked", func(t *testing.T) {
		b.pushN(t, "span", "p", "m", 3)
		sp := b.popMust(t, "/api/v1/pop/queue/span?batch=1")
		res := b.ackBatch(t, "", map[string]any{"transactionId": "m-2", "partitionId": sp.PartitionID, "leaseId": sp.LeaseID})
		if res[0].Success || res[0].Error == nil || *res[0].Error != "position beyond leased batch" {
			t.Fatalf("%+v", res[0])
		}
		// Nothing moved: the delivered m-0 is still to be acked.
		if r := b.ackAll(t, sp, ""); !r[0].Success || r[0].Noop || !r[0].LeaseReleased {
			t.Fatalf("ack of m-0: %+v, want it to move the cursor", r[0])
		}
	})

	t.Run("a transactionId names a message only within its partition", func(t *testing.T) {
		b.push(t, map[string]any{"queue": "ident", "partition": "a", "transactionId": "same", "payload": 1},
			map[string]any{"queue": "ident", "partition": "b", "transactionId": "same", "payload": 2})
		pa := b.popMust(t, "/api/v1/pop/queue/ident/partition/a")
		pb := b.popMust(t, "/api/v1/pop/queue/ident/partition/b")
		if res := b.ackAll(t, pa, ""); !res[0].Success || !res[0].LeaseReleased {
			t.Fatalf("%+v", res[0])
		}
		b.popEmpty(t, "/api/v1/pop/queue/ident/partition/a")
		// b's cursor and lease are untouched by the ack of a: its own ack moves it.
		if res := b.ackAll(t, pb, ""); !res[0].Success || res[0].Noop || !res[0].LeaseReleased {
			t.Fatalf("%+v", res[0])
		}
	})

	t.Run("an empty batch answers []", func(t *testing.T) {
		code, body := b.post(t, "/api/v1/ack/batch", `{"acknowledgments":[]}`)
		if code != http.StatusOK || string(body) != "[]" {
			t.Fatalf("status %d, body %s", code, body)
		}
	})

	bad := []struct{ path, body string }{
		{"/api/v1/ack", `{"transactionId":`},
		{"/api/v1/ack", `[1,2]`},
		{"/api/v1/ack", `{"transactionId":5}`},
		{"/api/v1/ack/batch", `not json`},
		{"/api/v1/ack/batch", `{"acknowledgments":{}}`},
		{"/api/v1/ack/batch", `{}`},
		{"/api/v1/ack/batch", ``},
	}
	for _, tt := range bad {
		t.Run(fmt.Sprintf("400 for %s %q", tt.path, tt.body), func(t *testing.T) {
			resp, body := b.doBad(t, http.MethodPost, tt.path, strings.NewReader(tt.body))
			wantErrorBody(t, resp, body, http.StatusBadRequest, "", "bad body")
		})
	}
}

// A transactionId pushed again once the dedup window let it through (or with dedup off)
// names several messages of one partition. An ack names the earliest copy after the
// cursor that the call has not already named: acking or failing the first copy must not
// complete everything up to a later copy.
func TestAckRepeatedTransactionID(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	// setup pushes x, y, x to queue/p in three requests (three segments), the second x
	// after the queue's dedup window, and pops them in one delivery.
	setup := func(t *testing.T, queue string, window int) *popResp {
		t.Helper()
		b.setOptions(t, queue, map[string]any{"dedupWindowSeconds": window})
		for k, txn := range []string{"x", "y", "x"} {
			item := map[string]any{"queue": queue, "partition": "p", "transactionId": txn, "payload": k}
			r := b.push(t, item)
			if k == 2 && window > 0 {
				// A duplicate writes nothing: repeat until the window has passed.
				eventually(t, time.Duration(window)*time.Second+5*time.Second, "the dedup window to pass", func() bool {
					r = b.push(t, item)
					return r[0].Status != "duplicate"
				})
			}
			if r[0].Status != "queued" {
				t.Fatalf("push %d: %+v", k, r[0])
			}
		}
		p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=10")
		wantTxns(t, p, "x", "y", "x")
		return p
	}

	t.Run("failing the first copy redelivers it", func(t *testing.T) {
		t.Parallel()
		p := setup(t, "rep-failed", 0)
		if r := b.ackBatch(t, "", ackItemOf(p.Messages[0], "failed"))[0]; !r.Success || !r.LeaseReleased {
			t.Fatalf("%+v", r)
		}
		// Nothing before the failed message was committed, and one retry was charged.
		next := b.popMust(t, "/api/v1/pop/queue/rep-failed?batch=10")
		wantTxns(t, next, "x", "y", "x")
		if next.Messages[0].DeliveryAttempt != 2 {
			t.Fatalf("deliveryAttempt %d, want 2", next.Messages[0].DeliveryAttempt)
		}
	})

	t.Run("completing the first copy acks only the prefix", func(t *testing.T) {
		t.Parallel()
		p := setup(t, "rep-completed", 1)
		if r := b.ackBatch(t, "", ackItemOf(p.Messages[0], ""))[0]; !r.Success || r.LeaseReleased {
			t.Fatalf("first x: %+v, want success with the lease kept", r)
		}
		// y may still fail: it was never acknowledged; the redelivery starts at it, so
		// the first x alone was committed.
		if r := b.ackBatch(t, "", ackItemOf(p.Messages[1], "failed"))[0]; !r.Success || !r.LeaseReleased {
			t.Fatalf("y: %+v", r)
		}
		next := b.popMust(t, "/api/v1/pop/queue/rep-completed?batch=10")
		wantTxns(t, next, "y", "x")
		// Both copies in one call: one each, the second releases the lease.
		res := b.ackAll(t, next, "")
		if !res[0].Success || !res[1].Success || !res[1].LeaseReleased {
			t.Fatalf("%+v", res)
		}
		b.popEmpty(t, "/api/v1/pop/queue/rep-completed?batch=10")
	})

	t.Run("one call naming both copies acks both", func(t *testing.T) {
		t.Parallel()
		p := setup(t, "rep-both", 0)
		res := b.ackBatch(t, "", ackItemOf(p.Messages[0], ""), ackItemOf(p.Messages[2], "failed"))
		if !res[0].Success || !res[1].Success || !res[1].LeaseReleased {
			t.Fatalf("%+v", res)
		}
		// The second x failed: y is implicitly done, the second x redelivers.
		wantTxns(t, b.popMust(t, "/api/v1/pop/queue/rep-both?batch=10"), "x")
	})
}
