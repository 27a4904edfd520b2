package queen

import (
	"context"
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

// dlqRow is a dead letter as stored.
type dlqRow struct {
	Group, TransactionID, Error string
	Offset                      int64
	RetryCount                  int32
	FrameTxn                    string // transaction id of the frame the snapshot points at
}

// dlqRows reads the dead letters of queue in offset order, decoding each snapshot.
func (d *pushLogDB) dlqRows(t testing.TB, queue string) []dlqRow {
	t.Helper()
	rows, err := d.pool.Query(context.Background(), `SELECT d.consumer_group, d.transaction_id,
		coalesce(d.error_message, ''), d.msg_offset, d.retry_count, d.frame_index, d.blob
		FROM queen.dlq d JOIN queen.queues q ON q.id = d.queue_id WHERE q.name = $1 ORDER BY d.msg_offset`, queue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []dlqRow
	for rows.Next() {
		var (
			r     dlqRow
			frame int32
			blob  []byte
		)
		if err := rows.Scan(&r.Group, &r.TransactionID, &r.Error, &r.Offset, &r.RetryCount, &frame, &blob); err != nil {
			t.Fatal(err)
		}
		frames, err := d.codec.Decode(blob)
		if err != nil || int(frame) >= len(frames) {
			t.Fatalf("dead letter %s: snapshot does not decode to frame %d: %v", r.TransactionID, frame, err)
		}
		r.FrameTxn = frames[frame].TransactionID
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAckImplicitAndExplicit(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)

	// Each case pops m-0..m-4 from its own queue, acks the listed items (message index
	// and status) in one call, and checks the answer, the cursor and the next pop.
	type ack struct {
		msg    int
		status string
	}
	tests := []struct {
		name        string
		acks        []ack
		wantRelease bool
		committed   int64
		next        []string // the next pop (nil = 204 while the lease is still held)
		attempt     int      // deliveryAttempt of the next pop
	}{
		{"acking the last message commits the whole batch", []ack{{4, ""}}, true, 4, []string{}, 0},
		{"acking a prefix keeps the lease", []ack{{0, "completed"}, {1, "completed"}}, false, 1, nil, 0},
		{"the highest completed wins, order does not matter", []ack{{3, ""}, {1, ""}}, false, 3, nil, 0},
		{"failed below a completed clamps the cursor", []ack{{0, ""}, {1, "failed"}, {2, ""}, {3, ""}},
			true, 0, txnRange("m", 1, 4), 1},
		{"failed at the head redelivers the batch", []ack{{0, "failed"}}, true, -1, txnRange("m", 0, 4), 2},
		{"retry at the head redelivers the batch", []ack{{2, ""}, {0, "retry"}}, true, -1, txnRange("m", 0, 4), 2},
		{"an explicit signal beats a completed ack of the same message", []ack{{0, "completed"}, {0, "failed"}},
			true, -1, txnRange("m", 0, 4), 2},
		{"the lowest signal wins", []ack{{3, "failed"}, {2, "retry"}, {1, ""}}, true, 1, txnRange("m", 2, 4), 1},
		{"dlq beats failed at the same offset", []ack{{1, "failed"}, {1, "dlq"}}, true, 1, txnRange("m", 2, 4), 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprintf("acks%d", i)
			a.pushN(t, queue, "p", "m", 5)
			p := a.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=10")
			items := make([]map[string]any, len(tt.acks))
			for k, ak := range tt.acks {
				items[k] = ackItemOf(p.Messages[ak.msg], ak.status)
			}
			for k, r := range a.ackBatch(t, "", items...) {
				// dlq:true marks the signals on the dead-lettered message.
				ak := tt.acks[k]
				wantDLQ := ak.status != "" && ak.status != "completed" &&
					slices.ContainsFunc(tt.acks, func(x ack) bool { return x.status == "dlq" && x.msg == ak.msg })
				if !r.Success || r.Error != nil || r.LeaseReleased != tt.wantRelease || r.DLQ != wantDLQ || r.Noop || r.Index != k {
					t.Fatalf("ack result %d: %+v", k, r)
				}
			}
			c, _ := db.consumerRowOf(t, queue, "p", "__QUEUE_MODE__")
			if c.Committed != tt.committed || (c.LeaseID == nil) != tt.wantRelease {
				t.Fatalf("consumer %+v, want committed %d, lease released %v", c, tt.committed, tt.wantRelease)
			}
			next := a.pop(t, "/api/v1/pop/queue/"+queue+"?batch=10")
			switch {
			case tt.next == nil:
				if next != nil {
					t.Fatalf("the lease was released: %v delivered", txnsOf(next))
				}
				// The rest of the batch can still be acked under the kept lease.
				res := a.ackBatch(t, "", ackItemOf(p.Messages[4], ""))
				if !res[0].Success || !res[0].LeaseReleased {
					t.Fatalf("ack of the rest: %+v", res[0])
				}
			case len(tt.next) == 0:
				if next != nil {
					t.Fatalf("delivered %v, want 204", txnsOf(next))
				}
			default:
				if next == nil {
					t.Fatalf("204, want %v", tt.next)
				}
				wantTxns(t, next, tt.next...)
				if next.Messages[0].DeliveryAttempt != tt.attempt {
					t.Fatalf("deliveryAttempt %d, want %d", next.Messages[0].DeliveryAttempt, tt.attempt)
				}
			}
		})
	}
}

func TestAckRetryBudgetAndDLQ(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)

	// Each case pops m-0 (batch=1) once per step and acks it with the step's status and
	// error; after the steps, the next pop must deliver next.
	type step struct {
		status, err string
		dlq         bool // the ack's answer
	}
	tests := []struct {
		name  string
		set   string
		steps []step
		dlq   *dlqRow // the dead letter of m-0, nil = none
	}{
		{"failed retryLimit times, then dead-lettered with the ack's error", "retry_limit = 2",
			[]step{{"failed", "boom", false}, {"failed", "boom", false}, {"failed", "boom", true}},
			&dlqRow{Error: "boom", RetryCount: 2}},
		{"no error given: Retries exhausted", "retry_limit = 1",
			[]step{{"failed", "", false}, {"failed", "", true}},
			&dlqRow{Error: "Retries exhausted", RetryCount: 1}},
		{"retryLimit 0 dead-letters the first failure", "retry_limit = 0",
			[]step{{"failed", "bad", true}}, &dlqRow{Error: "bad"}},
		{"retry does not charge the budget", "retry_limit = 1",
			[]step{{"retry", "", false}, {"retry", "", false}, {"retry", "", false}, {"failed", "x", false}, {"failed", "y", true}},
			&dlqRow{Error: "y", RetryCount: 1}},
		{"dlq dead-letters at once", "retry_limit = 5",
			[]step{{"dlq", "poison", true}}, &dlqRow{Error: "poison"}},
		{"dlqAfterMaxRetries alone still dead-letters", "retry_limit = 0, dead_letter_queue = false",
			[]step{{"failed", "z", true}}, &dlqRow{Error: "z"}},
		{"deadLetterQueue alone still dead-letters", "retry_limit = 0, dlq_after_max_retries = false",
			[]step{{"failed", "z", true}}, &dlqRow{Error: "z"}},
		{"DLQ disabled drops the message", "retry_limit = 1, dead_letter_queue = false, dlq_after_max_retries = false",
			[]step{{"failed", "a", false}, {"failed", "b", false}}, nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprintf("budget%d", i)
			db.configure(t, queue, tt.set)
			a.pushN(t, queue, "p", "m", 2)
			for k, s := range tt.steps {
				p := a.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1")
				wantTxns(t, p, "m-0")
				if p.Messages[0].DeliveryAttempt != k+1 {
					t.Fatalf("step %d: deliveryAttempt %d, want %d", k, p.Messages[0].DeliveryAttempt, k+1)
				}
				it := ackItemOf(p.Messages[0], s.status)
				if s.err != "" {
					it["error"] = s.err
				}
				res := a.ackBatch(t, "", it)
				if !res[0].Success || !res[0].LeaseReleased || res[0].DLQ != s.dlq {
					t.Fatalf("step %d (%s): %+v, want dlq %v", k, s.status, res[0], s.dlq)
				}
			}
			p := a.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1")
			wantTxns(t, p, "m-1")
			if p.Messages[0].DeliveryAttempt != 1 {
				t.Fatalf("deliveryAttempt %d after moving on", p.Messages[0].DeliveryAttempt)
			}
			if c, _ := db.consumerRowOf(t, queue, "p", "__QUEUE_MODE__"); c.RetryCount != 0 || c.Committed != 0 {
				t.Fatalf("consumer after moving on: %+v", c)
			}
			rows := db.dlqRows(t, queue)
			if tt.dlq == nil {
				if len(rows) != 0 {
					t.Fatalf("dead letters %+v, want none", rows)
				}
				return
			}
			want := *tt.dlq
			want.Group, want.TransactionID, want.FrameTxn = "__QUEUE_MODE__", "m-0", "m-0"
			if len(rows) != 1 || rows[0] != want {
				t.Fatalf("dead letters %+v, want %+v", rows, want)
			}
		})
	}
}

