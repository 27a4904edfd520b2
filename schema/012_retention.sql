-- Retention and housekeeping (docs/api.md §5.6, §6.4; core/retention drives the cycle).
--
-- Every function here is one bounded step: it visits at most a given number of
-- partitions or rows and commits with its caller's statement, so no step holds a long
-- transaction. Locks are taken in the global order (partition rows by ascending id) and
-- never waited for (SKIP LOCKED): a partition a push, a pop or an ack holds right now is
-- left for the next walk, so retention cannot slow them beyond one step's few
-- milliseconds and cannot close a wait cycle with them.

-- log_retention_step_v1 walks the partitions after p_after (NULL: from the first) in id
-- order, at most p_partitions of them, and for each one due removes, with at most
-- p_rows rows removed in all:
--
--   segments   the prefix of the log that is older than the age cutoff (retentionSeconds
--              when retentionEnabled, maxWaitTimeSeconds even without it: the shorter),
--              or older than completedRetentionSeconds (when retentionEnabled) and
--              consumed by every group; log_start moves to the first segment kept (or
--              past last_offset when none is), always at a segment boundary;
--   hashes     the hash sidecar rows older than the queue's resolution window,
--              max(dedupWindowSeconds, completedRetentionSeconds, 900 s), which is at
--              least the dedup window: the push probe (002_push.sql) never looks at a row
--              older than the dedup window, so dedup stays exact inside it; txns_start
--              moves past the last row removed.
--
-- "Consumed by every group": the smallest cursor over the partition's cursor rows, and
-- nothing consumed when a durable group of the queue (queen.consumer_groups) has no
-- cursor there yet, or when the partition has no cursor at all.
--
-- A partition is trimmed only under its row's FOR UPDATE lock and the locks of every
-- cursor row it has, all taken SKIP LOCKED (a partition with any of them held is left
-- for the next walk): a pop reads log_start under its cursor's lock or under its first
-- contact's KEY SHARE lock of the partition (004_pop.sql), so the segments a claim reads
-- are never removed under it.
--
-- It returns one row: the last partition the walk is done with (the next step's p_after;
-- NULL when nothing was walked), how many were walked (fewer than p_partitions: the walk
-- reached the end), and what was removed. A partition whose trim the row budget cut
-- short is not done: the next step starts with it again.
--
-- And, one entry per partition trimmed, for the record of what retention removed
-- (queen.retention_runs, 016_metrics.sql): its queue (tenant_ids, queue_names), the age
-- rule that applied (age_jobs: 'eviction' when maxWaitTimeSeconds is the shorter age
-- rule or the only one, else 'retention'), the messages and bytes of the segments
-- removed by the age rule (aged_*) and by the completed rule alone (done_*), and the
-- hash rows removed (part_hash_*). The split costs nothing extra: the DELETE returns
-- each segment's age test with its size.
CREATE OR REPLACE FUNCTION queen.log_retention_step_v2(
    p_after      uuid,
    p_partitions integer,
    p_rows       integer,
    OUT last_pid        uuid,
    OUT walked          integer,
    OUT trimmed         integer,
    OUT segments        bigint,
    OUT messages        bigint,
    OUT segment_bytes   bigint,
    OUT hash_rows       bigint,
    OUT hash_bytes      bigint,
    OUT tenant_ids      text[],
    OUT queue_names     text[],
    OUT age_jobs        text[],
    OUT aged_msgs       bigint[],
    OUT aged_bytes      bigint[],
    OUT done_msgs       bigint[],
    OUT done_bytes      bigint[],
    OUT part_hash_rows  bigint[],
    OUT part_hash_bytes bigint[]
)
LANGUAGE plpgsql AS $$
DECLARE
    v_now     timestamptz := clock_timestamp();
    v_ids     uuid[];
    v_due     uuid[];
    v_budget  integer := greatest(p_rows, 1);
    p         record;
    v_done    bigint;
    v_start   bigint;
    v_kept    bigint;
    v_n       bigint;
    v_cnt     bigint;
    v_bytes   bigint;
    v_hend    bigint;
    v_cursors integer;
    v_locked  integer;
    v_aged    bigint;
    v_agedb   bigint;
    v_comp    bigint;
    v_compb   bigint;
    v_hcnt    bigint;
    v_hbytes  bigint;
