-- The metrics history (docs/api.md §5.11a): per-minute counters every broker writes once
-- per METRICS_FLUSH_MS (core/history), read by the analytics routes and the dashboard,
-- purged after METRICS_RETENTION_DAYS by the retention cycle.
--
-- A flush is one statement that first inserts its (instance, seq) into metrics_flushes;
-- the counter upserts only run when that insert did, so a flush retried after an
-- unknown outcome (the connection lost at commit) never adds its deltas twice. Counters
-- are deltas added to the row of their minute: any number of brokers write the same
-- minute's queue rows, and one broker may write a minute several times.
--
-- The indexes are built only when missing: CREATE INDEX takes a SHARE lock on its table
-- even when IF NOT EXISTS then finds the index, so a broker starting while others flush
-- would queue behind their flushes, and they behind it, until a deadlock (006_hotlist.sql
-- says the same of log_partitions).

-- One row per (minute, tenant, queue name): what every broker did for the queue in that
-- minute. Names, not ids: a queue deleted and created again keeps its history.
CREATE TABLE IF NOT EXISTS queen.metrics_queue_minutes (
    minute              timestamptz NOT NULL, -- UTC, truncated to the minute
    tenant_id           uuid        NOT NULL,
    queue_name          text        NOT NULL,
    push_requests       bigint      NOT NULL DEFAULT 0,
    push_messages       bigint      NOT NULL DEFAULT 0,
    pop_requests        bigint      NOT NULL DEFAULT 0,
    pop_messages        bigint      NOT NULL DEFAULT 0,
    pop_empty           bigint      NOT NULL DEFAULT 0, -- pops that answered no message
    ack_requests        bigint      NOT NULL DEFAULT 0,
    ack_success         bigint      NOT NULL DEFAULT 0, -- acknowledgements applied
    ack_failed          bigint      NOT NULL DEFAULT 0, -- status failed (retried or dead-lettered)
    dlq_moves           bigint      NOT NULL DEFAULT 0,
    transactions        bigint      NOT NULL DEFAULT 0,
    partitions_created  bigint      NOT NULL DEFAULT 0,
    partitions_deleted  bigint      NOT NULL DEFAULT 0,
    parked_max          bigint      NOT NULL DEFAULT 0, -- most long polls parked at once, summed over brokers
    lag_count           bigint      NOT NULL DEFAULT 0, -- messages whose lag is summed below
    lag_sum_ms          bigint      NOT NULL DEFAULT 0, -- pop time - push time, summed (ms)
    lag_max_ms          bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (minute, tenant_id, queue_name)
);
DO $$ BEGIN
    IF to_regclass('queen.metrics_queue_minutes_queue') IS NULL THEN
        CREATE INDEX metrics_queue_minutes_queue
            ON queen.metrics_queue_minutes (tenant_id, queue_name, minute);
    END IF;
END $$;

-- One row per (minute, broker): the broker's totals over every queue and its process
-- figures. Gauges carry sum and count (avg = sum / samples), min, max and last of the
-- samples taken in the minute.
CREATE TABLE IF NOT EXISTS queen.metrics_broker_minutes (
    minute              timestamptz NOT NULL,
    broker              text        NOT NULL, -- QUEEN_SERVER_ID
    hostname            text        NOT NULL DEFAULT '',
    port                integer     NOT NULL DEFAULT 0,
    push_requests       bigint      NOT NULL DEFAULT 0,
    push_messages       bigint      NOT NULL DEFAULT 0,
    pop_requests        bigint      NOT NULL DEFAULT 0,
    pop_messages        bigint      NOT NULL DEFAULT 0,
    pop_empty           bigint      NOT NULL DEFAULT 0,
    ack_requests        bigint      NOT NULL DEFAULT 0,
    ack_success         bigint      NOT NULL DEFAULT 0,
    ack_failed          bigint      NOT NULL DEFAULT 0,
    dlq_moves           bigint      NOT NULL DEFAULT 0,
    transactions        bigint      NOT NULL DEFAULT 0,
    lag_count           bigint      NOT NULL DEFAULT 0,
    lag_sum_ms          bigint      NOT NULL DEFAULT 0,
    lag_max_ms          bigint      NOT NULL DEFAULT 0,
    db_errors           bigint      NOT NULL DEFAULT 0, -- statements that failed
    requests            bigint      NOT NULL DEFAULT 0, -- HTTP requests answered
    latency_sum_us      bigint      NOT NULL DEFAULT 0, -- their latency, summed (µs)
    latency_max_us      bigint      NOT NULL DEFAULT 0,
    cpu_user_us         bigint      NOT NULL DEFAULT 0, -- CPU time used in the minute (µs)
    cpu_sys_us          bigint      NOT NULL DEFAULT 0,
    samples             bigint      NOT NULL DEFAULT 0, -- gauge samples below
    rss_sum             bigint      NOT NULL DEFAULT 0, -- bytes
    rss_min             bigint      NOT NULL DEFAULT 0,
    rss_max             bigint      NOT NULL DEFAULT 0,
    rss_last            bigint      NOT NULL DEFAULT 0,
    vsz_last            bigint      NOT NULL DEFAULT 0,
    pool_size           bigint      NOT NULL DEFAULT 0, -- last sample
    pool_idle_sum       bigint      NOT NULL DEFAULT 0,
    pool_idle_min       bigint      NOT NULL DEFAULT 0,
    pool_idle_max       bigint      NOT NULL DEFAULT 0,
    pool_idle_last      bigint      NOT NULL DEFAULT 0,
    pool_active_sum     bigint      NOT NULL DEFAULT 0,
    pool_active_min     bigint      NOT NULL DEFAULT 0,
    pool_active_max     bigint      NOT NULL DEFAULT 0,
    pool_active_last    bigint      NOT NULL DEFAULT 0,
    spool_pending_max   bigint      NOT NULL DEFAULT 0, -- spooled records not yet replayed
    spool_pending_last  bigint      NOT NULL DEFAULT 0,
    goroutines_max      bigint      NOT NULL DEFAULT 0,
    goroutines_last     bigint      NOT NULL DEFAULT 0,
    parked_max          bigint      NOT NULL DEFAULT 0,
    -- Long polls parked per queue (the most seen at once): {"queue": n}, queues with none
    -- left out.
    parked              jsonb       NOT NULL DEFAULT '{}',
    PRIMARY KEY (minute, broker)
);

