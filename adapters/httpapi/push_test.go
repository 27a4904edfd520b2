package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/push"
)

// queuedPusher answers every item queued, at once, as the HTTP floor does
// (bench/floor) without its wait.
type queuedPusher struct{}

func (queuedPusher) Push(_ context.Context, _, _ string, items []push.Item) []push.Result {
	out := make([]push.Result, len(items))
	for i, it := range items {
		id := [16]byte{0x01, 0x93, 15: byte(i)}
		txn := it.TransactionID
		if txn == "" {
			txn = uuid.UUID(id).String()
		}
		out[i] = push.Result{Index: i, MessageID: id, TransactionID: txn, Queue: it.Queue, Partition: it.Partition,
			Status: push.StatusQueued, Offset: int64(i), HasOffset: true}
	}
	return out
}

func (queuedPusher) Transaction(context.Context, string, string, []push.TxnOp, string) ([]push.TxnResult, error) {
	return nil, push.ErrNoTransactions
}

func (queuedPusher) Stats() push.Stats { return push.Stats{} }

// TestPushAnswerShape: the push answer, byte for byte, for the common shapes of item.
func TestPushAnswerShape(t *testing.T) {
	t.Parallel()
	h := New(Services{Push: queuedPusher{}, DB: pinger{}}, Options{Logger: slog.New(slog.DiscardHandler)})
	body := `{"items":[{"queue":"q","partition":"p","payload":{"a":1}},{"queue":"q<&>","transactionId":"t\u00e9\"","payload":2}]}`
	req := httptest.NewRequest(http.MethodPost, "/api/v1/push", strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	want := `[{"index":0,"message_id":"01930000-0000-0000-0000-000000000000","transaction_id":"01930000-0000-0000-0000-000000000000","queueName":"q","status":"queued","offset":0},` +
		`{"index":1,"message_id":"01930000-0000-0000-0000-000000000001","transaction_id":"té\"","queueName":"q<&>","status":"queued","offset":1}]`
	if rec.Code != http.StatusCreated || rec.Body.String() != want {
		t.Fatalf("%d %s\nwant %s", rec.Code, rec.Body, want)
	}
	if ct, cl := rec.Header().Get("Content-Type"), rec.Header().Get("Content-Length"); ct != "application/json" || cl != strconv.Itoa(len(want)) {
		t.Fatalf("Content-Type %q, Content-Length %q (body %d bytes)", ct, cl, rec.Body.Len())
	}
	var v []map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || len(v) != 2 {
		t.Fatalf("answer is not a JSON array of 2: %v", err)
	}
}

// discardWriter is a ResponseWriter that keeps nothing but its header.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkPushHandler is the push route of a single-message push behind the router,
// with a use case that answers at once: what the broker's HTTP layer allocates and
// spends per request beyond net/http itself.
func BenchmarkPushHandler(b *testing.B) {
	h := New(Services{Push: queuedPusher{}, DB: pinger{}}, Options{Logger: slog.New(slog.DiscardHandler)})
	body := []byte(`{"items":[{"queue":"bench-push","partition":"p417","payload":{"seq":17,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}]}`)
	req := httptest.NewRequest(http.MethodPost, "/api/v1/push", nil)
	rd := bytes.NewReader(body)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		req.Body, req.ContentLength = io.NopCloser(rd), int64(len(body))
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

func TestAppendUUID(t *testing.T) {
	t.Parallel()
	for range 100 {
		id := uuid.New()
		if got := string(appendUUID([]byte("x"), id)); got != "x"+id.String() {
			t.Fatalf("appendUUID = %s, want %s", got, id)
		}
	}
}

// TestPushLimits: a body over MaxBodyBytes, announced or not, and a push of more items
// than MaxPushItems are 413s that name the limit and close the connection, so that
// net/http does not wait for the rest of a body the client may never finish.
func TestPushLimits(t *testing.T) {
	t.Parallel()
	h := New(Services{Push: queuedPusher{}, DB: pinger{}},
		Options{MaxBodyBytes: 120, MaxPushItems: 2, Logger: slog.New(slog.DiscardHandler)})
	items := func(n int) string {
		it := make([]string, n)
		for i := range it {
			it[i] = `{"queue":"q","payload":1}`
		}
		return `{"items":[` + strings.Join(it, ",") + `]}`
	}
	tests := []struct {
		name string
		body io.Reader
		want string
	}{
		{"body over the limit", strings.NewReader(items(5)), "120-byte limit (QUEEN_MAX_BODY_BYTES)"},
		{"chunked body over the limit", io.MultiReader(strings.NewReader(items(5))), "120-byte limit (QUEEN_MAX_BODY_BYTES)"},
		{"too many items", strings.NewReader(items(3)), "3 items exceeds the 2-item limit (QUEEN_MAX_PUSH_ITEMS)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/push", tt.body))
			var e struct{ Error string }
			if rec.Code != http.StatusRequestEntityTooLarge || json.Unmarshal(rec.Body.Bytes(), &e) != nil ||
				!strings.Contains(e.Error, tt.want) {
				t.Fatalf("%d %s, want 413 naming %q", rec.Code, rec.Body, tt.want)
			}
			if got := rec.Header().Get("Connection"); got != "close" {
				t.Fatalf("Connection %q, want close", got)
			}
		})
	}
}
