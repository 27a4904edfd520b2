package postgres

import (
	"context"
	"testing"
)

// checkCursorInvariants fails the test when a cursor row of s's database breaks an
// invariant of queen.log_consumers (schema/003_consume.sql): committed <= batch_end,
// and lease_id NULL exactly when lease_expires_at is NULL. The database does not check
// them (a CHECK would cost every pop and ack), so the fixtures check them after every
// case.
func checkCursorInvariants(t *testing.T, s *Store) {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT partition_id::text, consumer_group, committed, batch_end,
		lease_id IS NOT NULL, lease_expires_at IS NOT NULL
		FROM queen.log_consumers
		WHERE committed > batch_end OR (lease_id IS NULL) <> (lease_expires_at IS NULL)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			pid, group          string
			committed, batchEnd int64
			holder, expiry      bool
		)
		if err := rows.Scan(&pid, &group, &committed, &batchEnd, &holder, &expiry); err != nil {
			t.Fatal(err)
		}
		t.Errorf("cursor %s/%s breaks an invariant: committed %d, batch_end %d, lease holder %v, lease expiry %v",
			pid, group, committed, batchEnd, holder, expiry)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
