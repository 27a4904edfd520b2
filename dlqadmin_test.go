package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/segment"
)

// adminPartitionID returns the id of queue/partition (which must exist).
func (d *pushLogDB) adminPartitionID(t testing.TB, queue, partition string) string {
	t.Helper()
	var id string
	if err := d.pool.QueryRow(context.Background(), `SELECT p.id::text FROM queen.log_partitions p
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND p.name = $2`, queue, partition).Scan(&id); err != nil {
		t.Fatalf("partition %s/%s: %v", queue, partition, err)
	}
	return id
}

func TestDeleteQueueRoute(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)

	for _, tt := range []struct{ name, queue string }{
		{"plain name", "gone"},
		{"name with a slash and a space", "team a/gone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range []string{"p1", "p2"} {
				for _, txn := range []string{"t0", "t1"} {
					a.push(t, map[string]any{"queue": tt.queue, "partition": p, "transactionId": txn, "payload": 1})
				}
			}
			pids := []string{db.adminPartitionID(t, tt.queue, "p1"), db.adminPartitionID(t, tt.queue, "p2")}
			for _, pid := range pids {
				db.exec(t, `INSERT INTO queen.log_consumers (partition_id, consumer_group, committed, batch_end) VALUES ($1, 'g', 0, 0)`, pid)
				db.exec(t, `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id, retry_count, created_at, frame_index, blob)
					SELECT p.queue_id, p.id, 'g', 0, 't0', 0, now(), 0, '\x01' FROM queen.log_partitions p WHERE p.id = $1`, pid)
			}
			path := "/api/v1/resources/queues/" + url.PathEscape(tt.queue)

			code, body := a.do(t, http.MethodDelete, path, "")
			if code != http.StatusOK || string(body) != `{"deleted":true,"existed":true,"queue":`+dlqQuote(tt.queue)+`}` {
				t.Fatalf("DELETE: %d %s", code, body)
			}
			for _, table := range []string{"queen.log_segments", "queen.log_txns", "queen.log_consumers", "queen.dlq", "queen.log_partitions"} {
				col := "partition_id"
				if table == "queen.log_partitions" {
					col = "id"
				}
				if n := db.count(t, `SELECT count(*) FROM `+table+` WHERE `+col+` = ANY($1::uuid[])`, pids); n != 0 {
					t.Errorf("%s keeps %d rows of the deleted queue", table, n)
				}
			}
			if n := db.count(t, `SELECT count(*) FROM queen.queues WHERE name = $1`, tt.queue); n != 0 {
				t.Fatal("the queue row is still there")
			}

			code, body = a.do(t, http.MethodDelete, path, "")
			want := `{"deleted":false,"existed":false,"queue":` + dlqQuote(tt.queue) + `,"message":"Queue not found, nothing was deleted"}`
			if code != http.StatusOK || string(body) != want {
				t.Fatalf("second DELETE: %d %s, want 200 %s", code, body, want)
			}

			// The name starts over: the old transaction ids are no duplicates, offsets
			// start at 0 again.
			r := a.push(t, map[string]any{"queue": tt.queue, "partition": "p1", "transactionId": "t1", "payload": 1})
			if r[0].Status != "queued" || *r[0].Offset != 0 {
				t.Fatalf("push after deletion: %+v, want queued at 0", r[0])
			}
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

func (a *testApp) deadLetters(t testing.TB, query string) (dlqAnswer, []dlqMessage) {
	t.Helper()
	code, body := a.do(t, http.MethodGet, "/api/v1/dlq"+query, "")
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
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return ans, out
}

func TestDeadLetterListing(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("0123456789abcdef", 4)
	a := startApp(t, map[string]string{"QUEEN_ENCRYPTION_KEY": key})
	db := openPushLogDB(t, a)
	codec, err := segment.NewCodec(3)
	if err != nil {
		t.Fatal(err)
	}
	keyBytes := a.Config.EncryptionKeyBytes()
	sealer, err := envelope.New(keyBytes)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := envelope.New(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	seal := func(s *envelope.Sealer, p string) []byte {
		env, err := s.Seal([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	// The dead letters' segment copy, as the ack path stores it: several frames, the dead
	// one at frame_index.
	blob := codec.Encode([]segment.Frame{
		{TransactionID: "m0", Payload: []byte(`{"order": 1, "items": ["a<b"]}`)},
		{TransactionID: "m1", Payload: []byte(`"text"`), ProducerSub: "svc-orders"},
		{TransactionID: "m2", Payload: seal(sealer, `{"card":"4111"}`), Encrypted: true},
		{TransactionID: "m3", Payload: seal(foreign, `{"card":"4222"}`), Encrypted: true},
		{TransactionID: "m4"},
	})
	a.push(t, map[string]any{"queue": "dl", "partition": "p", "payload": 1})
	a.push(t, map[string]any{"queue": "other", "payload": 1})
	pid, otherPid := db.adminPartitionID(t, "dl", "p"), db.adminPartitionID(t, "other", "Default")
	created := time.Date(2026, 4, 26, 10, 59, 28, 267966000, time.UTC)
	failed := time.Date(2026, 4, 26, 11, 0, 0, 0, time.UTC)
	rows := []struct {
		pid, group, txn string
		frame           int
		errMsg          *string
	}{
		{pid, "g1", "m0", 0, dlqPtr("boom")},
		{pid, "__QUEUE_MODE__", "m1", 1, nil},
		{pid, "g1", "m2", 2, dlqPtr("Retries exhausted")},
		{pid, "g2", "m3", 3, dlqPtr("x")},
		{otherPid, "g1", "m4", 4, dlqPtr("y")},
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		if err := db.pool.QueryRow(context.Background(), `INSERT INTO queen.dlq (queue_id, partition_id, consumer_group,
			msg_offset, transaction_id, error_message, retry_count, created_at, failed_at, frame_index, blob)
			SELECT p.queue_id, p.id, $2, $3, $4, $5, $6, $7, $8, $9, $10 FROM queen.log_partitions p WHERE p.id = $1
			RETURNING id::text`, r.pid, r.group, int64(i), r.txn, r.errMsg, i+1, created,
			failed.Add(time.Duration(i)*time.Second), r.frame, blob).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("fields", func(t *testing.T) {
		t.Parallel()
		ans, ms := a.deadLetters(t, "?queue=dl")
		if ans.Pagination.Limit != 100 || ans.Pagination.Offset != 0 || ans.Total != 4 {
			t.Fatalf("pagination %+v total %d, want limit 100 offset 0 total 4", ans.Pagination, ans.Total)
		}
		byTxn := map[string]dlqMessage{}
		for _, m := range ms {
			byTxn[m.TransactionID] = m
			if m.Queue != "dl" || m.Partition != "p" || m.PartitionID != pid || !microTime.MatchString(m.CreatedAt) ||
				!microTime.MatchString(m.FailedAt) {
				t.Errorf("message %+v", m)
			}
		}
		m0 := byTxn["m0"]
		if m0.ID != ids[0] || m0.ConsumerGroup != "g1" || m0.ErrorMessage == nil || *m0.ErrorMessage != "boom" ||
			m0.RetryCount != 1 || m0.CreatedAt != "2026-04-26T10:59:28.267966Z" || m0.FailedAt != "2026-04-26T11:00:00.000000Z" ||
			m0.ProducerSub != nil || m0.IsEncrypted != nil {
			t.Errorf("m0: %+v", m0)
		}
		var data any
		if err := json.Unmarshal(m0.Data, &data); err != nil || !dlqJSONEqual(data, map[string]any{"order": 1.0, "items": []any{"a<b"}}) {
			t.Errorf("m0 data %s (%v)", m0.Data, err)
		}
		if m1 := byTxn["m1"]; m1.ConsumerGroup != "__QUEUE_MODE__" || m1.ErrorMessage != nil || string(m1.Data) != `"text"` ||
			m1.ProducerSub == nil || *m1.ProducerSub != "svc-orders" {
			t.Errorf("m1: %+v (data %s)", m1, m1.Data)
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
			ans, ms := a.deadLetters(t, tt.query)
			var got []string
			for _, m := range ms {
				got = append(got, m.TransactionID)
				if m.TransactionID == "m4" && string(m.Data) != "null" {
					t.Errorf("m4 has an empty payload: data %s, want null", m.Data)
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
		{"negative limit", "?limit=-1", "limit must be between 0 and 10000"},
		{"limit too large", "?limit=10001", "limit must be between 0 and 10000"},
		{"negative offset", "?offset=-1", "offset must not be negative"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := sendRaw(t, a, http.MethodGet, "/api/v1/dlq"+tt.query, nil, 0)
			wantErrorBody(t, resp, body, http.StatusBadRequest, "", tt.want)
		})
	}
}

func dlqPtr[T any](v T) *T { return &v }

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
