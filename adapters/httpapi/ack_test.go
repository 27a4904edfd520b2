package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/ports"
)

// ackResult is one item of an ack answer, as json.Marshal wrote it before
// appendAckResults (the reference of its test).
type ackResult struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
	Noop          bool    `json:"noop"`
}

// downStore is a ConsumeStore whose database is away.
type downStore struct{}

func (downStore) Pop(context.Context, ports.PopRequest) ([]ports.Claim, []ports.Verdict, error) {
	return nil, nil, fmt.Errorf("pop: %w", ports.ErrUnavailable)
}

func (downStore) Ack(context.Context, []ports.AckItem) ([]ports.AckResult, error) {
	return nil, fmt.Errorf("ack: %w", ports.ErrUnavailable)
}

func (downStore) Release(context.Context, string, string, bool, []ports.Claim) error {
	return fmt.Errorf("release: %w", ports.ErrUnavailable)
}

func (downStore) ExtendLease(context.Context, string, time.Duration) (int, time.Time, error) {
	return 0, time.Time{}, fmt.Errorf("extend: %w", ports.ErrUnavailable)
}

// An ack the database did not take still answers 200 with one failed item per input
// (docs/api.md §5.3): the lease expires and the messages redeliver.
func TestAckDatabaseFailureAnswersPerItem(t *testing.T) {
	t.Parallel()
	h := New(Services{DB: pinger{}, Consume: consume.New(downStore{}, nil, consume.Options{})}, Options{})
	body := `{"acknowledgments":[
		{"transactionId":"t1","partitionId":"0198a0e2-7a3c-7000-8000-000000000001","leaseId":"0198a0e2-7a3c-7000-8000-000000000002"},
		{"transactionId":"t2"}]}`
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/ack/batch", strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d, body %s", rec.Code, rec.Body)
	}
	var res []ackResult
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || len(res) != 2 {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	want := []string{"ack flush failed; lease will expire and redeliver", "partitionId is required"}
	for i, r := range res {
		if r.Index != i || r.Success || r.Error == nil || *r.Error != want[i] || r.LeaseReleased {
			t.Fatalf("item %d: %+v, want error %q", i, r, want[i])
		}
	}
	if res[0].TransactionID != "t1" || res[1].TransactionID != "t2" {
		t.Fatalf("transaction ids %+v", res)
	}
}

// marshalAckResults is the ack answer as json.Marshal wrote it before appendAckResults.
func marshalAckResults(in []consume.AckInput, res []ports.AckResult) []byte {
	out := make([]ackResult, len(in))
	for i, rr := range res {
		out[i] = ackResult{Index: i, TransactionID: in[i].TransactionID, Success: rr.OK,
			LeaseReleased: rr.LeaseReleased, DLQ: rr.DLQ, Noop: rr.Noop}
		if !rr.OK {
			out[i].Error = &res[i].Error
		}
	}
	b, _ := json.Marshal(out)
	return b
}

func TestAppendAckResultsMatchesMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    []consume.AckInput
		res   []ports.AckResult
		exact bool // no HTML escapes involved: the same bytes
	}{
		{"none", nil, nil, true},
		{"completed", []consume.AckInput{{TransactionID: "t1"}, {TransactionID: "t2"}},
			[]ports.AckResult{{OK: true, LeaseReleased: true}, {OK: true, Noop: true}}, true},
		{"failures", []consume.AckInput{{TransactionID: "a\"b\n"}, {TransactionID: "é\xff"}},
			[]ports.AckResult{{Error: "invalid or expired lease"}, {OK: true, DLQ: true}}, true},
		{"empty error text", []consume.AckInput{{}}, []ports.AckResult{{}}, true},
		{"HTML", []consume.AckInput{{TransactionID: "<t>&"}}, []ports.AckResult{{Error: "a<b"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, want := appendAckResults(nil, tt.in, tt.res), marshalAckResults(tt.in, tt.res)
			if tt.exact && !bytes.Equal(got, want) {
				t.Fatalf("answer\n%s\njson.Marshal\n%s", got, want)
			}
			var g, w []ackResult
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("answer %s: %v", got, err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("answer\n%s\ndecodes otherwise than\n%s", got, want)
			}
		})
	}
}

// checkFastAck fails unless fastAckBatch either declines body or decodes it as
// encoding/json does; it returns whether it took it.
func checkFastAck(t *testing.T, body string) bool {
	t.Helper()
	var got ackBatchBody
	if !fastAckBatch([]byte(body), &got) {
		return false
	}
	var want ackBatchBody
	if err := json.Unmarshal([]byte(body), &want); err != nil {
		t.Fatalf("encoding/json refuses what the fast path took: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path %+v\nencoding/json %+v", got, want)
	}
	return true
}