BEGIN
    trimmed := 0; segments := 0; messages := 0; segment_bytes := 0; hash_rows := 0; hash_bytes := 0;
    tenant_ids := '{}'; queue_names := '{}'; age_jobs := '{}'; aged_msgs := '{}'; aged_bytes := '{}';
    done_msgs := '{}'; done_bytes := '{}'; part_hash_rows := '{}'; part_hash_bytes := '{}';

    -- 1. The walk, without locks: which partitions have something past a cutoff. Each
    -- test is one index probe (the oldest retained segment, the oldest hash row).
    SELECT array_agg(w.id ORDER BY w.id),
           array_agg(w.id ORDER BY w.id) FILTER (WHERE w.due)
      INTO v_ids, v_due
      FROM (SELECT lp.id,
                   (r.seg_cutoff IS NOT NULL AND lp.last_offset >= lp.log_start
                    AND (SELECT s.created_at FROM queen.log_segments s
                          WHERE s.partition_id = lp.id AND s.base_offset >= lp.log_start
                          ORDER BY s.base_offset LIMIT 1) < r.seg_cutoff)
                   OR (SELECT t.created_at FROM queen.log_txns t
                        WHERE t.partition_id = lp.id AND t.end_offset >= lp.txns_start
                        ORDER BY t.end_offset LIMIT 1) < r.hash_cutoff AS due
              FROM queen.log_partitions lp
              JOIN queen.queues q ON q.id = lp.queue_id
             CROSS JOIN LATERAL queen.log_retention_cutoffs_v1(q, v_now) r
             WHERE lp.id > coalesce(p_after, '00000000-0000-0000-0000-000000000000'::uuid)
             ORDER BY lp.id
             LIMIT greatest(p_partitions, 1)) w;
    walked := coalesce(cardinality(v_ids), 0);
    last_pid := v_ids[walked];
    IF v_due IS NULL THEN
        RETURN;
    END IF;

    -- 2. The due partitions, locked in ascending id order, never waited for.
    FOR p IN
        SELECT lp.id, lp.queue_id, lp.last_offset, lp.log_start, lp.txns_start, r.*,
               q.tenant_id, q.name AS queue_name,
               CASE WHEN q.max_wait_time_seconds > 0
                         AND NOT (q.retention_enabled AND q.retention_seconds > 0
                                  AND q.retention_seconds <= q.max_wait_time_seconds)
                    THEN 'eviction' ELSE 'retention' END AS age_job
          FROM queen.log_partitions lp
          JOIN queen.queues q ON q.id = lp.queue_id
         CROSS JOIN LATERAL queen.log_retention_cutoffs_v1(q, v_now) r
         WHERE lp.id = ANY (v_due)
         ORDER BY lp.id
           FOR UPDATE OF lp SKIP LOCKED
    LOOP
        IF v_budget <= 0 THEN
            -- Not done with this one: the next step starts at it.
            last_pid := coalesce((SELECT u FROM unnest(v_ids) u WHERE u < p.id ORDER BY u DESC LIMIT 1), p_after);
            RETURN;
        END IF;
        SELECT count(*) INTO v_cursors FROM queen.log_consumers lc WHERE lc.partition_id = p.id;
        SELECT count(*) INTO v_locked FROM (
            SELECT 1 FROM queen.log_consumers lc WHERE lc.partition_id = p.id
               FOR UPDATE SKIP LOCKED) l;
        CONTINUE WHEN v_locked < v_cursors; -- a pop or an ack holds a cursor: next walk

        -- Segments.
        v_start := p.log_start;
        v_aged := 0; v_agedb := 0; v_comp := 0; v_compb := 0; v_hcnt := 0; v_hbytes := 0;
        IF p.seg_cutoff IS NOT NULL AND p.last_offset >= p.log_start THEN
            v_done := -1;
            IF p.done_cutoff IS NOT NULL AND v_cursors > 0
               AND NOT EXISTS (SELECT 1 FROM queen.consumer_groups g
                                WHERE g.queue_id = p.queue_id
                                  AND NOT EXISTS (SELECT 1 FROM queen.log_consumers lc
                                                   WHERE lc.partition_id = p.id AND lc.consumer_group = g.name)) THEN
                SELECT min(lc.committed) INTO v_done FROM queen.log_consumers lc WHERE lc.partition_id = p.id;
            END IF;
            -- The first segment to keep among the next v_budget + 1; segment creation
            -- times grow with offsets, and so does "consumed", so what goes is a prefix.
            SELECT min(x.base_offset) FILTER (WHERE NOT x.gone), count(*) FILTER (WHERE x.gone),
                   max(x.base_offset)
              INTO v_kept, v_n, v_hend
              FROM (SELECT s.base_offset,
                           coalesce(s.created_at < p.age_cutoff
                                    OR (s.created_at < p.done_cutoff AND s.base_offset + s.msg_count - 1 <= v_done),
                                    false) AS gone
                      FROM queen.log_segments s
                     WHERE s.partition_id = p.id AND s.base_offset >= p.log_start
                     ORDER BY s.base_offset
                     LIMIT v_budget + 1) x;
            IF v_kept IS NULL AND v_n > v_budget THEN
                v_kept := v_hend; -- all v_budget + 1 could go: the last one waits for the next step
            END IF;
            v_start := coalesce(v_kept, p.last_offset + 1);
            IF v_start > p.log_start THEN
                WITH d AS (
                    DELETE FROM queen.log_segments s
                     WHERE s.partition_id = p.id AND s.base_offset >= p.log_start AND s.base_offset < v_start
                    RETURNING s.msg_count, octet_length(s.blob) AS b,
                              coalesce(s.created_at < p.age_cutoff, false) AS aged)
                SELECT count(*), coalesce(sum(d.b), 0),
                       coalesce(sum(d.msg_count) FILTER (WHERE d.aged), 0),
                       coalesce(sum(d.b) FILTER (WHERE d.aged), 0),
                       coalesce(sum(d.msg_count) FILTER (WHERE NOT d.aged), 0),
                       coalesce(sum(d.b) FILTER (WHERE NOT d.aged), 0)
                  INTO v_cnt, v_bytes, v_aged, v_agedb, v_comp, v_compb FROM d;
                segments := segments + v_cnt;
                messages := messages + (v_start - p.log_start);
                segment_bytes := segment_bytes + v_bytes;
                v_budget := v_budget - v_cnt::integer;
            END IF;
        END IF;

        -- Hashes, by their own watermark.
        v_hend := NULL;
        IF v_budget > 0 THEN
            WITH d AS (
                DELETE FROM queen.log_txns t
                 WHERE t.partition_id = p.id
                   AND t.end_offset IN (SELECT t2.end_offset FROM queen.log_txns t2
                                         WHERE t2.partition_id = p.id AND t2.end_offset >= p.txns_start
                                           AND t2.created_at < p.hash_cutoff
                                         ORDER BY t2.end_offset LIMIT v_budget)
                RETURNING t.end_offset, octet_length(t.hashes) AS b)
            SELECT count(*), coalesce(sum(d.b), 0), max(d.end_offset) INTO v_hcnt, v_hbytes, v_hend FROM d;
            hash_rows := hash_rows + v_hcnt;
            hash_bytes := hash_bytes + v_hbytes;
            v_budget := v_budget - v_hcnt::integer;
        END IF;

        IF v_start > p.log_start OR v_hend IS NOT NULL THEN
            UPDATE queen.log_partitions lp SET
                log_start  = greatest(lp.log_start, v_start),
                txns_start = greatest(lp.txns_start, coalesce(v_hend + 1, lp.txns_start))
             WHERE lp.id = p.id;
            trimmed := trimmed + 1;
            tenant_ids := tenant_ids || p.tenant_id::text;
            queue_names := queue_names || p.queue_name;
            age_jobs := age_jobs || p.age_job;
            aged_msgs := aged_msgs || v_aged;
            aged_bytes := aged_bytes || v_agedb;
            done_msgs := done_msgs || v_comp;
            done_bytes := done_bytes || v_compb;
            part_hash_rows := part_hash_rows || v_hcnt;
            part_hash_bytes := part_hash_bytes || v_hbytes;
        END IF;
    END LOOP;
    IF v_budget <= 0 THEN
        -- The budget ran out on the last partition trimmed: it may hold more.
        last_pid := coalesce((SELECT u FROM unnest(v_ids) u WHERE u < p.id ORDER BY u DESC LIMIT 1), p_after);
    END IF;
