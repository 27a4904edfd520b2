-- The hot-list's reseed floor (core/hotlist): a keyset-paginated listing of the
-- partitions that probably have work for a consumer group. Idempotent: applied on every
-- start (see doc.go).

-- Keyset pages walk a queue's partitions in id order. The unique (queue_id, name) index
-- cannot serve that order, and the primary key alone would walk every queue's
-- partitions; this one reads exactly the page. Both columns are never updated, so the
-- allocator's updates of log_partitions stay HOT (001_tables.sql): a HOT update needs
-- only that no indexed column changes.
--
-- Guarded, because CREATE INDEX takes a SHARE lock on the table, which waits for every
-- push in flight and stalls new ones until the schema transaction commits, even when
-- IF NOT EXISTS then finds the index: a current database takes no lock at all. On a
-- database created by an older version the build waits at most 2 s for the lock and
-- gives up on a lock timeout or a deadlock, leaving the index for the next start (the
-- listing is correct without it, only slower), instead of failing start-up.
DO $$
DECLARE
    v_wait text := current_setting('lock_timeout');
BEGIN
    IF to_regclass('queen.log_partitions_queue_id') IS NULL THEN
        PERFORM set_config('lock_timeout', '2s', true);
        BEGIN
            CREATE INDEX IF NOT EXISTS log_partitions_queue_id ON queen.log_partitions (queue_id, id);
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'queen schema: index log_partitions_queue_id not built (%), will retry at the next start',
                SQLERRM;
        END;
        PERFORM set_config('lock_timeout', v_wait, true);
    END IF;
END
$$;

-- log_pending_v1 returns one row: whether the queue (p_tenant, p_queue) exists, its
-- deferral options in seconds, and up to p_limit of its partitions, ascending by id and
-- after p_after (NULL = from the first), that probably have work for p_group: something
-- retained (last_offset >= log_start) and either no cursor of the group yet, or a
-- cursor before the last offset. Leased partitions are included: they are still
-- pending, and their claim will say leased. It never creates anything (an unknown queue
-- answers false and no partitions).
--
-- ids and names are parallel arrays (NULL when the page is empty): one row instead of
-- one per partition keeps a 10,000-partition page to one message on the wire.
--
-- Partition ids are random version-4 UUIDs (gen_random_uuid()), never the nil UUID, so
-- "after nil" is "from the first" and one index condition (id > after) serves every page:
-- an "after IS NULL OR id > after" would keep the index from bounding the scan.
CREATE OR REPLACE FUNCTION queen.log_pending_v1(
    p_tenant uuid,
    p_queue  text,
    p_group  text,
    p_after  uuid,
    p_limit  integer
) RETURNS TABLE (
    queue_found        boolean,
    delayed_processing integer,
    window_buffer      integer,
    ids                uuid[],
    names              text[]
)
LANGUAGE plpgsql STABLE
-- A generic plan is the plan wanted for every page (the (queue_id, id) index in order,
-- stopping at the limit); planning each call again would only cost.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_q record;
BEGIN
    SELECT q.id, q.delayed_processing, q.window_buffer INTO v_q
      FROM queen.queues q WHERE q.tenant_id = p_tenant AND q.name = p_queue;
    IF NOT FOUND THEN
        RETURN QUERY SELECT false, 0, 0, NULL::uuid[], NULL::text[];
        RETURN;
    END IF;
    RETURN QUERY
        SELECT true, v_q.delayed_processing, v_q.window_buffer,
               array_agg(x.id ORDER BY x.id), array_agg(x.name ORDER BY x.id)
          FROM (SELECT lp.id, lp.name
                  FROM queen.log_partitions lp
                 WHERE lp.queue_id = v_q.id
                   AND lp.id > coalesce(p_after, '00000000-0000-0000-0000-000000000000'::uuid)
                   AND lp.last_offset >= lp.log_start
                   AND NOT EXISTS (SELECT 1 FROM queen.log_consumers lc
                                    WHERE lc.partition_id = lp.id AND lc.consumer_group = p_group
                                      AND lc.committed >= lp.last_offset)
                 ORDER BY lp.id
                 LIMIT greatest(p_limit, 0)) x;
END
$$;
