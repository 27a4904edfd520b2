// Package schema holds the broker's PostgreSQL schema as SQL files embedded with go:embed.
//
// The files are applied in lexical order at start-up by the postgres adapter, inside one
// transaction that first takes a transaction-scoped advisory lock, so several brokers
// starting at once apply them one after the other. Every statement is idempotent
// (CREATE ... IF NOT EXISTS, CREATE OR REPLACE FUNCTION, guarded ALTERs), so applying the
// schema again on every start is safe and cheap. On a current database it takes no lock
// a writer holds off: an index is built only when to_regclass finds it missing (CREATE
// INDEX takes a SHARE lock on its table even when IF NOT EXISTS then finds the index,
// and a broker starting during traffic would queue behind the writers and they behind
// it, up to a deadlock); adapters/postgres's TestMigrateOnACurrentDatabaseLocksNoTable
// holds every table with a writer's lock and migrates.
//
// Layout (schema "queen"):
//
//   - queues: one row per (tenant, queue name): identity and every configuration option.
//   - log_partitions: one row per (queue, partition): the offset allocator last_offset,
//     the retention watermarks log_start and txns_start, and last_write_at quantised to
//     one second so that most allocator updates stay HOT although last_write_at is
//     indexed. The row lock is the per-partition write serializer. The table is tuned for
//     a tiny, very hot row set: fillfactor 50, threshold-only autovacuum, vacuum_truncate
//     off (truncation takes an ACCESS EXCLUSIVE lock that would stall every push), and no
//     foreign key from or to it (PostgreSQL would run each as a trigger on every
//     allocator update); what the keys guaranteed is kept by explicit FOR KEY SHARE locks
//     and explicit deletes.
//   - log_segments: one row per committed push segment: [base_offset, base_offset +
//     msg_count) of one partition and one zstd blob of packed frames (see core/segment),
//     stored EXTERNAL (already compressed: TOAST compression would only burn CPU).
//   - log_txns: the hash sidecar, one row per segment with 16 bytes of xxh3-128 per frame
//     in frame order. Always written: ack-by-transactionId resolves through it even when
//     deduplication is off. Purged by its own watermark txns_start.
//
// Functions:
//
//   - log_push_multi_v4 (015_push_sealed.sql): the broker's only allocator path (fused
//     pushes, transactions, streams cycles): log_push_multi_v3 behind a guard that
//     refuses plain segments (some frame unsealed, p_plain) of queues whose
//     encryption_enabled is on, so a broker deciding from a stale cached flag never
//     stores plaintext for an encrypted queue. The flag is read once per distinct queue
//     of the plain segments (a unique-index probe); no plain segment, no read. A refused
//     segment allocates nothing and answers its ordinal with base_offset and dup_idx
//     NULL; the others are committed by v3.
//
//   - log_push_multi_v3 (013_push_set.sql): one fused push bundle (N segments of N
//     partitions) in one call, answering one typed row per segment (no JSON on the hot
//     path). Called by v4, and by older brokers sharing the database: one lock
//     statement in the global lock order, the dedup probe (log_dedup_probe_v1) per
//     segment where needed, then one UPDATE of the partitions' offsets and one INSERT
//     per table for the whole bundle. log_push_prepare_v1 checks, provisions and
//     resolves a bundle's (queue, partition) pairs for it.
//
//   - log_push_multi_v2 and log_push_one_v2: the per-segment reference of v3 (one
//     allocator call, three statements per segment), kept for the equivalence test and
//     for older brokers sharing the database.
//
//   - log_segment_at_v1: the segment covering an offset (duplicate id resolution).
//
//   - log_pop_v2, log_ack_v2: claim a span under a lease (with a verdict per candidate
//     partition when the hot-list names them); apply acknowledgements. An ack
//     resolves transaction ids through the hash sidecar in passes linear in the items:
//     log_span_hashes_v1 / log_window_hashes_v1 expand sidecar rows once, log_match_v1
//     pairs items with offsets by sorting both by hash (no join, so no plan that depends
//     on a row estimate). Items naming the delivered span in offset order (the usual
//     ack of a whole pop) pair as they come, and a call completing a whole span of its
//     live lease is answered without per-item statements.
//     A named group's first contact with a queue records its subscription once
//     (log_group_from_v2); every cursor of the group on the queue is seeded from that
//     record, so a group of mode new reads every message committed after it, and a push
//     still committing at that instant lies above the seeded cursor and is read too.
//
//   - log_pending_v1 (006_hotlist.sql): the hot-list's reseed, a keyset page of a
//     (queue, group)'s partitions with probable work, read through the
//     log_partitions_queue_id (queue_id, id) index.
//
//   - 009_resources.sql: the admin API's counts (log_partition_counts_v1,
//     log_queue_counts_v1: watermark arithmetic over partition and cursor rows;
//     log_retained_span_v1: a partition's oldest and newest message times by primary-key
//     probes; log_storage_totals_v1: size estimates from the catalogue).
//
//   - 010_groups.sql: log_group_positions_v1, a consumer group's cursors with their lag
//     in offsets and in time (primary-key probes of the segments, never a scan).
//
//   - 011_traces.sql: message_traces and message_trace_names (trace events, expiring with
//     their queue's retention, a batch of expired ones deleted on every insert), and the
//     dlq_offset index of dead letters by (partition, offset).
//
//   - 012_retention.sql: the retention cycle's bounded steps (core/retention):
//     log_retention_step_v2 trims expired segment prefixes and hash rows, moving
//     log_start and txns_start, under partition and cursor locks taken SKIP LOCKED, and
//     says per partition what each rule removed; log_purge_dead_letters_v2,
//     log_purge_traces_v2 and log_drop_empty_partitions_v2 answer per queue (their v1,
//     the sums, serve older brokers); log_purge_history_v1 purges the metrics history
//     (016_metrics.sql: minute rows, their 5- and 60-minute rollups, flushes, runs).
//
//   - 014_streams.sql: stream_queries (one row per query name, its opaque config_hash)
//     and stream_state (primary key query_id, partition_id, key COLLATE "C": a shard is
//     one index range, a literal prefix a sub-range), read and written by streams cycles
//     (adapters/postgres streams.go; no function: the statements are small and typed).
//
//   - 017_twophase.sql: xact_decisions, the decision log of transactions that span
//     shards (core/twophase): one outcome per gid, the first written wins.
//
//   - 018_shards.sql: shard_identity (which shard the database is, claimed once by
//     shard_claim_v1 at migration, checked by every later one) and new_partition_id(),
//     which on a shard other than 0 becomes log_partitions.id's default and mints ids
//     naming the shard (core/shard's layout); shard 0 keeps gen_random_uuid(); and
//     placements, the catalogue's map of which shard each queue lives on (written once
//     per queue, the first proposal wins; core/shard's Placer keeps a copy).
//
// 008_upgrade.sql changes databases created by older versions of these files (guarded,
// so it does nothing on a current database).
//
// One global lock order: partition rows in ascending id. Provisioning inserts are ordered
// by their unique key.
package schema
