package e2e

import (
	"net/http"
	"testing"
)

// TestMigrationRefused: Queen's database migration routes answer 501 with the refusal
// and its code, on every method (docs/api.md §5.17).
func TestMigrationRefused(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	for _, tt := range []struct{ method, action string }{
		{http.MethodPost, "test-connection"},
		{http.MethodPost, "start"},
		{http.MethodGet, "status"},
		{http.MethodPost, "validate"},
		{http.MethodPost, "reset"},
		{http.MethodPut, "start"},
		{http.MethodPatch, "start"},
		{http.MethodDelete, "status"},
	} {
		t.Run(tt.method+" "+tt.action, func(t *testing.T) {
			t.Parallel()
			resp, body := b.do(t, tt.method, "/api/v1/migration/"+tt.action, nil)
			wantErrorBody(t, resp, body, http.StatusNotImplemented, "not_supported",
				"database migration between servers is not offered by this broker", "pg_dump/pg_restore", "docs/api.md §5.17")
		})
	}
}
