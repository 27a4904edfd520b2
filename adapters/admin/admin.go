package admin

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/queen-go/queen/adapters/pgerr"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/ports"
)

// Options tunes an Admin; zero values take the defaults in brackets.
type Options struct {
	StatementTimeout time.Duration // [30s] DB_STATEMENT_TIMEOUT
	// Discard closes the driver connection under a database/sql connection whose
	// statement timed out or was cancelled (see sql.Conn.Raw; adapters/postgres
	// DiscardConn). [nil: the connection goes back to the pool]
	Discard func(driverConn any) error
	// BindOptions are driver options put ahead of the values of every statement
	// (adapters/postgres PlanEachStatement: each statement is planned with its values,
	// never with a generic plan; doc.go, "Values are bound"). [nil: the driver's default]
	BindOptions []any
	// Replica, when set, is a handle on a standby of the database (QUEEN_PG_READ_URL): the
	// reads replica.go lists run there while UseReplica says so, and on the primary when
	// the standby cannot take them. [nil: every statement runs on the primary]
	Replica *sql.DB
	// UseReplica reports whether the replica-eligible reads go to Replica now
	// (core/replication ReadRouter.Replica). [nil: never]
	UseReplica func() bool
	Logger     *slog.Logger
}

// DefaultStatementTimeout is Options.StatementTimeout's default, DB_STATEMENT_TIMEOUT's
// (config's tests check that they agree).
const DefaultStatementTimeout = 30 * time.Second

func (o *Options) defaults() {
	if o.StatementTimeout <= 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Admin implements ports.QueueAdmin on PostgreSQL.
type Admin struct {
	db      *bun.DB
	replica *bun.DB // nil without Options.Replica
	opts    Options
}

var _ ports.QueueAdmin = (*Admin)(nil)

// New returns an Admin querying db (a handle on a PostgreSQL database with the broker's
// schema applied).
func New(db *sql.DB, opts Options) *Admin {
	opts.defaults()
	a := &Admin{db: bun.NewDB(db, pgdialect.New()), opts: opts}
	if opts.Replica != nil {
		a.replica = bun.NewDB(opts.Replica, pgdialect.New())
	}
	return a
}

// run executes fn on a dedicated connection of the primary under the statement timeout.
// A connection whose statement timed out or was cancelled is discarded, not returned to
// the pool.
func (a *Admin) run(ctx context.Context, op string, fn func(context.Context, bun.Conn) error) error {
	return a.runOn(ctx, a.db, op, fn)
}

// acquireError is a failure to get a connection at all (the server unreachable, or not
// answering within the statement timeout), as opposed to a statement's own failure: a
// replica's sends the read to the primary whatever its cause.
type acquireError struct{ err error }

func (e *acquireError) Error() string { return e.err.Error() }
func (e *acquireError) Unwrap() error { return e.err }

// runOn is run on db's connections (the primary's or the replica's).
func (a *Admin) runOn(ctx context.Context, db *bun.DB, op string, fn func(context.Context, bun.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, a.opts.StatementTimeout)
	defer cancel()
	if len(a.opts.BindOptions) > 0 {
		ctx = context.WithValue(ctx, bindOptionsKey{}, a.opts.BindOptions)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		return &acquireError{translate(op+": acquire", err)}
	}
	err = fn(ctx, c)
	if err != nil && (ctx.Err() != nil || sqlState(err) == "57014") && a.opts.Discard != nil {
		level := slog.LevelWarn // ran out of time; a caller that went away (a client's request ended) is no failure
		if errors.Is(ctx.Err(), context.Canceled) {
			level = slog.LevelDebug
		}
		a.opts.Logger.Log(ctx, level, "admin: statement cancelled, discarding its connection", loglimit.Cause("admin statement cancelled"), "op", op, "err", err)
		_ = c.Raw(a.opts.Discard) // reports driver.ErrBadConn by design
	}
	_ = c.Close()
	return translate(op, err)
}

// inTx runs fn in a transaction on c; the statements inside run under ctx. The
// transaction itself is begun without ctx's deadline: database/sql rolls a transaction
// back and releases its connection on its own the moment its context ends, which would
// hand a connection whose statement was just cancelled back to the pool before run could
// discard it.
func inTx(ctx context.Context, c bun.Conn, fn func(bun.Tx) error) error {
	return runTx(ctx, c, nil, fn)
}

// snapshot runs fn in a read-only REPEATABLE READ transaction on c, so that every
// statement of fn sees the same snapshot (the totals and the page of one answer agree).
// Plain MVCC reads: it takes no lock a push, pop or ack waits for.
func snapshot(ctx context.Context, c bun.Conn, fn func(bun.Tx) error) error {
	return runTx(ctx, c, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, fn)
}

// runTx runs fn in a transaction of opts (nil: the defaults) on c, begun without ctx's
// deadline for the reason inTx gives; fn's error rolls it back.
func runTx(ctx context.Context, c bun.Conn, opts *sql.TxOptions, fn func(bun.Tx) error) error {
	tx, err := c.BeginTx(context.WithoutCancel(ctx), opts)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// whereQueues narrows q, a query over the queues (alias q), to the tenant's queues with
// these name, namespace and task; "" matches every value.
func whereQueues(st *stmt, q *bun.SelectQuery, tenant, name, namespace, task string) *bun.SelectQuery {
	q = q.Where("q.tenant_id = ?::uuid", st.arg(tenant))
	if name != "" {
		q = q.Where("q.name = ?", st.arg(name))
	}
	if namespace != "" {
		q = q.Where("q.namespace = ?", st.arg(namespace))
	}
	if task != "" {
		q = q.Where("q.task = ?", st.arg(task))
	}
	return q
}

// sqlState returns the SQLSTATE of a PostgreSQL error ("" for other errors).
func sqlState(err error) string {
	code, _ := pgerr.SQLState(err)
	return code
}

// retryable reports a transaction PostgreSQL aborted to resolve a conflict with another
// (deadlock, serialization failure): running it again may succeed.
func retryable(err error) bool { return pgerr.Retryable(err) }

// translator maps the database's errors onto the ports sentinels, once, at the adapter
// edge. Values are checked before they reach a statement: a data exception other than
// our functions' own invalid_parameter_value is no client's mistake.
var translator = pgerr.Translator{Adapter: "admin"}

// translate is translator.Translate.
func translate(op string, err error) error { return translator.Translate(op, err) }