-- The flushes applied, so a retried flush applies once. Purged with the history.
CREATE TABLE IF NOT EXISTS queen.metrics_flushes (
    instance            uuid        NOT NULL, -- one per broker process
    seq                 bigint      NOT NULL,
    applied_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance, seq)
);
DO $$ BEGIN
    IF to_regclass('queen.metrics_flushes_applied_at') IS NULL THEN
        CREATE INDEX metrics_flushes_applied_at ON queen.metrics_flushes (applied_at);
    END IF;
END $$;

-- One row per retention run and job and queue that removed something: what the
-- retention cycle removed (rows and bytes), read by GET /api/v1/analytics/retention.
CREATE TABLE IF NOT EXISTS queen.retention_runs (
    id                  bigserial   PRIMARY KEY,
    ran_at              timestamptz NOT NULL DEFAULT now(),
    job                 text        NOT NULL, -- retention, completed_retention, eviction, ...
    tenant_id           uuid,
    queue_name          text        NOT NULL DEFAULT '',
    rows_removed        bigint      NOT NULL DEFAULT 0, -- messages (or rows of the job's table)
    bytes_removed       bigint      NOT NULL DEFAULT 0
);
DO $$ BEGIN
    IF to_regclass('queen.retention_runs_ran_at') IS NULL THEN
        CREATE INDEX retention_runs_ran_at ON queen.retention_runs (ran_at);
    END IF;
END $$;

-- Rollups of metrics_queue_minutes: one row per (width, bucket, tenant, queue name), the
-- queue's minutes of the bucket summed (width 5 or 60 minutes; bucket the first minute,
-- date_bin on the Unix epoch, as the analytics reads bin). The flush statement upserts
-- them with its minute rows under the same (instance, seq) guard, so they always equal
-- their minutes: counters add, lag_max_ms takes the larger, parked_max is the largest
-- minute row's (the minute rows sum it over brokers). Reads of 24 hours or more take
-- their queue figures from here instead of 1,440 minute rows per queue.
CREATE TABLE IF NOT EXISTS queen.metrics_queue_rollups (
    width               smallint    NOT NULL, -- minutes: 5 or 60
    bucket              timestamptz NOT NULL, -- the bucket's first minute
    tenant_id           uuid        NOT NULL,
    queue_name          text        NOT NULL,
    push_requests       bigint      NOT NULL DEFAULT 0,
    push_messages       bigint      NOT NULL DEFAULT 0,
    pop_requests        bigint      NOT NULL DEFAULT 0,
    pop_messages        bigint      NOT NULL DEFAULT 0,
    pop_empty           bigint      NOT NULL DEFAULT 0,
    ack_requests        bigint      NOT NULL DEFAULT 0,
    ack_success         bigint      NOT NULL DEFAULT 0,
    ack_failed          bigint      NOT NULL DEFAULT 0,
    dlq_moves           bigint      NOT NULL DEFAULT 0,
    transactions        bigint      NOT NULL DEFAULT 0,
    partitions_created  bigint      NOT NULL DEFAULT 0,
    partitions_deleted  bigint      NOT NULL DEFAULT 0,
    parked_max          bigint      NOT NULL DEFAULT 0, -- the largest of the minute rows'
    lag_count           bigint      NOT NULL DEFAULT 0,
    lag_sum_ms          bigint      NOT NULL DEFAULT 0,
    lag_max_ms          bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (width, bucket, tenant_id, queue_name)
-- A rollup row is updated by every flush of its bucket (up to 60 times): room left on its
-- page lets an update stay there without new index entries (HOT; a 1,000-queue flush
-- 46 -> 30 ms with it).
) WITH (fillfactor = 50);
DO $$ BEGIN
    IF to_regclass('queen.metrics_queue_rollups_queue') IS NULL THEN
        CREATE INDEX metrics_queue_rollups_queue
            ON queen.metrics_queue_rollups (tenant_id, queue_name, width, bucket);
    END IF;
END $$;
