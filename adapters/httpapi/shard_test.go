package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queen-go/queen/core/shard"
	"github.com/queen-go/queen/ports"
)

// TestUnreachableShard: a request a shard could not answer is a 503 that names the shard
// (never a partial answer), whatever the store's error was, and keeps the error's text
// out of the answer.
func TestUnreachableShard(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{ports.ErrUnavailable, errors.New("dial tcp 10.0.0.2:5432: secret detail")} {
		err := fmt.Errorf("admin: list queues: %w", &shard.UnreachableError{Shard: 2, Err: cause})
		if got := statusOf(err); got != http.StatusServiceUnavailable {
			t.Errorf("statusOf(%v) = %d, want 503", err, got)
		}
		rec := httptest.NewRecorder()
		writeError(rec, slog.New(slog.DiscardHandler), err)
		var body map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(body["error"], "shard 2 did not answer") ||
			strings.Contains(body["error"], "secret") {
			t.Errorf("answered %d %v", rec.Code, body)
		}
		if rec.Header().Get("Retry-After") != "1" {
			t.Errorf("Retry-After %q, want 1", rec.Header().Get("Retry-After"))
		}
	}
}
