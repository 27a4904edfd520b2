package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pgerr"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/schema"
)

// The defaults of Options, shared with the server's variables (config reads the same
// values; its tests check that they agree).
const (
	DefaultPoolSize         = 160              // DB_POOL_SIZE
	DefaultStatementTimeout = 30 * time.Second // DB_STATEMENT_TIMEOUT
)

// Options tunes a Store; zero values take the defaults in brackets.
type Options struct {
	PoolSize         int           // [160] DB_POOL_SIZE
	StatementTimeout time.Duration // [30s] DB_STATEMENT_TIMEOUT
	ApplicationName  string        // ["queen-go"]
	Logger           *slog.Logger
	// Shard is this database's number among several (docs/design.md, "Several PostgreSQL
	// clusters") [0]: the migration claims the database for it, or refuses one that
	// belongs to another shard, and new partitions' ids name it.
	Shard int
}

func (o *Options) defaults() {
	if o.PoolSize <= 0 {
		o.PoolSize = DefaultPoolSize
	}
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.ApplicationName == "" {
		o.ApplicationName = "queen-go"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Store is the PostgreSQL implementation of ports.SegmentStore, ports.QueueSettings and
// ports.Pinger.
type Store struct {
	pool *pgxpool.Pool
	opts Options

	// schemaPending is set by EnsureSchema when the database was unreachable: the next
	// connection the pool opens applies the schema before anyone uses it (afterConnect).
	schemaPending atomic.Bool
	schemaMu      sync.Mutex // one connection applies it; the others wait, then find it done

	failed atomic.Int64 // statements that failed (Failed)
}

// Open connects a pool to url. It does not apply the schema (see Migrate).
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	opts.defaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %w", err)
	}
	cfg.MaxConns = int32(opts.PoolSize)
	cc := cfg.ConnConfig
	cc.RuntimeParams["application_name"] = opts.ApplicationName
	// Whatever the database or role default says (legacy databases still carry off): with
	// off, a backslash in a string literal is an escape character, and the SQL text the
	// admin queries' builder (bun) writes escapes only quotes. Every connection of the
	// broker comes from this config: the pool, the database/sql handle on it (DB), the
	// LISTEN connection (a copy) and the drain job's store.
	cc.RuntimeParams["standard_conforming_strings"] = "on"
	// Safety net only: the client-side deadline fires first and cancels the statement.
	cc.RuntimeParams["statement_timeout"] = strconv.FormatInt((opts.StatementTimeout + 2*time.Second).Milliseconds(), 10)
	cc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{
			Conn:               c,
			CancelRequestDelay: 0,               // cancel on the server at once
			DeadlineDelay:      2 * time.Second, // then give up on the socket
		}
	}
	s := &Store{opts: opts}
	cfg.AfterConnect = s.afterConnect
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: pool: %w", err)
	}
	s.pool = pool
	return s, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// Pool exposes the pool to tests and benchmarks of this module.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// PoolStat is a reading of the pool's counters (GET /metrics).
func (s *Store) PoolStat() ports.PoolStat { return s.pool.Stat() }

// Failed counts the statements that failed since Open: refused by the database, on a
// lost connection, out of time or without a connection; not those whose caller went
// away, nor a query that found no row (the metrics history's dbErrors).
func (s *Store) Failed() int64 { return s.failed.Load() }

// PoolStats reports the pool's connections: total, idle and in use.
func (s *Store) PoolStats() (total, idle, acquired int32) {
	st := s.pool.Stat()
	return st.TotalConns(), st.IdleConns(), st.AcquiredConns()
}

// Migrate applies the embedded schema idempotently, serialised between brokers by a
// transaction-scoped advisory lock.
func (s *Store) Migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return translate("migrate: begin", err)
	}
	return migrate(ctx, tx, s.opts.Shard)
}

// EnsureSchema applies the schema now or, when the database is unreachable
// (ports.ErrUnavailable), on the first connection the pool manages to open later: a
// broker started during an outage serves (its pushes spool) instead of exiting, and
// nothing reaches the database before the schema does. Any other failure (bad
// credentials, a missing database, a failing migration) is returned.
func (s *Store) EnsureSchema(ctx context.Context) error {
	err := s.Migrate(ctx)
	if errors.Is(err, ports.ErrUnavailable) {
		s.schemaPending.Store(true)
		s.opts.Logger.Warn("postgres: database unreachable at start: the schema is applied on the first connection that succeeds",
			"err", err)
		return nil
	}
	return err
}

// afterConnect is the pool's hook for every new connection: while the schema is
// pending, the first one applies it. Its failure fails the acquire as "unavailable"
// (wrapped as text, not as the PostgreSQL error), so callers keep treating the database
// as away and spooled pushes are not judged bad records.
func (s *Store) afterConnect(ctx context.Context, c *pgx.Conn) error {
	if !s.schemaPending.Load() {
		return nil
	}
	s.schemaMu.Lock()
	defer s.schemaMu.Unlock()
	if !s.schemaPending.Load() {
		return nil
	}
	tx, err := c.Begin(ctx)
	if err == nil {
		err = migrate(ctx, tx, s.opts.Shard)
	}
	if err != nil {
		return fmt.Errorf("postgres: applying the schema on a new connection: %v", err)
	}
	s.schemaPending.Store(false)
	s.opts.Logger.Info("postgres: database reachable: schema applied")
	return nil
}

