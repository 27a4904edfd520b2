package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestFailedCountsStatements: Failed (the metrics history's dbErrors) counts a
// statement the database refused, not a query that found no row nor one whose caller
// went away.
func TestFailedCountsStatements(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 2})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name  string
		ctx   context.Context
		sql   string
		count int64
	}{
		{"refused", context.Background(), `SELECT 1/0`, 1},
		{"no row", context.Background(), `SELECT 1 WHERE false`, 0},
		{"caller gone", cancelled, `SELECT pg_sleep(1)`, 0},
		{"fine", context.Background(), `SELECT 1`, 0},
	}
	for _, tt := range tests {
		before := s.Failed()
		_ = s.run(tt.ctx, "test", func(ctx context.Context, c *pgxpool.Conn) error {
			var n int
			return c.QueryRow(ctx, tt.sql).Scan(&n)
		})
		if got := s.Failed() - before; got != tt.count {
			t.Errorf("%s: Failed grew by %d, want %d", tt.name, got, tt.count)
		}
	}
}
