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
