package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/consume"
)

// The reference for appendPop: the answer as json.Marshal wrote it before (the field
// names and order of docs/api.md's pop answer).

// popResponse is the shape of a pop answer.
type popResponse struct {
	Success           bool         `json:"success"`
	Queue             string       `json:"queue"`
	Partition         string       `json:"partition"`
	PartitionID       string       `json:"partitionId"`
	LeaseID           string       `json:"leaseId"`
	ConsumerGroup     string       `json:"consumerGroup"`
	Messages          []popMessage `json:"messages"`
	PartitionsClaimed int          `json:"partitionsClaimed"`
}

type popMessage struct {
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

func popBody(b *consume.Batch) popResponse {
	resp := popResponse{Success: true, Queue: b.Queue, Partition: b.Partition, PartitionID: b.PartitionID,
		LeaseID: b.LeaseID, ConsumerGroup: b.Group, PartitionsClaimed: b.PartitionsClaimed,
		Messages: make([]popMessage, len(b.Messages))}
	for i := range b.Messages {
		m := &b.Messages[i]
		pm := popMessage{ID: m.ID, TransactionID: m.TransactionID, Data: m.Data,
			CreatedAt: m.CreatedAt.UTC().Format(timeFormat), PartitionID: m.PartitionID, Partition: m.Partition,
			LeaseID: m.LeaseID, ConsumerGroup: m.Group, DeliveryAttempt: m.Attempt}
		if m.TraceID != "" {
			pm.TraceID = &m.TraceID
		}
		if m.ProducerSub != "" {
			pm.ProducerSub = &m.ProducerSub
		}
		resp.Messages[i] = pm
	}
	return resp
}

// popBatch is a batch whose messages take their fields from fields, in turn.
func popBatch(n int, fields ...string) *consume.Batch {
	at := time.Date(2026, 12, 2, 3, 40, 0, 123456789, time.FixedZone("x", 3600))
	f := func(i int) string { return fields[i%len(fields)] }
	b := &consume.Batch{Queue: f(0), Partition: f(1), PartitionID: "0198a0e2-7a3c-7000-8000-000000000001",
		LeaseID: "0198a0e2-7a3c-7000-8000-000000000002", Group: f(2), PartitionsClaimed: 1 + n%3}
	for i := range n {
		b.Messages = append(b.Messages, consume.Message{ID: "0198a0e2-7a3c-7000-8000-00000000000a", TransactionID: f(i + 3),
			TraceID: f(i + 4), Data: json.RawMessage(`{"i":1}`), ProducerSub: f(i + 5), CreatedAt: at.Add(time.Duration(i) * time.Second),
			PartitionID: b.PartitionID, Partition: f(i + 6), LeaseID: b.LeaseID, Group: b.Group, Attempt: i})
	}
	return b
}

// checkPopAnswer fails unless appendPop's answer for b decodes to what json.Marshal's
// does, byte for byte when exact (no HTML escapes involved).
func checkPopAnswer(t *testing.T, b *consume.Batch, exact bool) {
	t.Helper()
	want, wantErr := json.Marshal(popBody(b))
	got, err := appendPop(nil, b)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("error %v, json.Marshal's %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if exact && !bytes.Equal(got, want) {
		t.Fatalf("answer\n%s\njson.Marshal\n%s", got, want)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("answer %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("answer\n%s\ndecodes otherwise than json.Marshal's\n%s", got, want)
	}
}

func TestAppendPopMatchesMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		batch  *consume.Batch
		exact  bool
		mutate func(b *consume.Batch)
	}{
		{name: "usual", batch: popBatch(3, "q", "p1", "__QUEUE_MODE__", "tx-1"), exact: true},
		{name: "no messages", batch: popBatch(0, "q"), exact: true},
		{name: "empty optional fields are null", batch: popBatch(2, "q", "", "g", "t", "", ""), exact: true},
		{name: "escapes", batch: popBatch(4, "q\"\\", "p\n\t\x01", "g\u2028", "é-ü", "\xff\xfe", "a\u2029b"), exact: true},
		{name: "HTML characters", batch: popBatch(2, "<q>", "&p", "g>", "t<&>")},
		{name: "payload with whitespace", batch: popBatch(2, "q"), exact: true, mutate: func(b *consume.Batch) {
			b.Messages[0].Data = json.RawMessage(" {\"a\" : [1, 2],\n\"s\":\"x y\"} ")
			b.Messages[1].Data = json.RawMessage("\t\"str\"\r\n")
		}},
		{name: "payload kinds", batch: popBatch(5, "q"), exact: true, mutate: func(b *consume.Batch) {
			for i, d := range []string{`null`, `true`, `-1.5e3`, `"é\u00e9\\"`, `[{},[]]`} {
				b.Messages[i].Data = json.RawMessage(d)
			}
		}},
		{name: "payload with HTML", batch: popBatch(1, "q"), mutate: func(b *consume.Batch) {
			b.Messages[0].Data = json.RawMessage(`{"h":"<b>&amp;</b>"}`)
		}},
		{name: "nil payload", batch: popBatch(1, "q"), exact: true, mutate: func(b *consume.Batch) { b.Messages[0].Data = nil }},
		{name: "empty payload fails", batch: popBatch(1, "q"), mutate: func(b *consume.Batch) { b.Messages[0].Data = json.RawMessage{} }},
		{name: "invalid payload fails", batch: popBatch(2, "q"), mutate: func(b *consume.Batch) { b.Messages[1].Data = json.RawMessage(`{"a":`) }},
		{name: "invalid payload with spaces fails", batch: popBatch(1, "q"), mutate: func(b *consume.Batch) {
			b.Messages[0].Data = json.RawMessage(`{"a": }`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.mutate != nil {
				tt.mutate(tt.batch)
			}
			checkPopAnswer(t, tt.batch, tt.exact)
		})
	}
}

// FuzzAppendPop: for any names and payload, appendPop's answer decodes like json.Marshal's.
func FuzzAppendPop(f *testing.F) {
	f.Add("q", "p", "g", "tx", `{"a":1}`)
	f.Add("<&>", "\u2028", "\x00", "\xff", " [1, \"<\"] ")
	f.Fuzz(func(t *testing.T, queue, partition, group, txn, data string) {
		b := popBatch(2, queue, partition, group, txn)
		b.Messages[1].Data = json.RawMessage(data)
		exact := !strings.ContainsAny(queue+partition+group+txn+data, "<>&")
		checkPopAnswer(t, b, exact)
	})
}

// BenchmarkPopAnswer: the broker's cost of encoding one pop answer of 100 messages of
// 110-byte payloads.
func BenchmarkPopAnswer(b *testing.B) {
	batch := popBatch(100, "bench-queue", "p17", "__QUEUE_MODE__", "1k2j3h4g5f-123456")
	for i := range batch.Messages {
		batch.Messages[i].Data = json.RawMessage(`{"seq":12345,"payload":"` + strings.Repeat("x", 80) + `"}`)
		batch.Messages[i].TraceID = ""
		batch.Messages[i].ProducerSub = ""
	}
	b.Run("appendPop", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = appendPop(buf[:0], batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(popBody(batch)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
