package load

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// popAnswer renders a pop answer of n messages as the broker writes it.
func popAnswer(n int) string {
	var b strings.Builder
	b.WriteString(`{"success":true,"queue":"q","partition":"p1","partitionId":"0b9f8a8e-1111-4c1e-9a5e-6d1d1f2a3b4c",` +
		`"leaseId":"5e0c7c1a-2222-4c1e-9a5e-6d1d1f2a3b4c","consumerGroup":"__QUEUE_MODE__","messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"01970000-0000-7000-8000-%012d","transactionId":"tag-%d","traceId":null,`+
			`"data":{"i":%d,"s":"x\"y","a":[1,2.5e3,null,true]},"producerSub":null,"createdAt":"2026-12-02T03:40:00.123456Z",`+
			`"partitionId":"0b9f8a8e-1111-4c1e-9a5e-6d1d1f2a3b4c","partition":"p1",`+
			`"leaseId":"5e0c7c1a-2222-4c1e-9a5e-6d1d1f2a3b4c","consumerGroup":"__QUEUE_MODE__","deliveryAttempt":%d}`, i, i, i, i%3+1)
	}
	b.WriteString(`],"partitionsClaimed":1}`)
	return b.String()
}

func TestScanBatchMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		handled bool // the scanner decodes it (else the caller falls back)
	}{
		{"broker answer", popAnswer(3), true},
		{"no messages", `{"success":true,"leaseId":"l","consumerGroup":"g","messages":[]}`, true},
		{"whitespace", " {\n \"leaseId\" : \"l\" ,\t\"messages\" : [ { \"id\" : \"a\" , \"data\" : [ 1 , { } ] } ] }\n", true},
		{"null fields", `{"leaseId":null,"messages":[{"transactionId":null,"data":null,"deliveryAttempt":null}]}`, true},
		{"null messages", `{"leaseId":"l","messages":null}`, true},
		{"string data", `{"messages":[{"data":"a\\b\u00e9"}]}`, true},
		{"unknown keys skipped", `{"extra":{"leaseId":"inner"},"messages":[{"other":[{"x":"\""}],"id":"a"}]}`, true},
		{"non-ASCII value", `{"messages":[{"transactionId":"é-ü"}]}`, true},
		{"escape in a value", `{"messages":[{"transactionId":"a\"b"}]}`, false},
		{"escape in a key", `{"messages":[{"transaction\u0049d":"a"}]}`, false},
		{"key in another case", `{"LeaseID":"l","messages":[]}`, false},
		{"message key in another case", `{"messages":[{"TransactionID":"a"}]}`, false},
		{"invalid UTF-8", "{\"messages\":[{\"transactionId\":\"a\xffb\"}]}", false},
		{"float attempt", `{"messages":[{"deliveryAttempt":1.5}]}`, false},
		{"string attempt", `{"messages":[{"deliveryAttempt":"1"}]}`, false},
		{"repeated messages", `{"messages":[{"id":"a"}],"messages":[{"id":"b"}]}`, false},
		{"not an object", `[1,2]`, false},
		{"truncated", popAnswer(2)[:200], false},
		{"trailing garbage", `{"messages":[]} x`, false},
		{"unterminated string", `{"messages":[{"data":"abc}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got Batch
			ok := scanBatch([]byte(tt.body), &got)
			if ok != tt.handled {
				t.Fatalf("handled = %v, want %v", ok, tt.handled)
			}
			if !ok {
				return
			}
			var want Batch
			if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
				t.Fatalf("encoding/json refuses what the scanner took: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("scanned %+v\nencoding/json %+v", got, want)
			}
		})
	}
}

func TestScanBatchOwnsItsBytes(t *testing.T) {
	t.Parallel()
	body := []byte(popAnswer(2))
	var b Batch
	if !scanBatch(body, &b) {
		t.Fatal("not handled")
	}
	want := fmt.Sprint(b)
	for i := range body { // the client reuses its buffer for the next answer
		body[i] = 'z'
	}
	if got := fmt.Sprint(b); got != want {
		t.Fatalf("the batch changed with the buffer: %s", got)
	}
}

func TestScanAckRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		refused int
		handled bool
	}{
		{"broker answer", `[{"index":0,"transactionId":"a","success":true,"error":null,"leaseReleased":true,"dlq":false,"noop":false},` +
			`{"index":1,"transactionId":"b","success":false,"error":"invalid or expired lease","leaseReleased":false,"dlq":false,"noop":false}]`, 1, true},
		{"empty", `[]`, 0, true},
		{"missing success", `[{"index":0}]`, 1, true},
		{"null success", `[{"success":null}]`, 1, true},
		{"escaped error", `[{"success":true,"error":"a\"b"}]`, 0, true},
		{"success in another case", `[{"Success":true}]`, 0, false},
		{"not a bool", `[{"success":1}]`, 0, false},
		{"null item", `[null]`, 0, false},
		{"not an array", `{"success":true}`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			refused, ok := scanAckRefused([]byte(tt.body))
			if ok != tt.handled || (ok && refused != tt.refused) {
				t.Fatalf("got %d, %v; want %d, %v", refused, ok, tt.refused, tt.handled)
			}
		})
	}
}

// FuzzScanBatch: whatever the scanner decodes, encoding/json decodes the same way.
func FuzzScanBatch(f *testing.F) {
	f.Add(popAnswer(2))
	f.Add(`{"messages":[{"data":null,"deliveryAttempt":-3}],"leaseId":"x"}`)
	f.Add(`{"messages":[{"data":{"a":[{}]}}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var got Batch
		if !scanBatch([]byte(body), &got) {
			return
		}
		var want Batch
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("encoding/json refuses what the scanner took: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("scanned %+v\nencoding/json %+v", got, want)
		}
	})
}

// BenchmarkDecodePopAnswer: the load tool's cost of reading one 100-message pop answer.
func BenchmarkDecodePopAnswer(b *testing.B) {
	body := []byte(popAnswer(100))
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var bt Batch
			if !scanBatch(body, &bt) {
				b.Fatal("not handled")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var bt Batch
			if err := json.Unmarshal(body, &bt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzScanAckRefused: whatever the scanner counts, encoding/json counts the same.
func FuzzScanAckRefused(f *testing.F) {
	f.Add(`[{"success":true,"error":null},{"success":false,"error":"x"}]`)
	f.Add(`[{"index":0},{"success":null}]`)
	f.Fuzz(func(t *testing.T, body string) {
		refused, ok := scanAckRefused([]byte(body))
		if !ok {
			return
		}
		var rs []struct {
			Success bool `json:"success"`
		}
		if err := json.Unmarshal([]byte(body), &rs); err != nil {
			t.Fatalf("encoding/json refuses what the scanner took: %v", err)
		}
		want := 0
		for _, r := range rs {
			if !r.Success {
				want++
			}
		}
		if refused != want {
			t.Fatalf("scanned %d refused, encoding/json %d", refused, want)
		}
	})
}

func TestAppendQuoted(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", `""`},
		{"0198a0e2-7a3c-7000-8000-000000000001", `"0198a0e2-7a3c-7000-8000-000000000001"`},
		{"<a&b>", `"<a&b>"`},
		{"q\"\\", `"q\"\\"`},
		{"\x00\n", `"\u0000\n"`},
		{"é", `"é"`},
		{"\xff", `"\ufffd"`},
	}
	for _, tt := range tests {
		got := string(appendQuoted([]byte("x"), tt.in))
		if got != "x"+tt.want {
			t.Errorf("appendQuoted(%q) = %s, want x%s", tt.in, got, tt.want)
		}
	}
}
