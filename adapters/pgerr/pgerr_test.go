package pgerr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queen-go/queen/ports"
)

// pgError stands for a driver's PostgreSQL error: what pgx's *pgconn.PgError exposes.
type pgError struct{ code string }

func (e *pgError) Error() string    { return "ERROR: something (SQLSTATE " + e.code + ")" }
func (e *pgError) SQLState() string { return e.code }

var sentinels = []error{ports.ErrTimeout, ports.ErrConflict, ports.ErrInvalid, ports.ErrUnavailable}

// TestTranslate runs every code and error kind the translation maps through both
// settings of DataExceptions: the only difference between the adapters.
func TestTranslate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want error // with DataExceptions off (the admin adapter)
		data error // with DataExceptions on (the hot path)
	}{
		{"query canceled (statement timeout)", &pgError{"57014"}, ports.ErrTimeout, ports.ErrTimeout},
		{"deadlock", &pgError{"40P01"}, ports.ErrConflict, ports.ErrConflict},
		{"serialization failure", &pgError{"40001"}, ports.ErrConflict, ports.ErrConflict},
		{"no data found", &pgError{"P0002"}, ports.ErrInvalid, ports.ErrInvalid},
		{"invalid parameter value", &pgError{"22023"}, ports.ErrInvalid, ports.ErrInvalid},
		{"invalid text representation", &pgError{"22P02"}, nil, ports.ErrInvalid},
		{"character not in repertoire (NUL)", &pgError{"22021"}, nil, ports.ErrInvalid},
		{"string data right truncation", &pgError{"22001"}, nil, ports.ErrInvalid},
		{"connection failure", &pgError{"08006"}, ports.ErrUnavailable, ports.ErrUnavailable},
		{"too many connections", &pgError{"53300"}, ports.ErrUnavailable, ports.ErrUnavailable},
		{"admin shutdown", &pgError{"57P01"}, ports.ErrUnavailable, ports.ErrUnavailable},
		{"system error", &pgError{"58030"}, ports.ErrUnavailable, ports.ErrUnavailable},
		{"unique violation", &pgError{"23505"}, nil, nil},
		{"raise exception", &pgError{"P0001"}, nil, nil},
		{"undefined table", &pgError{"42P01"}, nil, nil},
		{"short code", &pgError{"22"}, nil, nil},
		{"wrapped deadlock", fmt.Errorf("exec: %w", &pgError{"40P01"}), ports.ErrConflict, ports.ErrConflict},
		{"deadline", context.DeadlineExceeded, ports.ErrTimeout, ports.ErrTimeout},
		{"wrapped deadline", fmt.Errorf("dial: %w", context.DeadlineExceeded), ports.ErrTimeout, ports.ErrTimeout},
		{"cancelled", context.Canceled, nil, nil},
		{"connection refused", errors.New("dial tcp 127.0.0.1:5432: connect: connection refused"), ports.ErrUnavailable, ports.ErrUnavailable},
	}
	for _, tt := range tests {
		for _, data := range []bool{false, true} {
			want := tt.want
			if data {
				want = tt.data
			}
			t.Run(fmt.Sprintf("%s/data=%v", tt.name, data), func(t *testing.T) {
				t.Parallel()
				got := Translator{Adapter: "pg", DataExceptions: data}.Translate("push", tt.err)
				if !errors.Is(got, tt.err) {
					t.Errorf("%v does not wrap the original error %v", got, tt.err)
				}
				for _, s := range sentinels {
					if errors.Is(got, s) != (s == want) {
						t.Errorf("%v: errors.Is(%v) = %v, want sentinel %v", got, s, errors.Is(got, s), want)
					}
				}
				if prefix := "pg: push: "; !strings.HasPrefix(got.Error(), prefix) {
					t.Errorf("%q does not start with %q", got, prefix)
				}
			})
		}
	}
}

func TestTranslateNil(t *testing.T) {
	t.Parallel()
	if err := (Translator{Adapter: "pg"}).Translate("push", nil); err != nil {
		t.Fatalf("Translate(nil) = %v", err)
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&pgError{"40P01"}, true},
		{fmt.Errorf("tx: %w", &pgError{"40001"}), true},
		{&pgError{"57014"}, false},
		{&pgError{"23505"}, false},
		{errors.New("connection reset"), false},
		{nil, false},
	} {
		if got := Retryable(tt.err); got != tt.want {
			t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
