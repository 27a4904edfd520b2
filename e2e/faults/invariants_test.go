package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// invariant is one database-side check of the verifier in docs/reliability.md, run straight against
// PostgreSQL after the drain: a query returning the number of violations and, for the
// failure message, a sample of them.
type invariant struct {
	name string
	sql  string // $1 = queue name, $2 = consumer groups (text[]); returns (count bigint, sample text)
}

var invariants = []invariant{
	{name: "offsets contiguous per partition (segments tile [first base, last_offset])", sql: `
		WITH s AS (
		  SELECT lp.name, lp.last_offset, g.base_offset, g.msg_count,
		         lag(g.base_offset + g.msg_count) OVER (PARTITION BY g.partition_id ORDER BY g.base_offset) AS prev_end,
		         max(g.base_offset + g.msg_count) OVER (PARTITION BY g.partition_id) AS top
		    FROM queen.log_segments g
		    JOIN queen.log_partitions lp ON lp.id = g.partition_id
		    JOIN queen.queues q ON q.id = lp.queue_id
		   WHERE q.name = $1)
		SELECT count(*), coalesce(string_agg(name || '@' || base_offset, ', ' ORDER BY name, base_offset) FILTER (WHERE true), '')
		  FROM s WHERE (prev_end IS NOT NULL AND prev_end <> base_offset) OR top - 1 <> last_offset`},
	{name: "one stored copy per transaction id inside the window", sql: `
		WITH h AS (
		  SELECT t.partition_id, substring(t.hashes FROM k * 16 + 1 FOR 16) AS h
		    FROM queen.log_txns t
		    JOIN queen.log_partitions lp ON lp.id = t.partition_id
		    JOIN queen.queues q ON q.id = lp.queue_id
		   CROSS JOIN LATERAL generate_series(0, (t.end_offset - t.base_offset)::integer) AS k
		   WHERE q.name = $1),
		d AS (SELECT partition_id, h, count(*) AS n FROM h GROUP BY 1, 2 HAVING count(*) > 1)
		SELECT count(*), coalesce(string_agg(partition_id::text || ' x' || n, ', '), '') FROM d`},
	{name: "no message dead-lettered twice, none dead-lettered below a live cursor's reach", sql: `
		WITH d AS (
		  SELECT x.partition_id, x.consumer_group, x.msg_offset, count(*) AS n
		    FROM queen.dlq x JOIN queen.queues q ON q.id = x.queue_id
		   WHERE q.name = $1 GROUP BY 1, 2, 3),
		bad AS (
		  SELECT d.* FROM d LEFT JOIN queen.log_consumers c
		    ON c.partition_id = d.partition_id AND c.consumer_group = d.consumer_group
		   WHERE d.n > 1 OR c.committed IS NULL OR c.committed < d.msg_offset)
		SELECT count(*), coalesce(string_agg(consumer_group || '@' || msg_offset || ' x' || n, ', '), '') FROM bad`},
	{name: "no lease held", sql: `
		SELECT count(*), coalesce(string_agg(c.consumer_group || '/' || lp.name, ', '), '')
		  FROM queen.log_consumers c
		  JOIN queen.log_partitions lp ON lp.id = c.partition_id
		  JOIN queen.queues q ON q.id = lp.queue_id
		 WHERE q.name = $1 AND c.lease_expires_at > now()`},
	{name: "every group's cursor at its partition's last offset", sql: `
		SELECT count(*), coalesce(string_agg(g || '/' || lp.name || ' at ' || coalesce(c.committed::text, 'none') || ' of ' || lp.last_offset, ', '), '')
		  FROM queen.log_partitions lp
		  JOIN queen.queues q ON q.id = lp.queue_id
		 CROSS JOIN unnest($2::text[]) AS g
		  LEFT JOIN queen.log_consumers c ON c.partition_id = lp.id AND c.consumer_group = g
		 WHERE q.name = $1 AND lp.last_offset >= 0 AND c.committed IS DISTINCT FROM lp.last_offset`},
}

// checkInvariants runs every invariant on db for queue and groups and fails the test
// with the violations found.
func checkInvariants(t testing.TB, db, queue string, groups []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("invariants: %v", err)
	}
	defer conn.Close(ctx)
	for _, inv := range invariants {
		var n int64
		var sample string
		args := []any{queue}
		if strings.Contains(inv.sql, "$2") {
			args = append(args, groups)
		}
		if err := conn.QueryRow(ctx, inv.sql, args...).Scan(&n, &sample); err != nil {
			t.Errorf("invariant %q: %v", inv.name, err)
			continue
		}
		if n > 0 {
			if len(sample) > 600 {
				sample = sample[:600] + "..."
			}
			t.Errorf("invariant %q: %d violations: %s", inv.name, n, sample)
		}
	}
}

// queryInt runs one query returning one integer on db.
func queryInt(t testing.TB, db, sql string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", sql, err))
	}
	return n
}

// holdLock holds an ACCESS EXCLUSIVE lock on the partitions table of db for d (the F7
// lock storm), then rolls back.
func holdLock(ctx context.Context, db string, d time.Duration) error {
	return holdTx(ctx, db, "LOCK TABLE queen.log_partitions IN ACCESS EXCLUSIVE MODE", d)
}

// holdSnapshot opens a transaction that takes a transaction id and then sits idle for d
// (the F8 long transaction): the cluster's xmin horizon stays behind it.
func holdSnapshot(ctx context.Context, db string, d time.Duration) error {
	return holdTx(ctx, db, "SELECT txid_current()", d)
}

// holdTx runs stmt in a transaction on db and keeps the transaction open for d (or until
// ctx ends), then rolls it back.
func holdTx(ctx context.Context, db, stmt string, d time.Duration) error {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return nil
}
