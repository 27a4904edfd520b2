-- Reads of the admin API's resources and status routes (docs/api.md §5.7, §5.11; the
-- adapters/admin ResourceStore). Idempotent: applied on every start (see doc.go).
--
-- Every count is offset arithmetic over partition and cursor rows; no function here
-- reads a segment blob, a hash row or takes a row lock. They are plain MVCC reads: a
-- push, pop or ack never waits for them, and they never wait for one.

-- log_partition_counts_v1 returns one row per partition of the queue p_queue_id:
--
--   total       retained messages: last_offset - log_start + 1 (0 when empty)
--   pending     messages after the worst cursor: last_offset - max(worst, log_start - 1).
--               With p_group NULL, worst is the lowest committed offset of the named
--               groups' cursors, or the queue-mode cursor's when no named group has one
--               on the partition; with p_group, that group's cursor. No cursor: nothing
--               consumed, everything retained is pending. Leased messages are pending.
--   processing  messages inside live leases (the spans (committed, batch_end] whose lease
--               has not expired) of every group, or of p_group, capped at pending
--   leased      the same spans, not capped (summed over groups)
--   leases      the live leases (cursor rows) counted in leased
--   consumed    retained messages acknowledged, summed over every group's cursor
--   last_activity  the latest pop or ack of any group (NULL: no cursor)
--
-- LANGUAGE sql, STABLE, one SELECT: the planner inlines it into the calling query, so a
-- caller aggregating it over a page of queues gets one plan, not one call per queue.
-- The cursors of a partition are read through log_consumers' primary key
-- (partition_id, consumer_group), one range per partition.
CREATE OR REPLACE FUNCTION queen.log_partition_counts_v1(p_queue_id uuid, p_group text DEFAULT NULL)
RETURNS TABLE (partition_id uuid, name text, created_at timestamptz, log_start bigint, last_offset bigint,
               total bigint, pending bigint, processing bigint, leased bigint, leases bigint,
               consumed bigint, last_activity timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT lp.id, lp.name, lp.created_at, lp.log_start, lp.last_offset,
           greatest(lp.last_offset - lp.log_start + 1, 0),
           w.pending,
           least(c.leased, w.pending),
           c.leased, c.leases, c.consumed, c.last_activity
      FROM queen.log_partitions lp
     CROSS JOIN LATERAL (
            SELECT CASE WHEN p_group IS NULL
                        THEN coalesce(min(lc.committed) FILTER (WHERE lc.consumer_group <> '__QUEUE_MODE__'),
                                      min(lc.committed))
                        ELSE min(lc.committed) FILTER (WHERE lc.consumer_group = p_group)
                   END AS worst,
                   coalesce(sum(greatest(lc.batch_end - lc.committed, 0))
                            FILTER (WHERE lc.lease_expires_at > now()
                                      AND (p_group IS NULL OR lc.consumer_group = p_group)), 0)::bigint AS leased,
                   count(*) FILTER (WHERE lc.lease_expires_at > now()
                                      AND (p_group IS NULL OR lc.consumer_group = p_group)) AS leases,
                   coalesce(sum(greatest(least(lc.committed, lp.last_offset) - (lp.log_start - 1), 0)), 0)::bigint
                       AS consumed,
                   max(lc.last_consumed_at) AS last_activity
              FROM queen.log_consumers lc
             WHERE lc.partition_id = lp.id) c
     -- greatest() ignores a NULL worst (no cursor): everything retained is pending.
     CROSS JOIN LATERAL (
            SELECT greatest(lp.last_offset - greatest(c.worst, lp.log_start - 1), 0)::bigint AS pending) w
     WHERE lp.queue_id = p_queue_id
$$;

-- log_queue_counts_v1 returns one row per queue of tenant p_tenant whose name,
-- namespace and task match the arguments that are not NULL, with the sums over its
-- partitions of the counts of log_partition_counts_v1 (p_group NULL):
--
--   partitions, total, pending, processing, leased, leases  as there, summed
--   lease_partitions  partitions with at least one live lease
--   dead_letter       its dead-letter rows (counted on the dlq_queue index)
--   dlq_partitions    partitions with at least one dead letter
--
-- The same numbers as log_partition_counts_v1 queue by queue, computed set by set, for
-- the readers that cover a whole tenant (overview, namespaces, tasks, status): the
-- cursors of the selected partitions are aggregated in one pass, which the planner runs
-- as probes of log_consumers' primary key for a few partitions (one queue: milliseconds)
-- and as one scan with a hash aggregate for many, where a probe per partition costs
-- several times more. The selection is spelled twice (the queues, and the semi-join
-- restricting the cursors) rather than shared through a CTE: a CTE read twice is
-- materialized without statistics, and the planner then chooses the probes for every
-- size. Inlined into the caller (LANGUAGE sql, STABLE, one SELECT), so filters given as
-- constants are planned as constants.
CREATE OR REPLACE FUNCTION queen.log_queue_counts_v1(p_tenant uuid, p_queue text DEFAULT NULL,
                                                    p_namespace text DEFAULT NULL, p_task text DEFAULT NULL)
RETURNS TABLE (queue_id uuid, name text, namespace text, task text, partitions bigint, total bigint,
               pending bigint, processing bigint, leased bigint, leases bigint, lease_partitions bigint,
               dead_letter bigint, dlq_partitions bigint)
LANGUAGE sql STABLE AS $$
    SELECT q.id, q.name, q.namespace, q.task,
           count(lp.id),
           coalesce(sum(greatest(lp.last_offset - lp.log_start + 1, 0)), 0)::bigint,
           coalesce(sum(w.pending), 0)::bigint,
           coalesce(sum(least(coalesce(cur.leased, 0), w.pending)), 0)::bigint,
           coalesce(sum(cur.leased), 0)::bigint,
           coalesce(sum(cur.leases), 0)::bigint,
           count(*) FILTER (WHERE cur.leases > 0),
           (SELECT count(*) FROM queen.dlq d WHERE d.queue_id = q.id),
           count(*) FILTER (WHERE EXISTS (SELECT 1 FROM queen.dlq d WHERE d.partition_id = lp.id))
      FROM queen.queues q
      LEFT JOIN queen.log_partitions lp ON lp.queue_id = q.id
      LEFT JOIN (SELECT lc.partition_id,
                        coalesce(min(lc.committed) FILTER (WHERE lc.consumer_group <> '__QUEUE_MODE__'),
                                 min(lc.committed)) AS worst,
                        coalesce(sum(greatest(lc.batch_end - lc.committed, 0))
                                 FILTER (WHERE lc.lease_expires_at > now()), 0)::bigint AS leased,
                        count(*) FILTER (WHERE lc.lease_expires_at > now()) AS leases
                   FROM queen.log_consumers lc
                  WHERE lc.partition_id IN (
                        SELECT sp.id
                          FROM queen.queues sq
                          JOIN queen.log_partitions sp ON sp.queue_id = sq.id
                         WHERE sq.tenant_id = p_tenant
                           AND (p_queue IS NULL OR sq.name = p_queue)
                           AND (p_namespace IS NULL OR sq.namespace = p_namespace)
                           AND (p_task IS NULL OR sq.task = p_task))
                  GROUP BY lc.partition_id) cur ON cur.partition_id = lp.id
     -- greatest() ignores a NULL worst (no cursor): everything retained is pending.
     CROSS JOIN LATERAL (
            SELECT greatest(lp.last_offset - greatest(cur.worst, lp.log_start - 1), 0) AS pending) w
     WHERE q.tenant_id = p_tenant
       AND (p_queue IS NULL OR q.name = p_queue)
       AND (p_namespace IS NULL OR q.namespace = p_namespace)
       AND (p_task IS NULL OR q.task = p_task)
     GROUP BY q.id, q.name, q.namespace, q.task
$$;

-- log_retained_span_v1 returns the commit times of the first and last retained segments
-- of partition p_pid whose first retained offset is p_log_start: NULLs when the
-- partition retains nothing. Three probes of log_segments' primary key at most, each
-- reading one row (created_at; the blob stays in TOAST): the segment starting at or
-- before p_log_start, if it still covers it, else the first one after; and the last.
CREATE OR REPLACE FUNCTION queen.log_retained_span_v1(p_pid uuid, p_log_start bigint,
                                                      OUT oldest timestamptz, OUT newest timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
               (SELECT CASE WHEN s.base_offset + s.msg_count > p_log_start THEN s.created_at END
                  FROM queen.log_segments s
                 WHERE s.partition_id = p_pid AND s.base_offset <= p_log_start
                 ORDER BY s.base_offset DESC
                 LIMIT 1),
               (SELECT s.created_at
                  FROM queen.log_segments s
                 WHERE s.partition_id = p_pid AND s.base_offset > p_log_start
                 ORDER BY s.base_offset
                 LIMIT 1)),
           (SELECT s.created_at
              FROM queen.log_segments s
             WHERE s.partition_id = p_pid
             ORDER BY s.base_offset DESC
             LIMIT 1)
$$;

-- log_storage_totals_v1 describes the segment table as a whole without reading it: its
-- size on disk in bytes (heap, TOAST, free-space and visibility maps: what the blobs
-- cost, bloat included), its live rows as the statistics collector last counted them
-- (updated as transactions commit, not exact), and the retained messages of every
-- partition (one pass over log_partitions). The admin API apportions the first two to
-- queues by their retained messages, as estimates.
CREATE OR REPLACE FUNCTION queen.log_storage_totals_v1(OUT segment_bytes bigint, OUT segments bigint,
                                                       OUT messages bigint)
LANGUAGE sql STABLE AS $$
    SELECT pg_table_size('queen.log_segments'::regclass),
           pg_stat_get_live_tuples('queen.log_segments'::regclass),
           (SELECT coalesce(sum(greatest(lp.last_offset - lp.log_start + 1, 0)), 0)::bigint
              FROM queen.log_partitions lp)
$$;