func TestAckRetryBudgetResets(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	// With retryLimit 1 a failure is dead-lettered only if one was already charged.
	failOnce := func(t *testing.T, queue string, m popMsg) {
		t.Helper()
		res := a.ackBatch(t, "", ackItemOf(m, "failed"))
		if !res[0].Success || res[0].DLQ {
			t.Fatalf("failure of %s: %+v, want a retry, not a dead letter", m.TransactionID, res[0])
		}
		if rows := db.dlqRows(t, queue); len(rows) != 0 {
			t.Fatalf("dead letters %+v", rows)
		}
	}

	t.Run("completing a batch resets the budget", func(t *testing.T) {
		t.Parallel()
		db.configure(t, "reset", "retry_limit = 1")
		a.pushN(t, "reset", "p", "m", 2)
		failOnce(t, "reset", a.popMust(t, "/api/v1/pop/queue/reset?batch=1").Messages[0])
		a.ackAll(t, a.popMust(t, "/api/v1/pop/queue/reset?batch=1"), "")
		failOnce(t, "reset", a.popMust(t, "/api/v1/pop/queue/reset?batch=1").Messages[0])
	})

	t.Run("lease expiry does not charge the budget", func(t *testing.T) {
		t.Parallel()
		db.configure(t, "expiry-free", "retry_limit = 1")
		a.pushN(t, "expiry-free", "p", "m", 1)
		a.popMust(t, "/api/v1/pop/queue/expiry-free?leaseSeconds=1")
		var p *popResp
		eventually(t, 4*time.Second, "the lease never expired", func() bool {
			p = a.pop(t, "/api/v1/pop/queue/expiry-free")
			return p != nil
		})
		failOnce(t, "expiry-free", p.Messages[0])
		p = a.popMust(t, "/api/v1/pop/queue/expiry-free")
		if p.Messages[0].DeliveryAttempt != 3 {
			t.Fatalf("deliveryAttempt %d, want 3", p.Messages[0].DeliveryAttempt)
		}
	})
}