END
$$;

-- log_retention_step_v1: v2 without the per-partition record, for older brokers sharing
-- the database.
CREATE OR REPLACE FUNCTION queen.log_retention_step_v1(
    p_after      uuid,
    p_partitions integer,
    p_rows       integer,
    OUT last_pid       uuid,
    OUT walked         integer,
    OUT trimmed        integer,
    OUT segments       bigint,
    OUT messages       bigint,
    OUT segment_bytes  bigint,
    OUT hash_rows      bigint,
    OUT hash_bytes     bigint
)
LANGUAGE sql AS $$
    SELECT v.last_pid, v.walked, v.trimmed, v.segments, v.messages, v.segment_bytes, v.hash_rows, v.hash_bytes
      FROM queen.log_retention_step_v2(p_after, p_partitions, p_rows) v
$$;

-- log_retention_cutoffs_v1: a queue's retention cutoffs at p_now (NULL: no such rule).
--   age_cutoff   segments created before it go whether consumed or not: the shorter of
--                retentionSeconds (when retentionEnabled) and maxWaitTimeSeconds;
--   done_cutoff  consumed segments created before it go (completedRetentionSeconds,
--                when retentionEnabled);
--   seg_cutoff   the later of the two: no segment older than it, nothing to trim;
--   hash_cutoff  hash rows created before it go: the resolution window.
CREATE OR REPLACE FUNCTION queen.log_retention_cutoffs_v1(q queen.queues, p_now timestamptz,
    OUT age_cutoff timestamptz, OUT done_cutoff timestamptz, OUT seg_cutoff timestamptz,
    OUT hash_cutoff timestamptz)
