package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

// A push that exceeds the statement timeout (it waits on a partition lock held by another
// transaction) is cancelled on the server, and its connection is discarded.
func TestStatementTimeoutCancelsOnServerAndDiscardsConnection(t *testing.T) {
	t.Parallel()
	s := newStore(t, Options{PoolSize: 1, StatementTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	seg := ports.Segment{Tenant: ports.DefaultTenant, Queue: "q", Partition: "p", Count: 1, Hashes: make([]byte, 16), Verified: -1, Blob: []byte{1}}
	if _, err := s.PushSegments(ctx, []ports.Segment{seg}); err != nil {
		t.Fatal(err)
	}
	var pidBefore uint32
	_ = s.run(ctx, "pid", func(ctx context.Context, c *pgxpool.Conn) error {
		pidBefore = c.Conn().PgConn().PID()
		return nil
	})

	// Hold the partition row lock from a separate pool.
	other, err := Open(ctx, s.pool.Config().ConnString(), Options{PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM queen.log_partitions FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	seg.Hashes = []byte("0123456789abcdef")
	start := time.Now()
	_, err = s.PushSegments(ctx, []ports.Segment{seg})
	if !errors.Is(err, ports.ErrTimeout) {
		t.Fatalf("blocked push error = %v, want ErrTimeout", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("timed-out push returned after %v", waited)
	}

	// On the server, nothing of ours is still running (the statement was cancelled, not
	// abandoned holding a lock wait).
	deadline := time.Now().Add(5 * time.Second)
	for {
		var running int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE pid = $1 AND state = 'active'`, int(pidBefore)).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %d still runs the timed-out statement", pidBefore)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// The pool works again, on a new connection. A new connection's first push compiles
	// the push functions, which on a loaded 2-core machine (make test runs packages in
	// parallel) can itself exceed the 300 ms timeout: a few attempts are allowed.
	for attempt := 1; ; attempt++ {
		_, err := s.PushSegments(ctx, []ports.Segment{seg})
		if err == nil {
			break
		}
		if !errors.Is(err, ports.ErrTimeout) || attempt == 5 {
			t.Fatalf("push after timeout (attempt %d): %v", attempt, err)
		}
	}
	var pidAfter uint32
	_ = s.run(ctx, "pid", func(ctx context.Context, c *pgxpool.Conn) error {
		pidAfter = c.Conn().PgConn().PID()
		return nil
	})
	if pidAfter == pidBefore {
		t.Fatalf("the connection that timed out (backend %d) was reused", pidBefore)
	}
}