func TestAckStatusNormalization(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	db.configure(t, "norm", "retry_limit = 3")
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
			a.pushN(t, "norm", part, "m", 2)
			p := a.popMust(t, "/api/v1/pop/queue/norm/partition/"+part+"?batch=1")
			it := ackItemOf(p.Messages[0], "")
			if tt.status != nil {
				it["status"] = tt.status
			}
			if res := a.ackBatch(t, "", it); !res[0].Success || !res[0].LeaseReleased {
				t.Fatalf("ack: %+v", res[0])
			}
			c, _ := db.consumerRowOf(t, "norm", part, "__QUEUE_MODE__")
			next := a.popMust(t, "/api/v1/pop/queue/norm/partition/"+part+"?batch=1")
			if tt.completed {
				if c.Committed != 0 || c.RetryCount != 0 {
					t.Fatalf("completed: consumer %+v", c)
				}
				wantTxns(t, next, "m-1")
			} else {
				if c.Committed != -1 || c.RetryCount != 1 {
					t.Fatalf("failed: consumer %+v", c)
				}
				wantTxns(t, next, "m-0")
			}
		})
	}
}

func TestAckBelowCursor(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	a.pushN(t, "below", "p", "m", 3)
	p := a.popMust(t, "/api/v1/pop/queue/below?batch=10")
	a.ackAll(t, p, "")
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
			r := a.ackBatch(t, "", it)[0]
			if tt.ok {
				if !r.Success || !r.Noop || r.Error != nil || r.DLQ {
					t.Fatalf("%+v, want success and noop", r)
				}
			} else if r.Success || r.Noop || r.Error == nil || *r.Error != tt.wantErr || r.DLQ {
				t.Fatalf("%+v, want error %q", r, tt.wantErr)
			}
		})
	}
	if c := db.committed(t, "below", "p", "__QUEUE_MODE__"); c != 2 {
		t.Fatalf("committed %d, want 2", c)
	}
	if rows := db.dlqRows(t, "below"); len(rows) != 0 {
		t.Fatalf("dead letters %+v", rows)
	}
}