LANGUAGE sql IMMUTABLE AS $$
    SELECT a.c, d.c, greatest(a.c, d.c),
           p_now - make_interval(secs => greatest(q.dedup_window_seconds, q.completed_retention_seconds, 900))
      FROM (SELECT p_now - make_interval(secs => least(
                       CASE WHEN q.retention_enabled AND q.retention_seconds > 0 THEN q.retention_seconds END,
                       CASE WHEN q.max_wait_time_seconds > 0 THEN q.max_wait_time_seconds END)) AS c) a,
           (SELECT CASE WHEN q.retention_enabled AND q.completed_retention_seconds > 0
                        THEN p_now - make_interval(secs => q.completed_retention_seconds) END AS c) d
$$;

-- The purges return one row per (tenant, queue) that lost something: the record of what
-- retention removed (queen.retention_runs) is kept per queue. Their v1 are the sums, for
-- older brokers sharing the database.

-- log_purge_dead_letters_v2 removes up to p_rows dead letters older than their queue's
-- retentionSeconds (when retentionEnabled): a dead letter is a message of the queue, and
-- retention by age applies to it from the moment it failed. Returns rows and bytes per
-- queue.
CREATE OR REPLACE FUNCTION queen.log_purge_dead_letters_v2(p_rows integer)
RETURNS TABLE (tenant_id uuid, queue_name text, removed bigint, bytes bigint)
LANGUAGE sql AS $$
    WITH d AS (
        DELETE FROM queen.dlq x
         WHERE x.id IN (SELECT d.id FROM queen.queues q
                          JOIN LATERAL (SELECT d.id FROM queen.dlq d
                                         WHERE d.queue_id = q.id
                                           AND d.failed_at < clock_timestamp() - make_interval(secs => q.retention_seconds)
                                         ORDER BY d.failed_at LIMIT greatest(p_rows, 1)) d ON true
                         WHERE q.retention_enabled AND q.retention_seconds > 0
                         LIMIT greatest(p_rows, 1))
        RETURNING x.queue_id, octet_length(x.blob) AS b)
    SELECT q.tenant_id, q.name, count(*), sum(d.b)::bigint
      FROM d JOIN queen.queues q ON q.id = d.queue_id
     GROUP BY q.tenant_id, q.name
