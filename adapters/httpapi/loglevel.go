package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/queen-go/queen/ports"
)

// failureLevel is the level of the line that logs a request's failure. ERROR says the
// broker or the database failed; a client's doing never is one: a client that went
// away (its request's context ended, so the failure is its own and nobody reads the
// answer) is a DEBUG line, and a transaction the store gave up on after colliding with
// concurrent ones (ports.ErrConflict) a WARN line. Client input is refused before it
// fails anything, with a 4xx or a per-item error, and is not logged. r may be nil.
func failureLevel(r *http.Request, err error) slog.Level {
	switch {
	case errors.Is(err, context.Canceled) || (r != nil && r.Context().Err() != nil):
		return slog.LevelDebug
	case errors.Is(err, ports.ErrConflict):
		return slog.LevelWarn
	}
	return slog.LevelError
}
