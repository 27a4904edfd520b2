-- Reads of the admin API's consumer-group routes (docs/api.md §5.9; the adapters/admin
-- GroupStore). Idempotent: applied on every start (see doc.go).

-- log_group_positions_v1 returns where each (group, queue) pair stands on every partition
-- of the queue: p_groups[i] on queue p_queue_ids[i] (parallel arrays). One row per
-- (pair, partition):
--
--   has_cursor            the group has a cursor row on the partition
--   committed             the last offset the group is past, never below log_start - 1.
--                         Without a cursor: where a first contact would seed it, as
--                         log_pop_v2 does: after the last segment committed before the
--                         group's subscription instant (consumer_groups.subscribed_from),
--                         or log_start - 1 when it has none (mode all, queue mode, a group
--                         with no subscription row) or the partition is younger than it
--                         (no segment of it can be older than the partition).
--   lag                   last_offset - committed, at least 0 (messages)
--   oldest_unconsumed_at  created_at of the segment holding committed + 1 (the oldest
--                         message the group has not consumed); NULL when lag is 0
--   lease_id, lease_expires_at   the live lease, NULL when none is live (at now())
--   last_consumed_at, cursor_created_at   of the cursor row (NULL without one)
--
-- Counts are offset arithmetic over the partition and cursor rows. Segments are touched
-- only through their primary key (partition_id, base_offset), and only for a partition
-- with lag: one backward probe for the segment covering committed + 1 (segments are
-- appended in offset order, so it is the oldest unconsumed one), a forward probe when
-- retention left none there; and, for a partition without a cursor that is older than
-- the group's subscription instant, the backward walk a first contact does to find the
-- last segment committed before it.
--
-- LANGUAGE sql, STABLE, one SELECT, no row lock: the planner inlines it into the
-- caller's query, and a push, pop or ack never waits for it.
CREATE OR REPLACE FUNCTION queen.log_group_positions_v1(p_groups text[], p_queue_ids uuid[])
RETURNS TABLE (group_name text, queue_id uuid, partition_id uuid, partition_name text, has_cursor boolean,
               committed bigint, last_offset bigint, lag bigint, oldest_unconsumed_at timestamptz,
               lease_id uuid, lease_expires_at timestamptz, last_consumed_at timestamptz,
               cursor_created_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT e.grp, e.qid, lp.id, lp.name, lc.partition_id IS NOT NULL,
           k.committed, lp.last_offset, greatest(lp.last_offset - k.committed, 0),
           CASE WHEN lp.last_offset > k.committed THEN coalesce(
               (SELECT s.created_at FROM queen.log_segments s
                 WHERE s.partition_id = lp.id AND s.base_offset <= k.committed + 1
                 ORDER BY s.base_offset DESC LIMIT 1),
               (SELECT s.created_at FROM queen.log_segments s
                 WHERE s.partition_id = lp.id AND s.base_offset > k.committed
                 ORDER BY s.base_offset LIMIT 1)) END,
           CASE WHEN lc.lease_expires_at > now() THEN lc.lease_id END,
           CASE WHEN lc.lease_expires_at > now() THEN lc.lease_expires_at END,
           lc.last_consumed_at, lc.created_at
      FROM unnest(p_groups, p_queue_ids) AS e(grp, qid)
      JOIN queen.log_partitions lp ON lp.queue_id = e.qid
      LEFT JOIN queen.log_consumers lc ON lc.partition_id = lp.id AND lc.consumer_group = e.grp
      LEFT JOIN queen.consumer_groups cg ON cg.queue_id = e.qid AND cg.name = e.grp
     CROSS JOIN LATERAL (
            -- greatest() ignores a NULL: a probe that finds nothing means log_start - 1.
            -- OFFSET 0 keeps this subquery whole: pulled up, its expression (and the
            -- probe in it) would be copied into each of the four uses of k.committed.
            SELECT greatest(CASE
                       WHEN lc.partition_id IS NOT NULL THEN lc.committed
                       WHEN cg.subscribed_from IS NULL OR lp.created_at >= cg.subscribed_from THEN NULL
                       ELSE (SELECT s.base_offset + s.msg_count - 1 FROM queen.log_segments s
                              WHERE s.partition_id = lp.id AND s.created_at < cg.subscribed_from
                              ORDER BY s.base_offset DESC LIMIT 1)
                   END, lp.log_start - 1) AS committed OFFSET 0) k
$$;
