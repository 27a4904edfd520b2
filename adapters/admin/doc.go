// Package admin is the PostgreSQL adapter of the administrative queries (bun over
// database/sql): queue configuration, queue deletion and the dead-letter listing
// (ports.QueueAdmin), and the admin API's stores: resources and status
// (ports.ResourceStore: plain reads, a fixed number of statements per call whatever the
// number of queues), consumer groups (ports.GroupStore: listings, deletion, seeks and
// subscription updates, with the locks core/admin's doc.go lists), messages and dead
// letters (ports.MessageStore), traces (ports.TraceStore), and the analytics' reads of
// the metrics history and of PostgreSQL's statistics views (ports.MetricsReader,
// analytics*.go: one statement per read, no lock, pg_buffercache read only where it is
// installed, never created). The hot path (push, pop, ack) stays in adapters/postgres on
// pgx; this package is the only one that imports bun, and it never imports pgx: it is
// handed a *sql.DB (adapters/postgres Store.DB) built on the same pool.
// With Options.Replica (QUEEN_PG_READ_URL) the reads replica.go lists run on a standby
// while Options.UseReplica says so (core/replication ReadRouter); every write, and every
// read a write depends on, stays on the primary.
//
// Invariants:
//
//   - Every call runs under StatementTimeout on one dedicated connection. A call whose
//     deadline passed or whose statement was cancelled hands its connection to
//     Options.Discard, so it is closed rather than reused (docs/design.md "Decisions").
//   - Configure is one INSERT ... ON CONFLICT DO UPDATE: creation and merge are atomic,
//     and two concurrent merges of different options both take effect.
//   - DeleteQueue takes the queue row, then its partition rows and any partition left
//     without a queue (by a broker of an older version, which relied on a foreign key
//     that is gone) in ascending id (the global lock order), deletes the stream state,
//     segments, hash sidecar rows and cursors of those partitions and the partitions
//     themselves (no
//     foreign key ties them: see schema/001_tables.sql), then the queue row, whose
//     foreign keys cascade to the subscriptions and dead letters; all in one
//     transaction. It is
//     retried a few times on a deadlock or serialization failure (the ack path takes a
//     cursor row before the partition it references).
//   - Database errors are translated here, once, into the ports sentinels, wrapped with
//     the operation and the original error.
//   - Values are bound: no value reaches PostgreSQL as text (see below).
//
// # Values are bound
//
// bun writes a statement's values into its text as literals, and its PostgreSQL dialect
// escapes a string's quotes but not its backslashes: on a session with
// standard_conforming_strings = off (a database or role default legacy databases still
// carry), a name ending in a backslash closes the literal early, and the rest of a
// filter runs as SQL. So every statement here is a stmt (bind.go): bun still builds the
// text, but each value goes through stmt.arg, which writes a placeholder ($n) and keeps
// the value, and the statement runs on the database/sql connection or transaction with
// those values as its arguments, bound by the driver (pgx) whatever the session's
// settings. Names, filters, ids, timestamps, arrays and blobs all go this way; the only
// things bun writes into the text are SQL fragments of this package, identifiers
// (bun.Ident) and the integers of Limit and Offset. A statement without a value may run
// through bun directly.
//
// One mechanism, not a second escaping of literals: binding leaves nothing for a setting
// to reinterpret, where an escaping dialect would have to be right about every type bun
// formats (strings, byte strings, arrays, JSON). The connections themselves also set
// standard_conforming_strings = on at start-up (adapters/postgres Open), the other level
// of the same defence. The parameters' types are inferred from their use, as a literal's
// were (casts where the context does not say, such as ?::uuid). A statement with values
// is planned with them every time, as one with literals was: Options.BindOptions (the
// broker passes adapters/postgres PlanEachStatement) has the driver send it unnamed,
// never as a named statement PostgreSQL would switch to a generic plan, which could not
// drop a NULL filter from the plan as the resources functions expect.
package admin
