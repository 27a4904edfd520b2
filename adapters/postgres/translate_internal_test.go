package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queen-go/queen/ports"
)

// TestTranslateClassifies: each database error is translated to the sentinel that says
// who failed, and a push undone by a concurrent transaction is told apart from the rest.
func TestTranslateClassifies(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	tests := []struct {
		name   string
		err    error
		want   error // nil: no sentinel
		undone bool
	}{
		{"deadlock", pg("40P01"), ports.ErrConflict, true},
		{"serialization failure", pg("40001"), ports.ErrConflict, true},
		{"queue or partition deleted under a push bundle", pg("P0002"), ports.ErrInvalid, true},
		{"NUL byte in text", pg("22021"), ports.ErrInvalid, false},
		{"datetime out of range", pg("22008"), ports.ErrInvalid, false},
		{"bundle guard", pg("22023"), ports.ErrInvalid, false},
		{"statement timeout", pg("57014"), ports.ErrTimeout, false},
		{"server shutting down", pg("57P01"), ports.ErrUnavailable, false},
		{"too many connections", pg("53300"), ports.ErrUnavailable, false},
		{"connection refused", errors.New("dial tcp: connection refused"), ports.ErrUnavailable, false},
		{"deadline", context.DeadlineExceeded, ports.ErrTimeout, false},
		{"unique violation", pg("23505"), nil, false},
	}
	sentinels := []error{ports.ErrConflict, ports.ErrInvalid, ports.ErrTimeout, ports.ErrUnavailable}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := translate("op", tt.err)
			for _, s := range sentinels {
				if errors.Is(got, s) != (s == tt.want) {
					t.Errorf("translate(%v) = %v: errors.Is(%v) = %v", tt.err, got, s, !(s == tt.want))
				}
			}
			if u := undoneBy(got) != ""; u != tt.undone {
				t.Errorf("undoneBy(%v) = %v, want %v", got, u, tt.undone)
			}
		})
	}
}