func TestAckItemErrors(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	a.pushN(t, "items", "p", "m", 3)
	p := a.popMust(t, "/api/v1/pop/queue/items?batch=10")
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
		code, body := a.do(t, http.MethodPost, "/api/v1/ack/batch", mustJSON(t, map[string]any{"acknowledgments": items}))
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
		if c := db.committed(t, "items", "p", "__QUEUE_MODE__"); c != 0 {
			t.Errorf("committed %d, want 0", c)
		}
	})

	t.Run("single ack answers a one-element array", func(t *testing.T) {
		code, body := a.do(t, http.MethodPost, "/api/v1/ack", mustJSON(t, ackItemOf(p.Messages[2], "completed")))
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
		code, body = a.do(t, http.MethodPost, "/api/v1/ack", `{"transactionId":"m-0","partitionId":"nope"}`)
		if code != http.StatusOK || json.Unmarshal(body, &res) != nil || len(res) != 1 || res[0].Success {
			t.Fatalf("status %d, body %s", code, body)
		}
	})

	t.Run("a named group's single ack", func(t *testing.T) {
		g := a.popMust(t, "/api/v1/pop/queue/items?batch=10&consumerGroup=g&subscriptionMode=all")
		body := ackItemOf(g.Messages[2], "")
		body["consumerGroup"] = "g"
		code, raw := a.do(t, http.MethodPost, "/api/v1/ack", mustJSON(t, body))
		var res []ackResp
		if code != http.StatusOK || json.Unmarshal(raw, &res) != nil || !res[0].Success || !res[0].LeaseReleased {
			t.Fatalf("status %d, body %s", code, raw)
		}
		if c := db.committed(t, "items", "p", "g"); c != 2 {
			t.Fatalf("group g committed %d, want 2", c)
		}
	})

	t.Run("a message past the delivered span is not acked", func(t *testing.T) {
		a.pushN(t, "span", "p", "m", 3)
		sp := a.popMust(t, "/api/v1/pop/queue/span?batch=1")
		res := a.ackBatch(t, "", map[string]any{"transactionId": "m-2", "partitionId": sp.PartitionID, "leaseId": sp.LeaseID})
		if res[0].Success || res[0].Error == nil || *res[0].Error != "position beyond leased batch" {
			t.Fatalf("%+v", res[0])
		}
		if c := db.committed(t, "span", "p", "__QUEUE_MODE__"); c != -1 {
			t.Fatalf("committed %d, want -1", c)
		}
	})

	t.Run("a transactionId names a message only within its partition", func(t *testing.T) {
		a.push(t, map[string]any{"queue": "ident", "partition": "a", "transactionId": "same", "payload": 1},
			map[string]any{"queue": "ident", "partition": "b", "transactionId": "same", "payload": 2})
		pa := a.popMust(t, "/api/v1/pop/queue/ident/partition/a")
		pb := a.popMust(t, "/api/v1/pop/queue/ident/partition/b")
		if res := a.ackAll(t, pa, ""); !res[0].Success {
			t.Fatalf("%+v", res[0])
		}
		if c := db.committed(t, "ident", "a", "__QUEUE_MODE__"); c != 0 {
			t.Fatalf("partition a committed %d, want 0", c)
		}
		if c := db.committed(t, "ident", "b", "__QUEUE_MODE__"); c != -1 {
			t.Fatalf("partition b committed %d by an ack of partition a", c)
		}
		// b's lease is untouched too.
		if res := a.ackAll(t, pb, ""); !res[0].Success || !res[0].LeaseReleased {
			t.Fatalf("%+v", res[0])
		}
	})

	t.Run("an empty batch answers []", func(t *testing.T) {
		code, body := a.do(t, http.MethodPost, "/api/v1/ack/batch", `{"acknowledgments":[]}`)
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
			resp, body := sendRaw(t, a, http.MethodPost, tt.path, strings.NewReader(tt.body), int64(len(tt.body)))
			wantErrorBody(t, resp, body, http.StatusBadRequest, "", "bad body")
		})
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A transactionId pushed again once the dedup window let it through (or with dedup off)
// names several messages of one partition. An ack names the earliest copy after the
// cursor that the call has not already named: acking or failing the first copy must not
// complete everything up to a later copy.
func TestAckRepeatedTransactionID(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	// setup pushes x, y, x to queue/p in three requests (three segments), the second x
	// after the queue's dedup window, and pops them in one delivery.
	setup := func(t *testing.T, queue string, window int) *popResp {
		t.Helper()
		db.configure(t, queue, fmt.Sprintf("dedup_window_seconds = %d", window))
		for k, txn := range []string{"x", "y", "x"} {
			if k == 2 && window > 0 {
				time.Sleep(time.Duration(window)*time.Second + 200*time.Millisecond)
			}
			if r := a.push(t, map[string]any{"queue": queue, "partition": "p", "transactionId": txn, "payload": k}); r[0].Status != "queued" {
				t.Fatalf("push %d: %+v", k, r[0])
			}
		}
		p := a.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=10")
		wantTxns(t, p, "x", "y", "x")
		return p
	}

	t.Run("failing the first copy redelivers it", func(t *testing.T) {
		t.Parallel()
		p := setup(t, "rep-failed", 0)
		if r := a.ackBatch(t, "", ackItemOf(p.Messages[0], "failed"))[0]; !r.Success || !r.LeaseReleased {
			t.Fatalf("%+v", r)
		}
		if c, _ := db.consumerRowOf(t, "rep-failed", "p", "__QUEUE_MODE__"); c.Committed != -1 || c.RetryCount != 1 {
			t.Fatalf("consumer %+v, want committed -1 (nothing before the failed message) and one retry", c)
		}
		next := a.popMust(t, "/api/v1/pop/queue/rep-failed?batch=10")
		wantTxns(t, next, "x", "y", "x")
		if next.Messages[0].DeliveryAttempt != 2 {
			t.Fatalf("deliveryAttempt %d, want 2", next.Messages[0].DeliveryAttempt)
		}
	})

	t.Run("completing the first copy acks only the prefix", func(t *testing.T) {
		t.Parallel()
		p := setup(t, "rep-completed", 1)
		if r := a.ackBatch(t, "", ackItemOf(p.Messages[0], ""))[0]; !r.Success || r.LeaseReleased {
			t.Fatalf("first x: %+v, want success with the lease kept", r)
		}
		if c := db.committed(t, "rep-completed", "p", "__QUEUE_MODE__"); c != 0 {
			t.Fatalf("committed %d after acking the first x, want 0", c)
		}
		// y may still fail: it was never acknowledged.
		if r := a.ackBatch(t, "", ackItemOf(p.Messages[1], "failed"))[0]; !r.Success || !r.LeaseReleased {
			t.Fatalf("y: %+v", r)
		}
		next := a.popMust(t, "/api/v1/pop/queue/rep-completed?batch=10")
		wantTxns(t, next, "y", "x")
		// Both copies in one call: one each, the second releases the lease.
		res := a.ackAll(t, next, "")
		if !res[0].Success || !res[1].Success || !res[1].LeaseReleased {
			t.Fatalf("%+v", res)
		}
		if c := db.committed(t, "rep-completed", "p", "__QUEUE_MODE__"); c != 2 {
			t.Fatalf("committed %d, want 2", c)
		}
	})

	t.Run("one call naming both copies acks both", func(t *testing.T) {
		t.Parallel()
		p := setup(t, "rep-both", 0)
		res := a.ackBatch(t, "", ackItemOf(p.Messages[0], ""), ackItemOf(p.Messages[2], "failed"))
		if !res[0].Success || !res[1].Success || !res[1].LeaseReleased {
			t.Fatalf("%+v", res)
		}
		// The second x failed: y is implicitly done, the second x redelivers.
		if c := db.committed(t, "rep-both", "p", "__QUEUE_MODE__"); c != 1 {
			t.Fatalf("committed %d, want 1", c)
		}
		wantTxns(t, a.popMust(t, "/api/v1/pop/queue/rep-both?batch=10"), "x")
	})
}
