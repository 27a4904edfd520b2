package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// serveLikeBroker runs h under NewServer's settings with the given ReadTimeout.
func serveLikeBroker(t *testing.T, readTimeout time.Duration, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config = NewServer("", h)
	srv.Config.ReadTimeout = readTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestReadTimeoutLeavesLongHandlersAlone: ReadTimeout bounds the arrival of a request,
// not its handling. A handler that runs well past it once the request is read (a pop
// that waits, a slow commit) must not see its request cancelled, with a body or without.
func TestReadTimeoutLeavesLongHandlersAlone(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	srv := serveLikeBroker(t, timeout, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := readBody(r, 1<<20); err != nil {
			writeError(w, slog.Default(), err)
			return
		}
		select {
		case <-r.Context().Done():
			http.Error(w, "cancelled", http.StatusServiceUnavailable)
		case <-time.After(10 * timeout):
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	tests := []struct {
		name string
		body io.Reader
	}{
		{"content length", strings.NewReader(`{"a":1}`)},
		{"chunked", io.MultiReader(strings.NewReader(`{"a":`), strings.NewReader(`1}`))},
		{"no body", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL, "application/json", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d: the request was cancelled after it was read", resp.StatusCode)
			}
		})
	}
}

// TestReadTimeoutCutsOffATrickledBody: a body still arriving at the read timeout is
// answered 408, JSON, with the connection closed.
func TestReadTimeoutCutsOffATrickledBody(t *testing.T) {
	t.Parallel()
	srv := serveLikeBroker(t, 50*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := readBody(r, 1<<20); err != nil {
			writeError(w, slog.Default(), err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte(`{"a":`)) }() // then nothing more
	resp, err := http.Post(srv.URL, "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || !strings.Contains(string(raw), "QUEEN_READ_TIMEOUT_MS") {
		t.Fatalf("status %d, close %v, body %s: want 408 with the connection closed", resp.StatusCode, resp.Close, raw)
	}
}
