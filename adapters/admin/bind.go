package admin

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"
)

// stmt is one statement whose values reach PostgreSQL as bound parameters, never as text
// (doc.go, "Values are bound"). bun builds the statement's text; each value goes through
// arg, which records it and writes its placeholder ($1, $2...) into that text; the query
// runs on stmt (a bun.IConn), which hands the text and the recorded values to the
// database/sql connection or transaction under db, so the driver binds them.
//
// A stmt serves one statement: build it from the query constructors of the stmt (so it
// runs on the stmt), then Scan or Exec it once.
type stmt struct {
	db   bun.IDB
	conn bun.IConn // the *sql.DB, *sql.Conn or *sql.Tx under db; nil for another bun.IDB
	args []any
}

var _ bun.IConn = (*stmt)(nil)

// newStmt returns a statement on db (a bun.Conn, bun.Tx or *bun.DB).
func newStmt(db bun.IDB) *stmt {
	st := &stmt{db: db}
	switch c := db.(type) {
	case bun.Conn:
		st.conn = c.Conn
	case bun.Tx:
		st.conn = c.Tx
	case *bun.DB:
		st.conn = c.DB
	}
	return st
}

// arg binds v to the statement: the text gets its placeholder.
func (st *stmt) arg(v any) schema.QueryAppender {
	st.args = append(st.args, v)
	return placeholder(len(st.args))
}

// placeholder is the n-th parameter of a statement ($n). Its number is fixed when the
// value is bound, so a fragment written twice refers to one value.
type placeholder int

func (p placeholder) AppendQuery(_ schema.QueryGen, b []byte) ([]byte, error) {
	return strconv.AppendInt(append(b, '$'), int64(p), 10), nil
}

func (st *stmt) NewSelect() *bun.SelectQuery { return st.db.NewSelect().Conn(st) }
func (st *stmt) NewDelete() *bun.DeleteQuery { return st.db.NewDelete().Conn(st) }
func (st *stmt) NewUpdate() *bun.UpdateQuery { return st.db.NewUpdate().Conn(st) }
func (st *stmt) NewInsert() *bun.InsertQuery { return st.db.NewInsert().Conn(st) }

// NewRaw is a raw statement: its ? take fragments (subqueries, identifiers, arg's
// placeholders), not values.
func (st *stmt) NewRaw(query string, args ...any) *bun.RawQuery {
	return st.db.NewRaw(query, args...).Conn(st)
}

// bindModel binds every column value of the model strct (a struct value of table's type)
// that an insert writes, but the columns in own (the caller sets them with Value): a
// nullzero column left zero keeps the column default, as bun writes it.
func (st *stmt) bindModel(q *bun.InsertQuery, table *schema.Table, strct reflect.Value, own ...string) *bun.InsertQuery {
	for _, f := range table.Fields {
		if (f.NullZero && f.HasZeroValue(strct)) || slices.Contains(own, f.Name) {
			continue
		}
		q = q.Value(f.Name, "?", st.arg(f.Value(strct).Interface()))
	}
	return q
}

// errNoConn is the error of a stmt on a bun.IDB other than bun's own (it has no
// database/sql connection to bind on).
func (st *stmt) errNoConn() error {
	return fmt.Errorf("admin: a statement on %T cannot bind its values", st.db)
}

// bindOptionsKey is the context key of Options.BindOptions, set by Admin.run for the
// statements of its call.
type bindOptionsKey struct{}

// driverArgs are the arguments of the statement for the driver: the options of ctx, then
// the values bound by arg, then any bun passed (it passes none: its text carries the
// placeholders; any it did would make the driver refuse a count that does not match).
func (st *stmt) driverArgs(ctx context.Context, extra []any) []any {
	opts, _ := ctx.Value(bindOptionsKey{}).([]any)
	out := make([]any, 0, len(opts)+len(st.args)+len(extra))
	return append(append(append(out, opts...), st.args...), extra...)
}

// QueryContext, ExecContext and QueryRowContext run query with the values bound by arg.
func (st *stmt) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st.conn == nil {
		return nil, st.errNoConn()
	}
	return st.conn.QueryContext(ctx, query, st.driverArgs(ctx, args)...)
}

func (st *stmt) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st.conn == nil {
		return nil, st.errNoConn()
	}
	return st.conn.ExecContext(ctx, query, st.driverArgs(ctx, args)...)
}

func (st *stmt) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st.conn == nil {
		// Unbound: PostgreSQL refuses the placeholders ("there is no parameter $1").
		return st.db.QueryRowContext(ctx, query)
	}
	return st.conn.QueryRowContext(ctx, query, st.driverArgs(ctx, args)...)
}
