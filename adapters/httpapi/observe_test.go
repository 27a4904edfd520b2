package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/consume"
)

// TestObserveReportsRoutePatterns: every request reaches the observers and the access
// log with its route's pattern (sub-routers' full patterns included), its status and
// its size; the log never shows the token, the query string or the names in the path.
func TestObserveReportsRoutePatterns(t *testing.T) {
	t.Parallel()
	verifier, err := auth.New(auth.Options{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, target string
		auth                 bool // the handler checks tokens
		route                string
		status               int
	}{
		{name: "health", method: http.MethodGet, target: "/health", route: "/health", status: 200},
		{name: "live", method: http.MethodGet, target: "/live", route: "/live", status: 200},
		{name: "pop sub-router", method: http.MethodGet, target: "/api/v1/pop/queue/secret-queue/partition/p1?batch=5",
			route: "/api/v1/pop/queue/{queue}/partition/{partition}", status: 401, auth: true},
		{name: "unknown route", method: http.MethodGet, target: "/nope", route: "", status: 404},
		{name: "method not allowed", method: http.MethodDelete, target: "/health", route: "", status: 405},
		{name: "refused before routing", method: http.MethodPost, target: "/api/v1/push", route: "/api/v1/push", status: 401, auth: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			seen := &observations{mu: &mu}
			var logs bytes.Buffer
			opts := Options{AccessLog: true, Logger: slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil)),
				Observers: []Observer{seen}}
			if tc.auth {
				opts.Auth = verifier
			}
			h := New(Services{DB: pinger{}, Consume: consume.New(downStore{}, nil, consume.Options{})}, opts)
			req := httptest.NewRequest(tc.method, tc.target, nil)
			req.Header.Set("Authorization", "Bearer not-a-token-xyz")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			mu.Lock()
			defer mu.Unlock()
			if len(seen.list) != 1 {
				t.Fatalf("%d observations", len(seen.list))
			}
			o := seen.list[0]
			if o.Method != tc.method || o.Route != tc.route || o.Status != tc.status || o.Status != rec.Code ||
				o.Bytes != int64(rec.Body.Len()) {
				t.Fatalf("observed %+v, want %s %q %d and %d bytes", o, tc.method, tc.route, tc.status, rec.Body.Len())
			}
			line := logs.String()
			for _, hidden := range []string{"not-a-token", "batch=5", "secret-queue"} {
				if strings.Contains(line, hidden) {
					t.Fatalf("the access log shows %q: %s", hidden, line)
				}
			}
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("access log %q: %v", line, err)
			}
			if entry["msg"] != "http request" || entry["route"] != tc.route || entry["status"] != float64(tc.status) ||
				entry["remote"] != req.RemoteAddr {
				t.Fatalf("access log entry %v", entry)
			}
		})
	}
}

func TestObserveOffIsTheHandler(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := New(Services{DB: pinger{}}, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/health", nil))
	if logs.Len() != 0 {
		t.Fatalf("logged without QUEEN_ACCESS_LOG: %s", logs.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// observations is an Observer that keeps what it hears.
type observations struct {
	mu   *sync.Mutex
	list []Observed
}

func (s *observations) Observe(method, route string, status int, d time.Duration, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, Observed{Method: method, Route: route, Status: status, Duration: d, Bytes: bytes})
}
