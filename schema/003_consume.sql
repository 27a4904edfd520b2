-- Tables of the consume path: cursors and leases, durable group subscriptions, dead
-- letters. Idempotent: applied on every start (see doc.go).

-- One row per (partition, consumer group). Updated on every pop and ack, so it is tuned
-- like log_partitions: fillfactor for HOT updates, threshold autovacuum, no truncation.
-- Rows are created lazily by the first pop of the group on the partition, under a
-- non-blocking advisory try-lock (log_pop_v2), never by waiting on another insert.
--
-- Invariants: committed <= batch_end; the span (committed, batch_end] is the last
-- delivery not yet acked; lease_id is NULL exactly when lease_expires_at is NULL; a lease
-- is live while lease_expires_at > now(). Kept by every statement that writes the table
-- (the postgres adapter's consume fixture checks them after each conformance case), not
-- by CHECK constraints: PostgreSQL prepares a CHECK's expression again in every UPDATE,
-- a measurable share of the pop's and the ack's cursor update (docs/benchmarks.md,
-- "Figures behind choices in the code").
CREATE TABLE IF NOT EXISTS queen.log_consumers (
    partition_id     uuid        NOT NULL, -- queen.log_partitions (id): no key, see there
    consumer_group   text        NOT NULL,
    committed        bigint      NOT NULL,           -- last acked offset; next wanted = committed + 1
    batch_end        bigint      NOT NULL,           -- last offset of the last delivered span
    lease_id         uuid,                           -- holder of the lease (the pop's leaseId)
    lease_expires_at timestamptz,
    retry_count      integer     NOT NULL DEFAULT 0, -- explicit failures charged to the current batch
    delivery_start   bigint      NOT NULL DEFAULT -1, -- first offset of the last delivery
    delivery_attempt integer     NOT NULL DEFAULT 0, -- deliveries of a span starting at delivery_start
    delivered_end    bigint      NOT NULL DEFAULT -1, -- highest offset ever delivered to the group (deliveryAttempt)
    last_consumed_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (partition_id, consumer_group)
) WITH (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 2000,
    autovacuum_analyze_scale_factor = 0,
    autovacuum_analyze_threshold = 5000,
    vacuum_truncate = off
);

-- Lease extension renews every partition a pop claimed, found by its leaseId.
DO $$ BEGIN
    IF to_regclass('queen.log_consumers_lease') IS NULL THEN
        CREATE INDEX log_consumers_lease ON queen.log_consumers (lease_id) WHERE lease_id IS NOT NULL;
    END IF;
END $$;

-- The durable subscription of a named group to a queue, recorded at its first contact.
-- Every cursor of the group is seeded from it, also on partitions created later:
-- subscribed_from NULL = from the oldest retained message, else after the last segment
-- created before that instant.
CREATE TABLE IF NOT EXISTS queen.consumer_groups (
    queue_id          uuid        NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    name              text        NOT NULL,
    subscription_mode text        NOT NULL,  -- 'all' | 'new' | 'timestamp'
    subscribed_from   timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue_id, name)
);

-- Dead letters: a snapshot of the message (a copy of its segment's blob and its frame
-- index, so retention of the live log never takes the dead letter with it) and why.
CREATE TABLE IF NOT EXISTS queen.dlq (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    queue_id       uuid        NOT NULL REFERENCES queen.queues (id) ON DELETE CASCADE,
    partition_id   uuid        NOT NULL, -- queen.log_partitions (id): no key, see there
    consumer_group text        NOT NULL,
    msg_offset     bigint      NOT NULL,
    transaction_id text        NOT NULL,
    error_message  text,
    retry_count    integer     NOT NULL,
    created_at     timestamptz NOT NULL,  -- commit time of the message
    failed_at      timestamptz NOT NULL DEFAULT now(),
    frame_index    integer     NOT NULL,  -- frame of blob holding the message
    blob           bytea       NOT NULL   -- the covering segment's blob (core/segment)
);
DO $$ BEGIN
    IF to_regclass('queen.dlq_queue') IS NULL THEN
        CREATE INDEX dlq_queue ON queen.dlq (queue_id, failed_at DESC);
    END IF;
END $$;
DO $$ BEGIN
    IF to_regclass('queen.dlq_message') IS NULL THEN
        CREATE INDEX dlq_message ON queen.dlq (partition_id, transaction_id);
    END IF;
END $$;
