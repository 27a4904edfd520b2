package load

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGStat reads the transaction counters of one PostgreSQL database directly: every SQL
// statement a client runs outside an explicit transaction is one transaction, so
// xact_commit + xact_rollback counts the broker's SQL calls (and everybody else's on that
// database). It keeps one connection for the whole run: opening one per reading would add
// the connection's own start-up work to what is measured.
type PGStat struct {
	conn *pgx.Conn
}

// OpenPGStat connects to url (the broker's database).
func OpenPGStat(ctx context.Context, url string) (*PGStat, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("load: database for pg_stat_database: %w", err)
	}
	return &PGStat{conn: conn}, nil
}

// Xacts returns xact_commit + xact_rollback of the connection's database. PostgreSQL
// publishes a backend's counts when it goes idle, at most once a second, and an idle
// backend's last counts within 10 s: a reading lags by up to that much, so compare
// readings a minute or more apart. The reading itself is one transaction, counted by the
// next reading.
func (p *PGStat) Xacts(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var n int64
	// The simple protocol: one round trip, one transaction (the extended protocol's
	// first, preparing round trip would be one more).
	err := p.conn.QueryRow(ctx, `SELECT (xact_commit + xact_rollback)::bigint FROM pg_stat_database WHERE datname = current_database()`,
		pgx.QueryExecModeSimpleProtocol).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("load: pg_stat_database: %w", err)
	}
	return n, nil
}

// Close ends the connection.
func (p *PGStat) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.conn.Close(ctx)
}

// WAL is one reading of pg_stat_wal: how often the cluster flushed WAL to disk and, when
// track_wal_io_timing is on, how long those flushes took (what a commit waits for).
type WAL struct {
	Syncs  int64
	SyncMs float64
	Timed  bool // track_wal_io_timing was on: SyncMs counts
}

// WAL reads pg_stat_wal (PostgreSQL 14 and later). Backends publish their WAL counts at
// most once a second, so compare readings many seconds apart.
func (p *PGStat) WAL(ctx context.Context) (WAL, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var w WAL
	err := p.conn.QueryRow(ctx, `SELECT wal_sync, wal_sync_time, current_setting('track_wal_io_timing')::bool FROM pg_stat_wal`,
		pgx.QueryExecModeSimpleProtocol).Scan(&w.Syncs, &w.SyncMs, &w.Timed)
	if err != nil {
		return WAL{}, fmt.Errorf("load: pg_stat_wal: %w", err)
	}
	return w, nil
}

// walFigures adds to extra the WAL flushes between two readings: their count and, when
// both readings were timed, their mean duration (wal_syncs, wal_sync_mean_ms).
func walFigures(a, b WAL, extra map[string]any) {
	n := b.Syncs - a.Syncs
	extra["wal_syncs"] = n
	if a.Timed && b.Timed && n > 0 {
		extra["wal_sync_mean_ms"] = (b.SyncMs - a.SyncMs) / float64(n)
	}
}
