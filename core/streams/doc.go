// Package streams is the server side of Queen's streams SDKs
// (docs/streams.md): a registry of named streaming queries, a key/value
// state per (query, source partition) shard, and the cycle, one atomic commit of a stream
// worker's state changes, sink pushes and source ack.
//
// # Registration
//
// Register is idempotent by name. A new name is stored with a new id (fresh); an equal
// config_hash updates the source and sink queues and keeps the state, even when reset is
// asked; a changed hash with reset deletes every state row of the query (all partitions)
// and keeps its id; a changed hash without reset changes nothing and is a *Mismatch,
// whose message carries "config_hash mismatch" (the SDKs match on it; the route answers
// 409).
//
// # State
//
// A shard's rows are read whole on every cycle (keys empty), or filtered: listed keys, a
// literal key prefix (no wildcards: queen-go's decision, Queen's LIKE would treat _ and
// % as patterns), and ripeness: the value is an object whose windowEnd is a JSON number
// <= ripe_at_or_before (epoch ms; fractional values compare as numbers). Rows come back
// in byte order of key. Ids that are not UUIDs are an *InputError (400); well-formed
// unknown ids read nothing.
//
// # The cycle
//
// Everything below happens in one database transaction (ports.StreamStore.Cycle), or
// not at all:
//
//  1. an exclusive transaction-scoped lock of the (query, partition) shard: cycles of a
//     shard, acked or not (idle flushes), commit one after the other;
//  2. the state ops, in request order (collapse reduces them to the last op per key,
//     which is what applying them in order leaves); an upsert for an unregistered
//     query rolls the cycle back, a delete of a missing key is no error;
//  3. the sink items, through the push allocator every push uses (one bundle, the
//     global partition lock order, the dedup probe), prepared by core/push's Sink under
//     the push route's rules: UUIDv7 ids minted in item order (sink messages pop in
//     push_items order), payloads sealed for encrypted queues, frames stamped with the
//     producer's subject; a partition with spooled pushes not replayed refuses the
//     cycle (503: nothing was applied). Items the partition already holds (by
//     transactionId) answer duplicate and the others are written;
//  4. the ack, with the strict rules of a transaction's ack (log_ack_v2): the message
//     must be found in the partition, a given leaseId must hold the live lease.
//     completed/success acks cumulatively up to the message; release_lease true
//     releases the lease even when the ack did not complete the whole leased span
//     (what was not acked comes again at the next pop), false keeps the lease and its
//     expiry even when it did (the messages after the cursor come again, in order,
//     after it expires). failed/dlq dead-letter the message straight away (no retry
//     budget: the worker decided), move the cursor to it and release the lease, which
//     the answer reports (lease_released true, docs/streams.md §6). A completed ack on a
//     partition its group has no cursor on (never popped there) inserts one at the
//     message, without a lease, as Queen does; a dead-letter ack there is refused.
//
// A cycle refused for its content, or rolled back in the store, is a *Failure (the route
// answers 200 with success false, state_ops_applied 0 and push_results []: nothing was
// applied). Sink segments are announced as commits once committed (long polls wake, the
// hot-list and the peers learn), a dead-letter move as a commit of the source partition,
// a released lease to the hot-list.
//
// # Deterministic sink transaction ids (docs/streams.md §3.5)
//
// A sink item sent without a transactionId gets SinkTransactionID: a digest of the shard,
// the cycle's identity, the item's index, its queue and partition and its payload. The
// identity is the acked source message (group and transactionId) or, for an ack-less
// flush, the keys the cycle deletes, in order. A retried cycle (its answer lost) derives
// the same ids, so the sink partition's dedup stores each item once and the retry answers
// duplicate; the payload is part of the digest so that a key flushed again later with
// another value (a window re-opened by late events) is a new message, not a retry. A
// cycle with neither an ack nor deletes has no identity: its items get minted ids, as
// plain pushes do. Dedup holds for the sink queue's dedup window.
//
// # Deletion
//
// Queue deletion deletes the state of every query on the queue's partitions (partition
// ids are never reused: that state could never be read by a cycle again), in the
// deletion's transaction; the query registrations stay (a query names its source queue
// by name, and a queue re-created under that name starts with fresh partitions and empty
// state). Consumer-group deletion keeps the state: state belongs to the query, not to the
// group's cursors; the SDKs' group streams.<query> re-reads the queue from its
// subscription and the windows still hold what was counted (to start over, register
// with another config_hash and reset, or use a new query name). Retention's drop of an
// empty, idle partition keeps its state too: it may hold windows an idle flush has yet
// to emit, which the flush reads by partition id.
package streams
