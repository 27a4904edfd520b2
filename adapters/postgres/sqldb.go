package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// DB returns a database/sql handle on the store's pool, for the admin queries (bun, in
// adapters/admin), which must not see pgx. Its connections are the pool's, with the same
// runtime parameters and the same cancel-request behaviour on a deadline; closing it does
// not close the pool (Store.Close does). Each call returns a new handle: call it once.
func (s *Store) DB() *sql.DB { return stdlib.OpenDBFromPool(s.pool) }

// PlanEachStatement are the driver options (admin.Options.BindOptions) under which the
// admin queries run on DB's connections: each statement is sent unnamed, with its
// description cached (one round trip), so PostgreSQL plans it with its values every time.
// Under the pool's default (named statements, prepared once per connection) it switches
// to a generic plan after five runs, and the admin reads are written to be planned with
// their filters as constants (schema/009_resources.sql: a NULL filter drops out of the
// plan); a generic plan cannot know which filters are NULL. The hot path keeps the
// default.
var PlanEachStatement = []any{pgx.QueryExecModeCacheDescribe}

// DiscardConn closes the PostgreSQL connection under a database/sql driver connection
// obtained from DB (pass it to sql.Conn.Raw) and returns driver.ErrBadConn, so that
// neither database/sql nor the pool reuses it: the rule of Store.run for a statement that
// timed out or was cancelled, for callers that only hold a *sql.DB.
func DiscardConn(driverConn any) error {
	if c, ok := driverConn.(*stdlib.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Conn().Close(ctx) // the pool destroys closed connections on release
	}
	return driver.ErrBadConn
}
