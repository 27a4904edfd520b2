package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDeleteQueueRoute(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	for _, tt := range []struct {
		name, queue string
		// poppable: a pop route can name the queue (its path segment cannot hold a
		// slash), so the test can give it cursors and dead letters, and read it back.
		poppable bool
	}{
		{"plain name", "gone", true},
		{"name with a slash and a space", "team a/gone", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range []string{"p1", "p2"} {
				for _, txn := range []string{"t0", "t1"} {
					b.push(t, map[string]any{"queue": tt.queue, "partition": p, "transactionId": txn, "payload": 1})
				}
			}
			if tt.poppable {
				// Group g gets a cursor on both partitions and dead-letters t0 of each.
				for _, p := range []string{"p1", "p2"} {
					d := b.popMust(t, "/api/v1/pop/queue/"+url.PathEscape(tt.queue)+"/partition/"+p+"?batch=1&consumerGroup=g&subscriptionMode=all")
					if r := b.ackBatch(t, "g", ackItemOf(d.Messages[0], "dlq")); !r[0].Success || !r[0].DLQ {
						t.Fatalf("dead-lettering t0 of %s: %+v", p, r[0])
					}
				}
				if _, ms := b.deadLetters(t, "?queue="+url.QueryEscape(tt.queue)); len(ms) != 2 {
					t.Fatalf("%d dead letters before the deletion, want 2", len(ms))
				}
			}
			path := "/api/v1/resources/queues/" + url.PathEscape(tt.queue)

			resp, body := b.do(t, http.MethodDelete, path, nil)
			if resp.StatusCode != http.StatusOK || string(body) != `{"deleted":true,"existed":true,"queue":`+dlqQuote(tt.queue)+`}` {
				t.Fatalf("DELETE: %d %s", resp.StatusCode, body)
			}
			// Its dead letters went with it.
			if _, ms := b.deadLetters(t, "?queue="+url.QueryEscape(tt.queue)); len(ms) != 0 {
				t.Errorf("%d dead letters of the deleted queue are still listed", len(ms))
			}

			resp, body = b.do(t, http.MethodDelete, path, nil)
			want := `{"deleted":false,"existed":false,"queue":` + dlqQuote(tt.queue) + `,"message":"Queue not found, nothing was deleted"}`
			if resp.StatusCode != http.StatusOK || string(body) != want {
				t.Fatalf("second DELETE: %d %s, want 200 %s", resp.StatusCode, body, want)
			}

			// The name starts over: the old transaction ids are no duplicates, offsets
			// start at 0 again, and neither the old messages nor the old cursors are back.
			r := b.push(t, map[string]any{"queue": tt.queue, "partition": "p1", "transactionId": "t1", "payload": 1})
			if r[0].Status != "queued" || *r[0].Offset != 0 {
				t.Fatalf("push after deletion: %+v, want queued at 0", r[0])
			}
			if !tt.poppable {
				return
			}
			read := b.readBack(t, tt.queue)
			if len(read) != 1 || len(read["p1"]) != 1 || read["p1"][0].ID != r[0].MessageID {
				t.Fatalf("after deletion the queue delivers %v, want the new t1 alone", read)
			}
			g := b.popMust(t, "/api/v1/pop/queue/"+url.PathEscape(tt.queue)+"?partitions=10&consumerGroup=g")
			wantTxns(t, g, "t1")
		})
	}
}

// dlqAnswer is a GET /api/v1/dlq answer.
type dlqAnswer struct {
	Messages   []json.RawMessage `json:"messages"`
	Pagination struct {
		Limit  int `json:"limit"`
		Offset int `json:"offset"`
	} `json:"pagination"`
	Total int `json:"total"`
}

type dlqMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  *string         `json:"errorMessage"`
	RetryCount    int             `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     string          `json:"createdAt"`
	FailedAt      string          `json:"failedAt"`
	IsEncrypted   *bool           `json:"isEncrypted"`
}

var dlqMessageKeys = []string{"id", "transactionId", "partitionId", "queue", "partition", "consumerGroup", "errorMessage",
	"retryCount", "data", "producerSub", "createdAt", "failedAt"}

// deadLetters reads GET /api/v1/dlq with query and checks its shape.
func (b *broker) deadLetters(t testing.TB, query string) (dlqAnswer, []dlqMessage) {
	t.Helper()
	code, body := b.get(t, "/api/v1/dlq"+query)
	if code != http.StatusOK {
		t.Fatalf("GET /api/v1/dlq%s: %d %s", query, code, body)
	}
	if got, want := jsonKeys(t, body), []string{"messages", "pagination", "total"}; !slices.Equal(got, want) {
		t.Fatalf("answer keys %v, want %v", got, want)
	}
	var ans dlqAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Messages == nil || ans.Total != len(ans.Messages) {
		t.Fatalf("answer %s: messages must be an array of total elements", body)
	}
	out := make([]dlqMessage, len(ans.Messages))
	for i, raw := range ans.Messages {
		want := dlqMessageKeys
		if bytes.Contains(raw, []byte(`"isEncrypted"`)) {
			want = append(slices.Clone(want), "isEncrypted")
		}
		if got := jsonKeys(t, raw); !slices.Equal(got, want) {
			t.Fatalf("message keys %v, want %v", got, want)
		}
		if err := decodeStrict(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ans, out
}

// deadLetter pops the next message of path (batch=1), acks every message before the one
// named txn as completed, and dead-letters txn with errMsg after failing it fails times.
// It returns the dead-lettered message as delivered.
func (b *broker) deadLetter(t testing.TB, path, group, txn, errMsg string, fails int) popMsg {
	t.Helper()
	for {
		p := b.popMust(t, path)
		m := p.Messages[0]
		switch {
		case m.TransactionID != txn:
			b.ackAll(t, p, "")
			continue
		case fails > 0:
			fails--
			b.ackAll(t, p, "failed")
			continue
		}
		it := ackItemOf(m, "dlq")
		it["error"] = errMsg
		if r := b.ackBatch(t, group, it)[0]; !r.Success || !r.DLQ {
			t.Fatalf("dead-lettering %s: %+v", txn, r)
		}
		return m
	}
}

func TestDeadLetterListing(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("0123456789abcdef", 4)})
	// The dead letters' segments as pushes make them: m0 and m1 in one segment (a dead
	// letter keeps the segment and its frame), m2 encrypted with this broker's key, m3
	// encrypted by a broker with another key, m4 in another queue with a null payload.
	b.push(t, map[string]any{"queue": "dl", "partition": "p", "transactionId": "m0", "payload": json.RawMessage(`{"order": 1, "items": ["a<b"]}`)},
		map[string]any{"queue": "dl", "partition": "p", "transactionId": "m1", "payload": "text"})
	b.setOptions(t, "dl", map[string]any{"encryptionEnabled": true})
	b.push(t, map[string]any{"queue": "dl", "partition": "p", "transactionId": "m2", "payload": map[string]any{"card": "4111"}})
	foreign := startBrokerOn(t, b.DB, map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("9", 64)})
	foreign.push(t, map[string]any{"queue": "dl", "partition": "p", "transactionId": "m3", "payload": map[string]any{"card": "4222"}})
	b.push(t, map[string]any{"queue": "other", "transactionId": "m4", "payload": nil})

	// Dead-lettered one after another (the listing is newest failure first): m0 by g1
	// after one failure, m1 by the queue-mode group, m2 by g1, m3 by g2, m4 by g1.
	dl := "/api/v1/pop/queue/dl/partition/p?batch=1&subscriptionMode=all&consumerGroup="
	start := time.Now()
	m0 := b.deadLetter(t, dl+"g1", "g1", "m0", "boom", 1)
	b.deadLetter(t, "/api/v1/pop/queue/dl/partition/p?batch=1", "", "m1", "", 0)
	b.deadLetter(t, dl+"g1", "g1", "m2", "Retries exhausted", 0)
	b.deadLetter(t, dl+"g2", "g2", "m3", "x", 0)
	b.deadLetter(t, "/api/v1/pop/queue/other?batch=1&subscriptionMode=all&consumerGroup=g1", "g1", "m4", "y", 0)
	end := time.Now()

	t.Run("fields", func(t *testing.T) {
		t.Parallel()
		ans, ms := b.deadLetters(t, "?queue=dl")
		if ans.Pagination.Limit != 100 || ans.Pagination.Offset != 0 || ans.Total != 4 {
			t.Fatalf("pagination %+v total %d, want limit 100 offset 0 total 4", ans.Pagination, ans.Total)
		}
		byTxn := map[string]dlqMessage{}
		ids := map[string]bool{}
		for _, m := range ms {
			byTxn[m.TransactionID] = m
			ids[m.ID] = true
			if m.Queue != "dl" || m.Partition != "p" || m.PartitionID != m0.PartitionID || !microTime.MatchString(m.CreatedAt) ||
				!microTime.MatchString(m.FailedAt) || !anyUUID.MatchString(m.ID) || m.ProducerSub != nil {
				t.Errorf("message %+v", m)
			}
			if failed, err := time.Parse(time.RFC3339Nano, m.FailedAt); err != nil || failed.Before(start.Add(-time.Second)) || failed.After(end.Add(time.Second)) {
				t.Errorf("%s failedAt %s, dead-lettered between %s and %s", m.TransactionID, m.FailedAt,
					start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
			}
		}
		if len(ids) != len(ms) {
			t.Errorf("dead letters share ids: %v", ids)
		}
		// createdAt is the message's, as its pop answered it.
		if d := byTxn["m0"]; d.ConsumerGroup != "g1" || d.ErrorMessage == nil || *d.ErrorMessage != "boom" ||
			d.RetryCount != 1 || d.CreatedAt != m0.CreatedAt || d.IsEncrypted != nil {
			t.Errorf("m0: %+v, want g1, boom, 1 retry, createdAt %s", d, m0.CreatedAt)
		}
		var data any
		if err := json.Unmarshal(byTxn["m0"].Data, &data); err != nil || !dlqJSONEqual(data, map[string]any{"order": 1.0, "items": []any{"a<b"}}) {
			t.Errorf("m0 data %s (%v)", byTxn["m0"].Data, err)
		}
		// No error given: the reason recorded is the default one.
		if m1 := byTxn["m1"]; m1.ConsumerGroup != "__QUEUE_MODE__" || m1.ErrorMessage == nil || *m1.ErrorMessage != "Retries exhausted" ||
			string(m1.Data) != `"text"` || m1.CreatedAt != m0.CreatedAt {
			t.Errorf("m1 (frame 1 of m0's segment): %+v (data %s)", m1, m1.Data)
		}
		if m2 := byTxn["m2"]; string(m2.Data) != `{"card":"4111"}` || m2.IsEncrypted != nil {
			t.Errorf("m2 (encrypted with the broker's key): data %s isEncrypted %v, want the plaintext", m2.Data, m2.IsEncrypted)
		}
		if m3 := byTxn["m3"]; string(m3.Data) != "null" || m3.IsEncrypted == nil || !*m3.IsEncrypted {
			t.Errorf("m3 (another key): data %s isEncrypted %v, want null and true", m3.Data, m3.IsEncrypted)
		}
	})

	tests := []struct {
		name  string
		query string
		want  []string // transaction ids in order
	}{
		{"everything, newest failure first", "", []string{"m4", "m3", "m2", "m1", "m0"}},
		{"one queue", "?queue=dl", []string{"m3", "m2", "m1", "m0"}},
		{"one group", "?consumerGroup=g1", []string{"m4", "m2", "m0"}},
		{"queue and group", "?queue=dl&consumerGroup=g1", []string{"m2", "m0"}},
		{"queue-mode group", "?consumerGroup=__QUEUE_MODE__", []string{"m1"}},
		{"limit and offset", "?limit=2&offset=1", []string{"m3", "m2"}},
		{"offset past the end", "?offset=10", nil},
		{"ignored parameters", "?queue=other&partition=zzz&from=2020-01-01&to=2020-01-02", []string{"m4"}},
		{"unknown queue", "?queue=nope", nil},
		{"empty data is null", "?queue=other", []string{"m4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ans, ms := b.deadLetters(t, tt.query)
			var got []string
			for _, m := range ms {
				got = append(got, m.TransactionID)
				if m.TransactionID == "m4" && string(m.Data) != "null" {
					t.Errorf("m4 has a null payload: data %s, want null", m.Data)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("transaction ids %v, want %v", got, tt.want)
			}
			if q, _ := url.ParseQuery(strings.TrimPrefix(tt.query, "?")); q.Get("limit") == "2" && (ans.Pagination.Limit != 2 || ans.Pagination.Offset != 1) {
				t.Fatalf("pagination %+v, want limit 2 offset 1", ans.Pagination)
			}
		})
	}

	for _, tt := range []struct{ name, query, want string }{
		{"limit not a number", "?limit=abc", "limit must be an integer"},
		{"negative limit", "?limit=-1", "limit must not be negative"},
		{"negative offset", "?offset=-1", "offset must not be negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := b.doBad(t, http.MethodGet, "/api/v1/dlq"+tt.query, nil)
			wantErrorBody(t, resp, body, http.StatusBadRequest, "", tt.want)
		})
	}
}

func dlqQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// dlqJSONEqual compares decoded JSON values.
func dlqJSONEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
