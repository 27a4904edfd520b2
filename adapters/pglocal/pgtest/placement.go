package pgtest

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Placement reads the shard the catalogue at dbURL places queue on (any tenant); ok is
// false when it has no row for it. For the sharding tests, which check where a queue
// lives besides what the API answers.
func Placement(t testing.TB, dbURL, queue string) (shard int, ok bool) {
	t.Helper()
	ctx, conn, done := openConn(t, dbURL)
	defer done()
	err := conn.QueryRow(ctx, `SELECT shard FROM queen.placements WHERE queue = $1`, queue).Scan(&shard)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false
	}
	if err != nil {
		t.Fatalf("pgtest: read the placement of %s: %v", queue, err)
	}
	return shard, true
}
