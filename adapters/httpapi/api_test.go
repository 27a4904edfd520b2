package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/queen-go/queen/ports"
)

type pinger struct{ err error }

func (p pinger) Ping(context.Context) error { return p.err }

func TestHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		code     int
		status   string
		database string
	}{
		{"database answers", nil, http.StatusOK, "healthy", "connected"},
		{"database down", errors.New("connection refused: " + ports.ErrUnavailable.Error()), http.StatusServiceUnavailable, "unhealthy", "disconnected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := New(Services{DB: pinger{tt.err}}, Options{Version: "test"})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
			if rec.Code != tt.code {
				t.Fatalf("status %d, want %d", rec.Code, tt.code)
			}
			// A 503 tells the client when to retry; a 200 has nothing to say.
			if got, want := rec.Header().Get("Retry-After"), map[bool]string{true: "1"}[tt.code == http.StatusServiceUnavailable]; got != want {
				t.Fatalf("Retry-After %q, want %q", got, want)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if body["status"] != tt.status || body["database"] != tt.database || body["version"] != "test" {
				t.Fatalf("body %v", body)
			}
		})
	}
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	h := New(Services{DB: pinger{}}, Options{})
	tests := []struct {
		name, method, path string
		code               int
		allow              string // the Allow header of a 405 (RFC 9110 §15.5.6)
	}{
		{"unknown api route", http.MethodGet, "/api/v1/nope", http.StatusNotFound, ""},
		{"unknown post", http.MethodPost, "/whatever", http.StatusNotFound, ""},
		{"wrong method on push", http.MethodGet, "/api/v1/push", http.StatusMethodNotAllowed, "POST"},
		{"wrong method on health", http.MethodPost, "/health", http.StatusMethodNotAllowed, "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			var body map[string]string
			if rec.Code != tt.code || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body["error"] == "" {
				t.Fatalf("status %d body %s, want %d with a JSON error", rec.Code, rec.Body, tt.code)
			}
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Fatalf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}

func TestRenderPushEscapes(t *testing.T) {
	t.Parallel()
	got := appendString(nil, "quo\"te\\ and é")
	var s string
	if err := json.Unmarshal(got, &s); err != nil || s != "quo\"te\\ and é" {
		t.Fatalf("appendString produced %s (%v)", got, err)
	}
}
