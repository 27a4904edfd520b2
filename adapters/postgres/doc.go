// Package postgres is the PostgreSQL adapter of the hot path, on pgx: it commits fusion
// bundles, reads segments back, answers per-queue settings and applies the schema.
//
// Every call runs under DB_STATEMENT_TIMEOUT. When it expires, pgx sends a cancel
// request on a fresh connection (CancelRequestContextWatcherHandler), so the statement
// stops on the server and releases its locks, and the connection that ran it is closed
// rather than returned to the pool: an abandoned-but-running statement must never keep
// holding partition locks, and a connection in an unknown protocol state must never be
// reused. The server-side statement_timeout is set a little higher as a safety net.
//
// Database errors are translated here, once, into the sentinels of package ports
// (ErrUnavailable, ErrTimeout, ErrInvalid), wrapped with the operation and the original
// error.
//
// The push bundle is one prepared (cached) statement with typed parallel arrays; no JSONB
// is built by the broker, and the small jsonb result array is the only thing parsed.
package postgres
