package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/core/auth"
)

// TestMigrationRefused: every method on every /api/v1/migration/* path answers 501 with
// the refusal, whatever services are present; with authentication on, only an admin
// token gets that far.
func TestMigrationRefused(t *testing.T) {
	t.Parallel()
	v, err := auth.New(auth.Options{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(role string) string { return "Bearer " + hsToken(t, jwt.MapClaims{"sub": "alice", "role": role}) }
	open := New(Services{DB: pinger{}}, Options{Logger: slog.New(slog.DiscardHandler)})
	guarded := New(Services{DB: pinger{}}, Options{Auth: v, Logger: slog.New(slog.DiscardHandler)})
	tests := []struct {
		name, method, path, header string
		h                          http.Handler
		code                       int
	}{
		{"test-connection", http.MethodPost, "/api/v1/migration/test-connection", "", open, http.StatusNotImplemented},
		{"start", http.MethodPost, "/api/v1/migration/start", "", open, http.StatusNotImplemented},
		{"status", http.MethodGet, "/api/v1/migration/status", "", open, http.StatusNotImplemented},
		{"validate", http.MethodPost, "/api/v1/migration/validate", "", open, http.StatusNotImplemented},
		{"reset", http.MethodPost, "/api/v1/migration/reset", "", open, http.StatusNotImplemented},
		{"put", http.MethodPut, "/api/v1/migration/anything", "", open, http.StatusNotImplemented},
		{"patch", http.MethodPatch, "/api/v1/migration/anything", "", open, http.StatusNotImplemented},
		{"delete", http.MethodDelete, "/api/v1/migration/anything", "", open, http.StatusNotImplemented},
		{"deeper path", http.MethodGet, "/api/v1/migration/a/b", "", open, http.StatusNotImplemented},
		{"admin token", http.MethodPost, "/api/v1/migration/start", tok("admin"), guarded, http.StatusNotImplemented},
		{"read-write token", http.MethodPost, "/api/v1/migration/start", tok("read-write"), guarded, http.StatusForbidden},
		{"no token", http.MethodGet, "/api/v1/migration/status", "", guarded, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("status %d, want %d (body %s)", rec.Code, tt.code, rec.Body)
			}
			if tt.code != http.StatusNotImplemented {
				return
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if len(body) != 2 || body["error"] != migrationRefusal || body["code"] != "not_supported" {
				t.Fatalf("body %s", rec.Body)
			}
		})
	}
}
