package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/queen-go/queen/core/readiness"
)

func TestReadyAndLive(t *testing.T) {
	t.Parallel()
	down := errors.New("connection refused")
	tests := []struct {
		name  string
		db    error
		ready func(context.Context) readiness.Report // nil: the database alone
		path  string
		code  int
		body  map[string]string
	}{
		{name: "ready: database answers", path: "/ready", code: http.StatusOK,
			body: map[string]string{"status": "ready", "database": "connected"}},
		{name: "not ready: database down, no spool", db: down, path: "/ready", code: http.StatusServiceUnavailable,
			body: map[string]string{"status": "not ready", "database": "disconnected", "reason": "the database is unreachable"}},
		{name: "ready: database down, the spool takes pushes", db: down, path: "/ready", code: http.StatusOK,
			ready: func(context.Context) readiness.Report { return readiness.Report{Ready: true, HasSpool: true} },
			body:  map[string]string{"status": "ready", "database": "disconnected", "spool": "accepting"}},
		{name: "not ready: database down, spool failing", db: down, path: "/ready", code: http.StatusServiceUnavailable,
			ready: func(context.Context) readiness.Report { return readiness.Report{HasSpool: true, SpoolFailing: true} },
			body: map[string]string{"status": "not ready", "database": "disconnected", "spool": "failing",
				"reason": "the database is unreachable and the spool cannot take pushes"}},
		{name: "ready: pushes held out of the database, the spool takes them", path: "/ready", code: http.StatusOK,
			ready: func(context.Context) readiness.Report {
				return readiness.Report{Ready: true, Database: true, HasSpool: true, Held: "no synchronous standby"}
			},
			body: map[string]string{"status": "ready", "database": "connected", "spool": "accepting",
				"pushes": "spooled: no synchronous standby"}},
		{name: "not ready: shutting down", path: "/ready", code: http.StatusServiceUnavailable,
			ready: func(context.Context) readiness.Report { return readiness.Report{Stopping: true, HasSpool: true} },
			body:  map[string]string{"status": "not ready", "spool": "accepting", "reason": "shutting down"}},
		{name: "live whatever the database", db: down, path: "/live", code: http.StatusOK,
			ready: func(context.Context) readiness.Report { return readiness.Report{Stopping: true} },
			body:  map[string]string{"status": "alive"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := New(Services{DB: pinger{tc.db}}, Options{Ready: tc.ready})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.code {
				t.Fatalf("status %d, want %d", rec.Code, tc.code)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if len(body) != len(tc.body) {
				t.Fatalf("body %v, want %v", body, tc.body)
			}
			for k, v := range tc.body {
				if body[k] != v {
					t.Fatalf("body %v, want %v", body, tc.body)
				}
			}
		})
	}
}