func TestFastAckBatch(t *testing.T) {
	t.Parallel()
	item := `{"transactionId":"t1","partitionId":"0198a0e2-7a3c-7000-8000-000000000001","leaseId":"0198a0e2-7a3c-7000-8000-000000000002","status":"completed"}`
	tests := []struct {
		name string
		body string
		took bool
	}{
		{"usual", `{"consumerGroup":"g","acknowledgments":[` + item + `,` + item + `]}`, true},
		{"no group", `{"acknowledgments":[` + item + `]}`, true},
		{"whitespace", " {\n\"acknowledgments\" : [ {\"transactionId\" : \"t\" , \"error\":\"e\"} ] ,\"consumerGroup\":null}\t", true},
		{"every field", `{"acknowledgments":[{"transactionId":"t","partitionId":"p","status":"failed","consumerGroup":"g","leaseId":"l","error":"boom"}]}`, true},
		{"null fields", `{"consumerGroup":null,"acknowledgments":[{"transactionId":null,"status":null}]}`, true},
		{"null acknowledgments", `{"acknowledgments":null}`, true},
		{"missing acknowledgments", `{"consumerGroup":"g"}`, true},
		{"empty acknowledgments", `{"acknowledgments":[]}`, true},
		{"other keys", `{"x":{"acknowledgments":1},"acknowledgments":[{"y":[1,"\""],"transactionId":"t"}]}`, true},
		{"non-ASCII", `{"acknowledgments":[{"transactionId":"é-ü"}]}`, true},
		{"escaped value", `{"acknowledgments":[{"transactionId":"a\"b"}]}`, false},
		{"escaped key", `{"acknowledgments":[{"transaction\u0049d":"a"}]}`, false},
		{"key in another case", `{"Acknowledgments":[]}`, false},
		{"item key in another case", `{"acknowledgments":[{"TransactionID":"t"}]}`, false},
		{"invalid UTF-8", "{\"acknowledgments\":[{\"transactionId\":\"a\xffb\"}]}", false},
		{"number value", `{"acknowledgments":[{"transactionId":1}]}`, false},
		{"null item", `{"acknowledgments":[null]}`, false},
		{"repeated acknowledgments", `{"acknowledgments":[` + item + `],"acknowledgments":[]}`, false},
		{"not an object", `[]`, false},
		{"invalid JSON", `{"acknowledgments":[`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if took := checkFastAck(t, tt.body); took != tt.took {
				t.Fatalf("took = %v, want %v", took, tt.took)
			}
		})
	}
}

// FuzzFastAckBatch: whatever fastAckBatch takes, encoding/json decodes the same way.
func FuzzFastAckBatch(f *testing.F) {
	f.Add(`{"consumerGroup":"g","acknowledgments":[{"transactionId":"t","partitionId":"p","leaseId":"l","status":"completed"}]}`)
	f.Add(`{"acknowledgments":[{"transactionId":null,"x":[{}]}],"consumerGroup":null}`)
	f.Fuzz(func(t *testing.T, body string) { checkFastAck(t, body) })
}

// FuzzAppendAckResults: the answer decodes like json.Marshal's for any texts.
func FuzzAppendAckResults(f *testing.F) {
	f.Add("t", "e", true, false)
	f.Add("<\u2028\xff", "\"", false, true)
	f.Fuzz(func(t *testing.T, txn, errText string, ok, released bool) {
		in := []consume.AckInput{{TransactionID: txn}, {TransactionID: errText}}
		res := []ports.AckResult{{OK: ok, Error: errText, LeaseReleased: released}, {OK: !ok, Error: txn, Noop: released}}
		var g, w []ackResult
		if err := json.Unmarshal(appendAckResults(nil, in, res), &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(marshalAckResults(in, res), &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%+v, json.Marshal's %+v", g, w)
		}
	})
}

// BenchmarkAckBody: the broker's cost of reading one ack/batch body of 100 items and
// writing its answer.
func BenchmarkAckBody(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"consumerGroup":"__QUEUE_MODE__","acknowledgments":[`)
	in := make([]consume.AckInput, 100)
	res := make([]ports.AckResult, 100)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"transactionId":"mj3k2l-%d","partitionId":"0198a0e2-7a3c-7000-8000-000000000001",`+
			`"leaseId":"0198a0e2-7a3c-7000-8000-000000000002","status":"completed"}`, i)
		in[i] = consume.AckInput{TransactionID: fmt.Sprintf("mj3k2l-%d", i)}
		res[i] = ports.AckResult{OK: true, LeaseReleased: i == 0}
	}
	sb.WriteString(`]}`)
	body := []byte(sb.String())
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var out []byte
		for b.Loop() {
			var v ackBatchBody
			if !fastAckBatch(body, &v) {
				b.Fatal("declined")
			}
			out = appendAckResults(out[:0], in, res)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v ackBatchBody
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
			_ = marshalAckResults(in, res)
		}
	})
}