$$;

CREATE OR REPLACE FUNCTION queen.log_purge_dead_letters_v1(p_rows integer, OUT removed bigint, OUT bytes bigint)
LANGUAGE sql AS $$
    SELECT coalesce(sum(v.removed), 0)::bigint, coalesce(sum(v.bytes), 0)::bigint
      FROM queen.log_purge_dead_letters_v2(p_rows) v
$$;

-- log_purge_traces_v2 removes up to p_rows traces whose lifetime ended (their names go
-- with them, ON DELETE CASCADE). Returns rows and bytes of their data per tenant and
-- queue ('' when the trace's partition is gone).
CREATE OR REPLACE FUNCTION queen.log_purge_traces_v2(p_rows integer)
RETURNS TABLE (tenant_id uuid, queue_name text, removed bigint, bytes bigint)
LANGUAGE sql AS $$
    WITH d AS (
        DELETE FROM queen.message_traces t
         WHERE t.id IN (SELECT t2.id FROM queen.message_traces t2
                         WHERE t2.expires_at < clock_timestamp()
                         ORDER BY t2.expires_at LIMIT greatest(p_rows, 1)
                           FOR UPDATE SKIP LOCKED)
        RETURNING t.tenant_id, t.partition_id, coalesce(pg_column_size(t.data), 0) AS b)
    SELECT d.tenant_id, coalesce(q.name, ''), count(*), sum(d.b)::bigint
      FROM d LEFT JOIN queen.log_partitions lp ON lp.id = d.partition_id
             LEFT JOIN queen.queues q ON q.id = lp.queue_id
     GROUP BY 1, 2
$$;

CREATE OR REPLACE FUNCTION queen.log_purge_traces_v1(p_rows integer, OUT removed bigint, OUT bytes bigint)
LANGUAGE sql AS $$
    SELECT coalesce(sum(v.removed), 0)::bigint, coalesce(sum(v.bytes), 0)::bigint
      FROM queen.log_purge_traces_v2(p_rows) v
$$;

-- log_drop_empty_partitions_v2 deletes up to p_rows partitions that hold nothing (no
-- retained message and no retained hash row) and were last written before p_idle ago,
-- with their cursors. A partition any push, pop or ack holds now is skipped; a push that
-- names it later creates it again, from offset 0 (nothing retained refers to the old
-- offsets). Returns how many went per queue.
CREATE OR REPLACE FUNCTION queen.log_drop_empty_partitions_v2(p_idle interval, p_rows integer)
RETURNS TABLE (tenant_id uuid, queue_name text, removed bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_ids uuid[];
BEGIN
    -- Empty, idle, not held, and every cursor row lockable now (a cursor a pop or an ack
    -- holds keeps its partition for the next cycle).
    SELECT array_agg(x.id) INTO v_ids FROM (
        SELECT lp.id FROM queen.log_partitions lp
         WHERE lp.last_offset < lp.log_start AND lp.last_offset < lp.txns_start
           AND lp.last_write_at < clock_timestamp() - p_idle
         ORDER BY lp.id
         LIMIT greatest(p_rows, 1)
           FOR UPDATE SKIP LOCKED) x
     WHERE (SELECT count(*) FROM queen.log_consumers lc WHERE lc.partition_id = x.id)
         = (SELECT count(*) FROM (SELECT 1 FROM queen.log_consumers lc WHERE lc.partition_id = x.id
                                     FOR UPDATE SKIP LOCKED) l);
    IF v_ids IS NULL THEN
        RETURN;
    END IF;
    DELETE FROM queen.log_consumers lc WHERE lc.partition_id = ANY (v_ids);
    RETURN QUERY
        WITH d AS (DELETE FROM queen.log_partitions lp WHERE lp.id = ANY (v_ids) RETURNING lp.queue_id)
        SELECT q.tenant_id, coalesce(q.name, ''), count(*)
          FROM d LEFT JOIN queen.queues q ON q.id = d.queue_id
         GROUP BY 1, 2;
END
$$;

CREATE OR REPLACE FUNCTION queen.log_drop_empty_partitions_v1(p_idle interval, p_rows integer, OUT removed bigint)
LANGUAGE sql AS $$
    SELECT coalesce(sum(v.removed), 0)::bigint FROM queen.log_drop_empty_partitions_v2(p_idle, p_rows) v
$$;

-- log_purge_history_v1 removes up to p_rows rows of the metrics history (016_metrics.sql)
-- dated before p_before, table after table: minutes of metrics_queue_minutes, rollups of
-- metrics_queue_rollups whose bucket ended by p_before (every minute of it purged),
-- minutes of metrics_broker_minutes, flushes of metrics_flushes by applied_at, runs of
-- retention_runs by ran_at. Each table's rows go by ctid, at most the budget left, so
-- one call is one bounded step. Returns rows and their stored size (pg_column_size of
-- the row). PL/pgSQL: the tables it names are created by a later file.
CREATE OR REPLACE FUNCTION queen.log_purge_history_v1(p_before timestamptz, p_rows integer,
    OUT removed bigint, OUT bytes bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_left integer := greatest(p_rows, 1);
    v_n    bigint;
    v_b    bigint;
    t      record;
BEGIN
    removed := 0; bytes := 0;
    -- Each table's test of an expired row y: a fixed text, never input.
    FOR t IN SELECT * FROM (VALUES (1, 'metrics_queue_minutes', 'y.minute < $1'),
                                   (2, 'metrics_queue_rollups', 'y.bucket + make_interval(mins => y.width) <= $1'),
                                   (3, 'metrics_broker_minutes', 'y.minute < $1'),
                                   (4, 'metrics_flushes', 'y.applied_at < $1'), (5, 'retention_runs', 'y.ran_at < $1')) v(n, tab, cond)
              ORDER BY v.n
    LOOP
        EXIT WHEN v_left <= 0;
        EXECUTE format('WITH d AS (DELETE FROM queen.%1$I x
                                    WHERE x.ctid = ANY (ARRAY(SELECT y.ctid FROM queen.%1$I y WHERE %2$s LIMIT $2))
                                   RETURNING pg_column_size(x.*) AS b)
                        SELECT count(*), coalesce(sum(d.b), 0) FROM d', t.tab, t.cond)
           INTO v_n, v_b USING p_before, v_left;
        removed := removed + v_n;
        bytes := bytes + v_b;
        v_left := v_left - v_n::integer;
    END LOOP;
END
$$;
