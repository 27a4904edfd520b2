-- Tables of the broker. Idempotent: applied on every start (see doc.go).
CREATE SCHEMA IF NOT EXISTS queen;

-- One row per (tenant, queue): identity and every configuration option of docs/api.md §5.6.
CREATE TABLE IF NOT EXISTS queen.queues (
    id                            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id                     uuid        NOT NULL DEFAULT '00000000-0000-0000-0000-000000000001',
    name                          text        NOT NULL,
    namespace                     text        NOT NULL DEFAULT '',
    task                          text        NOT NULL DEFAULT '',
    -- false while the row only exists because a push or pop named the queue; pops then
    -- observe a 60 s lease (docs/api.md §5.6, leaseTime).
    configured                    boolean     NOT NULL DEFAULT false,
    priority                      integer     NOT NULL DEFAULT 0,
    lease_time                    integer     NOT NULL DEFAULT 300,
    retry_limit                   integer     NOT NULL DEFAULT 3,
    retry_delay                   integer     NOT NULL DEFAULT 1000,
    max_size                      integer     NOT NULL DEFAULT 0,
    ttl                           integer     NOT NULL DEFAULT 3600,
    dead_letter_queue             boolean     NOT NULL DEFAULT true,
    dlq_after_max_retries         boolean     NOT NULL DEFAULT true,
    delayed_processing            integer     NOT NULL DEFAULT 0,
    window_buffer                 integer     NOT NULL DEFAULT 0,
    retention_seconds             integer     NOT NULL DEFAULT 0,
    completed_retention_seconds   integer     NOT NULL DEFAULT 0,
    retention_enabled             boolean     NOT NULL DEFAULT false,
    encryption_enabled            boolean     NOT NULL DEFAULT false,
    max_wait_time_seconds         integer     NOT NULL DEFAULT 0,
    min_pop_wait_time             integer     NOT NULL DEFAULT 0,
    dedup_window_seconds          integer     NOT NULL DEFAULT 3600 CHECK (dedup_window_seconds >= 0),
    retention_sink_hold           text        NOT NULL DEFAULT '',
    retention_sink_hold_max_seconds integer   NOT NULL DEFAULT 604800,
    created_at                    timestamptz NOT NULL DEFAULT now(),
    updated_at                    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, name)
);

-- One row per (queue, partition). The row is the offset allocator and its lock the
-- per-partition write serializer, so it is updated on every push: fillfactor 50 leaves
-- room on the page for HOT updates, last_write_at is quantised to one second by the
-- allocator so most updates do not touch the indexed column, autovacuum runs on a fixed
-- dead-tuple threshold instead of a fraction of a tiny table, and vacuum never truncates
-- (truncation needs an ACCESS EXCLUSIVE lock that would stall every push).
--
-- No foreign key points from or to this table. PostgreSQL runs every foreign key of a
-- row's table, either side, as an AFTER UPDATE trigger on each update of the row, keys
-- changed or not; three of them, with the CHECK on log_segments, were a tenth of the
-- pushing backend's CPU (docs/benchmarks.md).
-- What the keys guaranteed is kept by hand instead: provisioning inserts partitions only
-- under queue rows it holds FOR KEY SHARE (002_push.sql), a pop's first contact takes the
-- partition row FOR KEY SHARE before it inserts a cursor (004_pop.sql), and a queue
-- deletion removes segments, hash rows, cursors and partitions explicitly, also those of
-- queues deleted by brokers of an older version (adapters/admin); dead letters still go
-- with their queue row (dlq.queue_id keeps its key).
CREATE TABLE IF NOT EXISTS queen.log_partitions (
    id            uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    queue_id      uuid        NOT NULL, -- queen.queues (id), see above
    name          text        NOT NULL,
    last_offset   bigint      NOT NULL DEFAULT -1,  -- highest allocated offset; first message is 0
    log_start     bigint      NOT NULL DEFAULT 0,   -- first retained offset (retention watermark)
    txns_start    bigint      NOT NULL DEFAULT 0,   -- first offset whose hash sidecar is retained
    last_write_at timestamptz NOT NULL DEFAULT now(), -- quantised to 1 s (HOT-friendly)
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (queue_id, name)
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 5000,
    vacuum_truncate = off
);

-- Wildcard candidate scans read recently written partitions of a queue first.
DO $$ BEGIN
    IF to_regclass('queen.log_partitions_recent') IS NULL THEN
        CREATE INDEX log_partitions_recent ON queen.log_partitions (queue_id, last_write_at DESC);
    END IF;
END $$;

-- One row per committed push segment: frames [base_offset, base_offset + msg_count) of
-- one partition in one zstd blob (layout in core/segment/doc.go). msg_count > 0 is
-- checked by the allocator, the only writer, not by a CHECK constraint: PostgreSQL 15
-- parses a CHECK expression from its stored text on every INSERT statement, a visible
-- share of each segment insert (docs/benchmarks.md).
CREATE TABLE IF NOT EXISTS queen.log_segments (
    partition_id uuid        NOT NULL,
    base_offset  bigint      NOT NULL,
    msg_count    integer     NOT NULL,
    created_at   timestamptz NOT NULL,
    blob         bytea       NOT NULL,
    PRIMARY KEY (partition_id, base_offset)
);

-- The hash sidecar: 16 bytes of xxh3-128(transactionId) per frame, in frame order. Keyed
-- by the segment's last offset so a probe of "segments ending after offset X" is one
-- index range.
CREATE TABLE IF NOT EXISTS queen.log_txns (
    partition_id uuid        NOT NULL,
    end_offset   bigint      NOT NULL,
    base_offset  bigint      NOT NULL,
    created_at   timestamptz NOT NULL,
    hashes       bytea       NOT NULL,
    PRIMARY KEY (partition_id, end_offset)
);

-- Segment blobs are already zstd-compressed and hash blobs are random bytes: store both
-- without TOAST compression. Guarded, because ALTER TABLE takes an ACCESS EXCLUSIVE lock
-- and the schema is applied on every start while other brokers may be pushing.
DO $$
BEGIN
    IF (SELECT attstorage FROM pg_attribute
         WHERE attrelid = 'queen.log_segments'::regclass AND attname = 'blob') <> 'e' THEN
        ALTER TABLE queen.log_segments ALTER COLUMN blob SET STORAGE EXTERNAL;
    END IF;
    IF (SELECT attstorage FROM pg_attribute
         WHERE attrelid = 'queen.log_txns'::regclass AND attname = 'hashes') <> 'e' THEN
        ALTER TABLE queen.log_txns ALTER COLUMN hashes SET STORAGE EXTERNAL;
    END IF;
END
$$;
