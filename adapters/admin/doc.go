// Package admin is the PostgreSQL adapter of the administrative queries (bun over
// database/sql): queue configuration, queue deletion and the dead-letter listing
// (ports.QueueAdmin), and the admin API's stores: resources and status
// (ports.ResourceStore: plain reads, a fixed number of statements per call whatever the
// number of queues), consumer groups (ports.GroupStore: listings, deletion, seeks and
// subscription updates, with the locks core/admin's doc.go lists), messages and dead
// letters (ports.MessageStore) and traces (ports.TraceStore). The hot path (push, pop, ack) stays in adapters/postgres on
// pgx; this package is the only one that imports bun, and it never imports pgx: it is
// handed a *sql.DB (adapters/postgres Store.DB) built on the same pool.
//
// Invariants:
//
//   - Every call runs under StatementTimeout on one dedicated connection. A call whose
//     deadline passed or whose statement was cancelled hands its connection to
//     Options.Discard, so it is closed rather than reused (design.md §9).
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
package admin
