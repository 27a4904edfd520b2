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
//
// # The bundle call
//
// pushBundle (push.go) runs log_push_multi_v4 (v3 refusing plaintext for queues that
// encrypt), prepared once per connection as queen_push_multi_v4, with its eight array
// parameters written by hand in PostgreSQL's
// binary array format into a pooled buffer and its rows read from their binary values
// (pushwire.go, which spells out both layouts). The result columns' types are checked
// against the statement's description before each call. TestPushParamsMatchPgx holds the
// encoding to pgx's byte for byte; FuzzDecodePushRow the row decoder to never panic.
//
// # Streams cycles
//
// Cycle (streams.go, ports.StreamStore) is one transaction: a two-key advisory lock of
// the (query, partition) shard (the first key, 737021, is a space of its own), the
// shard's deletes and upserts (one statement each, ops already one per key), the sink
// segments through pushBundle (the allocator of every push; a segment answered
// duplicate goes back to the caller's Resolve and its rest is pushed in a further bundle
// of the same transaction), then the ack through log_ack_v2 in strict mode after locking
// the consumer row, whose lease is then released or put back as the cycle asked (with no
// consumer row, a completed ack inserts a cursor-only one under the partition's KEY
// SHARE lock, as a pop's first contact does: cursorOnly). Lock
// order: shard, sink partitions (ascending id), source consumer row: a transaction's
// order behind a lock only cycles take. Refusals (unknown query on upsert, a value jsonb
// rejects, an unknown message, a lease that does not hold) are *ports.RollbackError.
//
// # Pops and the hot-list
//
// Pop calls log_pop_v2 (schema/004_pop.sql) once: a scan, a pinned pop, or the hot-list's
// candidates, which go as a uuid[] without repeats (a repeat keeps the verdict skipped,
// and an id that is not a UUID is gone without asking). Verdicts come back as typed
// columns of the same rows as the segments (a verdict number, the candidate's ordinal,
// drained, not_before, the lease expiry), never as JSON. Pending calls log_pending_v1
// (schema/006_hotlist.sql): one row per page, ids and names as parallel arrays.
//
// # The metrics history
//
// WriteMetrics (history.go, ports.MetricsWriter) is one statement: a CTE inserts the
// flush's (instance, seq) into metrics_flushes ON CONFLICT DO NOTHING, and the upserts
// of the queue and broker rows (parallel arrays, unnest) run only when it did, so a
// retried flush adds nothing. Rows are upserted in key order: brokers writing the same
// minute's queue rows lock them in one order.
//
// # Hints between brokers (LISTEN/NOTIFY)
//
// Publish sends every hint of a call with one statement (pg_notify over an array of
// payloads) in one transaction on channel queen_hints; Listen holds a connection of its
// own (not a pooled one) with LISTEN queen_hints, pings it after 30 s without a
// notification, and returns when its context ends or the connection fails. Each Store has
// a random sender id; a listener drops the payloads of its own Store.
//
// A payload is UTF-8 text of at most 7,999 bytes (PostgreSQL refuses 8,000 and more):
// one header line, then one line per hint. Every line ends with LF (0x0a); fields are
// separated by US (0x1f). Names never contain either (they are valid UTF-8 without
// control characters), and Publish leaves out, counts and reports a hint with a field
// that does, or that is invalid UTF-8, holds a NUL, or cannot fit in one payload.
//
//	offset  bytes  content
//	0       3      the format and its version: "qh1" or "qh2" (below)
//	3       1      US
//	4       16     the sender: the publishing Store's random id, 16 lowercase hex digits
//	20      1      US
//	21      1-20   seq: the sender's batch number, decimal (one per Publish call)
//	        1      US
//	        1-10   part: this payload's place in the batch, decimal, from 1
//	        1      US
//	        1-10   parts: the batch's payloads, decimal (part <= parts)
//	        1      LF: end of the header
//	then per hint, in the published order:
//	        any    tenant
//	        1      US
//	        any    queue name
//	        1      US
//	        any    partition name
//	        1      US
//	        any    partition id ("" when the publisher did not know it)
//	        then, in a "qh2" payload only:
//	        1      US
//	        1      kind: "c" a partition received data, "q" the queue was
//	                     reconfigured, "d" the queue was deleted
//	        1      LF
//
// A "qh1" hint has no kind field and is a commit hint ("c"): the layout every broker
// reads. Publish sends a batch of commit hints only as "qh1", byte for byte as before
// kinds existed, and a batch holding any queue-level hint ("q", "d": ports.HintKind) as
// "qh2", every part of it. A broker that knows only "qh1" skips and counts a "qh2"
// payload, so it misses the queue changes (its caches expire on their own, as they did
// before) and never a commit hint, since the publishers of queue changes send them in
// batches of their own (core/peers). A queue-level hint names no partition (core/peers
// sends both partition fields empty, and ignores them on receipt). A kind field other
// than these three letters makes the payload malformed.
//
// A batch too big for one payload is cut between hints into parts 1..parts, sent in
// order in the same transaction. PostgreSQL delivers one transaction's notifications
// together and in order, so a listener collects the parts and delivers the batch once,
// whole, at its last part; a payload that does not continue the batch under way makes it
// deliver what it had first (hints are best effort). A payload that does not follow this
// layout (header fields, hex sender, part numbers, four fields per hint in "qh1" and five
// with a known kind in "qh2", the final LF) is skipped and counted (HintStats), never
// delivered in part.
package postgres