func migrate(ctx context.Context, tx pgx.Tx, shard int) error {
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schema.AdvisoryLockKey); err != nil {
		return translate("migrate: lock", err)
	}
	for _, f := range schema.Files() {
		if _, err := tx.Exec(ctx, f.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			return translate("migrate: "+f.Name, err)
		}
	}
	if _, err := tx.Exec(ctx, "SELECT queen.shard_claim_v1($1)", shard); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Message, "QSHARD") {
			return fmt.Errorf("postgres: migrate: %s", strings.TrimPrefix(pgErr.Message, "QSHARD "))
		}
		return translate("migrate: shard identity", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return translate("migrate: commit", err)
	}
	return nil
}

// Ping implements ports.Pinger.
func (s *Store) Ping(ctx context.Context) error {
	return s.run(ctx, "ping", func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, "SELECT 1")
		return err
	})
}

// run executes fn on a pooled connection under the statement timeout. A connection whose
// statement timed out or was cancelled is closed instead of being returned to the pool.
func (s *Store) run(ctx context.Context, op string, fn func(context.Context, *pgxpool.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StatementTimeout)
	defer cancel()
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		s.countFailed(ctx, err)
		return translate(op+": acquire", err)
	}
	err = fn(ctx, c)
	s.countFailed(ctx, err)
	if err != nil && (ctx.Err() != nil || isCancel(err)) {
		// A caller that went away (a client's request ended) is no failure: DEBUG.
		s.opts.Logger.Log(ctx, cancelLevel(ctx), "postgres: statement cancelled, discarding its connection", loglimit.Cause("postgres statement cancelled"),
			"op", op, "pid", c.Conn().PgConn().PID(), "err", err)
		closeCtx, done := context.WithTimeout(context.Background(), time.Second)
		_ = c.Conn().Close(closeCtx) // the pool destroys closed connections on Release
		done()
	}
	c.Release()
	return translate(op, err)
}

// countFailed counts err in Failed unless there is none, it is a query that found no
// row, or the caller went away.
func (s *Store) countFailed(ctx context.Context, err error) {
	if err != nil && !errors.Is(err, pgx.ErrNoRows) && !errors.Is(ctx.Err(), context.Canceled) {
		s.failed.Add(1)
	}
}

// cancelLevel is the level of a cancelled statement's line: DEBUG when its caller
// cancelled it (the client went away), WARN when it ran out of time.
func cancelLevel(ctx context.Context) slog.Level {
	if errors.Is(ctx.Err(), context.Canceled) {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

func isCancel(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// translator maps the database's errors onto the ports sentinels, once, at the adapter
// edge. The hot path's statements take the clients' values: a data exception is the
// request's (ErrInvalid).
var translator = pgerr.Translator{Adapter: "postgres", DataExceptions: true}

// translate is translator.Translate.
func translate(op string, err error) error { return translator.Translate(op, err) }

// OldestXactAge is how long the oldest transaction that holds back vacuum's horizon in
// this database (one with an xid or a snapshot, of any client but this call) has been
// open, 0 when there is none (pg_stat_activity). Such a transaction keeps every dead
// tuple younger than it, so the hot tables' dead tuples grow behind it (docs/reliability.md F8).
// A role without pg_read_all_stats sees only its own sessions' start times.
func (s *Store) OldestXactAge(ctx context.Context) (time.Duration, error) {
	var secs float64
	err := s.run(ctx, "oldest transaction", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM clock_timestamp() - min(xact_start)), 0)::float8
			FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			  AND (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)`).Scan(&secs)
	})
	return time.Duration(secs * float64(time.Second)), err
}

// ReplicationSetup reads the server's replication set-up: synchronous_commit,
// synchronous_standby_names, whether it is itself in recovery, and its WAL senders to
// standbys by sync_state (pg_stat_replication; a role without pg_read_all_stats sees
// the rows of other roles' senders with their state hidden: counted in Hidden).
func (s *Store) ReplicationSetup(ctx context.Context) (ports.ReplicationSetup, error) {
	var r ports.ReplicationSetup
	err := s.run(ctx, "replication set-up", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('synchronous_standby_names'),
			pg_is_in_recovery(),
			(SELECT count(*) FROM pg_stat_replication)::int,
			(SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))::int,
			(SELECT count(*) FROM pg_stat_replication WHERE sync_state IS NULL)::int`).
			Scan(&r.SynchronousCommit, &r.SynchronousStandbyNames, &r.InRecovery, &r.Standbys, &r.SyncStandbys, &r.Hidden)
	})
	return r, err
}

// Commits returns PostgreSQL's count of committed transactions in this database
// (pg_stat_database.xact_commit, every client's, flushed by each backend about once a
// second): operators and the load tool derive commits/s from it.
func (s *Store) Commits(ctx context.Context) (int64, error) {
	var n int64
	err := s.run(ctx, "commits", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
	})
	return n, err
}
