-- The pop path: claim a contiguous span after a group's cursor, per (partition, group),
-- under a lease. PostgreSQL is the only authority on cursors and leases.

-- log_queue_id_v1 resolves a queue name to its id, provisioning the row when the queue
-- does not exist yet (a pop may precede the first push; docs/api.md §5.2).
CREATE OR REPLACE FUNCTION queen.log_queue_id_v1(p_tenant uuid, p_queue text)
RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
    v_id uuid;
BEGIN
    SELECT id INTO v_id FROM queen.queues WHERE tenant_id = p_tenant AND name = p_queue;
    IF FOUND THEN
        RETURN v_id;
    END IF;
    INSERT INTO queen.queues (tenant_id, name, namespace, task)
    VALUES (p_tenant, p_queue,
            CASE WHEN strpos(p_queue, '.') > 0 THEN split_part(p_queue, '.', 1) ELSE '' END,
            CASE WHEN strpos(p_queue, '.') > 0 THEN split_part(p_queue, '.', 2) ELSE '' END)
    ON CONFLICT (tenant_id, name) DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NULL THEN
        SELECT id INTO v_id FROM queen.queues WHERE tenant_id = p_tenant AND name = p_queue;
    END IF;
    RETURN v_id;
END
$$;

-- log_group_from_v1 returns the instant a named group's cursors are seeded from on the
-- queue (NULL = from the start), recording the group's durable subscription on its first
-- contact. The insert is guarded by a non-blocking advisory try-lock: a caller that
-- loses the race uses the value it computed without waiting for the winner's commit,
-- which can differ from the recorded one (log_group_from_v2 closes that; v1 stays for
-- the log_pop_v2 bodies of older brokers sharing the database).
CREATE OR REPLACE FUNCTION queen.log_group_from_v1(p_queue_id uuid, p_group text, p_mode text, p_from timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
    v_from timestamptz;
BEGIN
    SELECT subscribed_from INTO v_from FROM queen.consumer_groups
     WHERE queue_id = p_queue_id AND name = p_group;
    IF FOUND THEN
        RETURN v_from;
    END IF;
    v_from := CASE p_mode WHEN 'new' THEN clock_timestamp() WHEN 'timestamp' THEN p_from ELSE NULL END;
    IF pg_try_advisory_xact_lock(hashtextextended('queen.group:' || p_queue_id::text || ':' || p_group, 0)) THEN
        INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode, subscribed_from)
        VALUES (p_queue_id, p_group, p_mode, v_from)
        ON CONFLICT (queue_id, name) DO NOTHING;
    END IF;
    RETURN v_from;
END
$$;

-- log_group_from_v2 is log_group_from_v1 without its race: every caller answers the
-- instant the group's subscription records. A caller that finds another transaction
-- recording it (holding the advisory lock, its row not committed yet) waits for that
-- transaction to end and reads the row it committed: a value of its own would differ
-- from the recorded one, and a cursor seeded from a later instant than the recorded one
-- skips the messages stored between the two, for good. The wait takes the lock shared,
-- so the waiters of one first contact do not queue behind each other, and lasts one pop
-- (the recorder's transaction is its pop). When the recorder rolled back, the answer is
-- 'infinity': the caller seeds no cursor of the group on the queue in this call (the
-- next pop records the subscription). After a lost insert race (ON CONFLICT: the row was
-- committed in between) the recorded value is read back, for the same reason. Callers
-- with several queues call it in ascending queue id, so two waits cannot form a cycle.
CREATE OR REPLACE FUNCTION queen.log_group_from_v2(p_queue_id uuid, p_group text, p_mode text, p_from timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql AS $$
DECLARE
    v_from timestamptz;
    v_key  bigint := hashtextextended('queen.group:' || p_queue_id::text || ':' || p_group, 0);
BEGIN
    SELECT subscribed_from INTO v_from FROM queen.consumer_groups
     WHERE queue_id = p_queue_id AND name = p_group;
    IF FOUND THEN
        RETURN v_from;
    END IF;
    IF NOT pg_try_advisory_xact_lock(v_key) THEN
        PERFORM pg_advisory_xact_lock_shared(v_key);
        SELECT subscribed_from INTO v_from FROM queen.consumer_groups
         WHERE queue_id = p_queue_id AND name = p_group;
        RETURN CASE WHEN FOUND THEN v_from ELSE 'infinity' END;
    END IF;
    v_from := CASE p_mode WHEN 'new' THEN clock_timestamp() WHEN 'timestamp' THEN p_from ELSE NULL END;
    INSERT INTO queen.consumer_groups (queue_id, name, subscription_mode, subscribed_from)
    VALUES (p_queue_id, p_group, p_mode, v_from)
    ON CONFLICT (queue_id, name) DO NOTHING;
    IF NOT FOUND THEN
        SELECT subscribed_from INTO v_from FROM queen.consumer_groups
         WHERE queue_id = p_queue_id AND name = p_group;
    END IF;
    RETURN v_from;
END
$$;

-- log_pop_v2 claims up to p_max_parts partitions of the given queues for p_group and
-- returns the segments covering the claimed spans (one row per segment, partitions in
-- claim order, segments in offset order), at most p_batch messages in total; when the
-- pop names its candidates (the hot-list), it also says what it found at each one it
-- evaluated. (log_pop_v1 answered the segments only; it is no longer defined here, and
-- databases shared with older brokers keep it.)
--
--   p_partition   NULL for a wildcard or discovery pop, else the one partition name
--                 (then p_queue_ids has one element and p_candidates is ignored)
--   p_candidates  the partitions to try, in this order, and only those (the hot-list);
--                 NULL = scan the queues for partitions with work. No repeats (the
--                 adapter removes them): a repeat would find its own claim's lease.
--   p_lease_secs  0 = the queue's leaseTime (60 s while the queue is unconfigured)
--   p_auto_ack    commit the cursor at delivery; no lease
--   p_sub_mode    'all' | 'new' | 'timestamp' for a named group's first contact
--
-- Every row carries cand_ord (the candidate's 1-based position in p_candidates; NULL on
-- a scan or a pinned pop) and a verdict (the numbers are the adapter's to map):
--
--   1 took    a span was claimed: a segment row, with drained = the span's end reached
--             last_offset as read at claim time, and the claim's lease_expires_at
--             (NULL with p_auto_ack)
--   2 empty   nothing deliverable after the group's cursor; not_before, when a deferral
--             hides data: the first hidden segment's created_at + delayedProcessing, or
--             the last segment's created_at + windowBuffer
--   3 leased  a live lease of the group; lease_expires_at is its expiry
--   4 busy    another transaction holds the cursor row (a pop or an ack: SKIP LOCKED
--             skipped it), is creating it (the advisory try-lock was taken), or is
--             deleting the partition (its KEY SHARE lock was skipped)
--   5 gone    no such partition in the queues
--
-- Verdicts 2-5 come as one row each (segment columns NULL), and only for candidates: a
-- scan reports claims only. A candidate after the pop filled up (batch or partitions)
-- gets no row: it was not evaluated.
--
-- Locks: a claim never waits for a row lock. Cursor rows are taken FOR UPDATE SKIP
-- LOCKED, a first contact's partition row FOR KEY SHARE SKIP LOCKED, and cursor creation
-- is guarded by an advisory try-lock; so candidates, which come in the hot-list's order
-- rather than the global ascending-id order, cannot close a wait cycle with an ack
-- (which locks cursor rows in ascending order) or a queue deletion (which locks the
-- partitions in ascending order, then deletes their cursors). The only waits are the
-- group subscription's insert (a key check on the queue row), another pop recording the
-- same group's subscription (log_group_from_v2, in ascending queue id) and the
-- provisioning of the queue row, all before any cursor is locked.
CREATE OR REPLACE FUNCTION queen.log_pop_v2(
    p_queue_ids  uuid[],
    p_partition  text,
    p_candidates uuid[],
    p_group      text,
    p_batch      integer,
    p_max_parts  integer,
    p_lease_secs integer,
    p_auto_ack   boolean,
    p_lease_id   uuid,
    p_sub_mode   text,
    p_sub_from   timestamptz
) RETURNS TABLE (
    cand_ord         integer,
    verdict          smallint,
    drained          boolean,
    not_before       timestamptz,
    partition_id     uuid,
    partition_name   text,
    queue_name       text,
    span_start       bigint,
    span_end         bigint,
    attempt          integer,
    lease_expires_at timestamptz,
    seg_base         bigint,
    seg_count        integer,
    seg_created_at   timestamptz,
    seg_blob         bytea
)
LANGUAGE plpgsql
-- Generic plans: every statement below runs on every pop with the same shape, and
-- re-planning it per call costs more than running it (see log_push_multi_v2).
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_queue_mode boolean := p_group = '__QUEUE_MODE__';
    -- Verdict rows are for the hot-list, which named the candidates; a scan and a pinned
    -- pop pay for none.
    v_report     boolean := p_partition IS NULL AND p_candidates IS NOT NULL;
    v_left       integer := greatest(p_batch, 1);
    v_claimed    integer := 0;
    v_now        timestamptz := clock_timestamp();
    v_pid        uuid;
    v_cands      uuid[];
    v_ord        integer := 0;
    v_verdict    smallint;
    v_nb         timestamptz;
    v_held       timestamptz;
    v_last_at    timestamptz;
    p            record;
    c            record;
    v_from       timestamptz;
    v_committed  bigint;
    v_log_start  bigint;
    v_end        bigint;
    v_vis        bigint;
    v_attempt    integer;
    v_lease      integer;
    v_expires    timestamptz;
    v_froms      timestamptz[];
    v_k          bigint;
BEGIN
    -- A named group subscribes to each queue it pops at its first contact with the
    -- queue, not with a partition: a first pop that finds no partition at all (the
    -- consumer started before the producer) must still make the group read everything
    -- pushed after it, in partitions that do not exist yet.
    IF NOT v_queue_mode THEN
        -- In ascending queue id: a first contact may wait for another pop's (see
        -- log_group_from_v2), and one order for every pop leaves no wait cycle.
        v_froms := array_fill(NULL::timestamptz, ARRAY[cardinality(p_queue_ids)]);
        FOR v_k IN SELECT u.ord FROM unnest(p_queue_ids) WITH ORDINALITY AS u(qid, ord) ORDER BY u.qid LOOP
            v_froms[v_k] := queen.log_group_from_v2(p_queue_ids[v_k], p_group, p_sub_mode, p_sub_from);
        END LOOP;
    END IF;

    IF p_partition IS NOT NULL THEN
        SELECT array_agg(lp.id) INTO v_cands FROM queen.log_partitions lp
         WHERE lp.queue_id = p_queue_ids[1] AND lp.name = p_partition;
    ELSIF p_candidates IS NOT NULL THEN
        v_cands := p_candidates;
    ELSE
        -- The SQL candidate scan (QUEEN_HOTLIST=0, and a group's first wildcard pop):
        -- recently written partitions first (the quantised last-write index), random
        -- among equals so consumers spread; only partitions with something after this
        -- group's cursor and no live lease. Over-fetch: some candidates are lost to
        -- concurrent pops before we lock them.
        -- Partitions that windowBuffer or delayedProcessing certainly hide are left out
        -- here, not only in the loop: they are the most recently written ones, so they
        -- would fill the bounded candidate list and starve older deliverable partitions.
        -- last_write_at is quantised to a second (002_push.sql): it never runs ahead of
        -- the last segment's created_at by more than that commit's own duration, so the
        -- window test on it drops only partitions the exact test in the loop skips too
        -- (give or take those milliseconds); the loop still decides for the others.
        SELECT array_agg(x.id) INTO v_cands FROM (
            SELECT lp.id
              FROM queen.log_partitions lp
              JOIN queen.queues q ON q.id = lp.queue_id
              LEFT JOIN queen.log_consumers lc
                ON lc.partition_id = lp.id AND lc.consumer_group = p_group
             WHERE lp.queue_id = ANY (p_queue_ids)
               AND lp.last_offset >= lp.log_start
               AND (lc.partition_id IS NULL
                    OR (lc.committed < lp.last_offset
                        AND (lc.lease_expires_at IS NULL OR lc.lease_expires_at <= v_now)))
               AND (q.window_buffer <= 0
                    OR lp.last_write_at <= v_now - make_interval(secs => q.window_buffer))
               AND (q.delayed_processing <= 0
                    OR (SELECT s.created_at FROM queen.log_segments s
                         WHERE s.partition_id = lp.id
                           AND s.base_offset <= greatest(coalesce(lc.committed, -1), lp.log_start - 1) + 1
                         ORDER BY s.base_offset DESC LIMIT 1)
                       <= v_now - make_interval(secs => q.delayed_processing))
             ORDER BY lp.last_write_at DESC, random()
             LIMIT 4 * greatest(p_max_parts, 1) + 8) x;
    END IF;
    IF v_cands IS NULL THEN
        RETURN;
    END IF;

    -- The claim core, the same for the scan, the candidates and a pinned pop: each
    -- partition ends with a verdict (v_verdict) and, when it took, one claimed span.
    FOREACH v_pid IN ARRAY v_cands LOOP
        EXIT WHEN v_claimed >= greatest(p_max_parts, 1) OR v_left <= 0;
        v_ord := v_ord + 1;
        v_verdict := 5;
        v_nb := NULL;
        v_held := NULL;
        <<try>>
        BEGIN
            -- The partition, and its cursor as it was when this statement started, read
            -- without a lock: a partition leased to another consumer, or with nothing after
            -- the cursor, is answered so without taking the cursor's row lock. Most of the
            -- stale candidates the hot-list names (it errs on the side of excess) are such,
            -- and the lock would dirty the row, give the pop a transaction id and so a WAL
            -- flush at commit, for nothing. The locked read below decides for the rest on
            -- the row's newest version.
            SELECT lp.id, lp.name, lp.queue_id, lp.last_offset, lp.log_start,
                   q.name AS queue_name, q.lease_time, q.configured, q.delayed_processing, q.window_buffer,
                   lc.partition_id IS NOT NULL AS seen, lc.committed AS seen_committed,
                   lc.lease_id IS NOT NULL AND lc.lease_expires_at > v_now AS seen_leased,
                   lc.lease_expires_at AS seen_expires
              INTO p
              FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
              LEFT JOIN queen.log_consumers lc ON lc.partition_id = lp.id AND lc.consumer_group = p_group
             WHERE lp.id = v_pid AND lp.queue_id = ANY (p_queue_ids);
            EXIT try WHEN NOT FOUND;                                   -- gone
            v_verdict := 2;
            EXIT try WHEN p.last_offset < p.log_start;                 -- empty: nothing retained
            IF p.seen_leased THEN
                v_verdict := 3;
                v_held := p.seen_expires;
                EXIT try;
            END IF;
            EXIT try WHEN p.seen AND greatest(p.seen_committed, p.log_start - 1) >= p.last_offset;
            -- windowBuffer: a partition that received data in the last W seconds is quiet,
            -- until its last segment is W seconds old. It does not depend on the cursor, so
            -- it too is decided before any lock.
            IF p.window_buffer > 0 THEN
                SELECT s.created_at INTO v_last_at
                  FROM queen.log_segments s WHERE s.partition_id = v_pid
                 ORDER BY s.base_offset DESC LIMIT 1;
                IF v_last_at > v_now - make_interval(secs => p.window_buffer) THEN
                    v_nb := v_last_at + make_interval(secs => p.window_buffer);
                    EXIT try;
                END IF;
            END IF;

            SELECT lc.committed, lc.batch_end, lc.lease_id, lc.lease_expires_at,
                   lc.delivery_start, lc.delivery_attempt, lc.delivered_end
              INTO c
              FROM queen.log_consumers lc
             WHERE lc.partition_id = v_pid AND lc.consumer_group = p_group
               FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                -- Locked by another pop or ack, or not created yet. Create it only under a
                -- non-blocking try-lock: waiting on another transaction's insert of the same
                -- key is how mass first contact livelocks (docs/reliability.md F20).
                v_verdict := 4;
                EXIT try WHEN EXISTS (SELECT 1 FROM queen.log_consumers lc
                                       WHERE lc.partition_id = v_pid AND lc.consumer_group = p_group);
                EXIT try WHEN NOT pg_try_advisory_xact_lock(
                    hashtextextended('queen.consumer:' || v_pid::text || ':' || p_group, 0));
                v_committed := p.log_start - 1;
                IF NOT v_queue_mode THEN
                    v_from := v_froms[array_position(p_queue_ids, p.queue_id)];
                    -- Another pop was recording the group's subscription and rolled
                    -- back (log_group_from_v2): busy until a pop records it.
                    EXIT try WHEN v_from = 'infinity';
                    IF v_from IS NOT NULL THEN
                        SELECT greatest(s.base_offset + s.msg_count - 1, p.log_start - 1) INTO v_committed
                          FROM queen.log_segments s
                         WHERE s.partition_id = v_pid AND s.created_at < v_from
                         ORDER BY s.base_offset DESC LIMIT 1;
                        v_committed := coalesce(v_committed, p.log_start - 1);
                    END IF;
                END IF;
                -- What a foreign key's check did (there is none, see 001_tables.sql): no
                -- cursor for a partition being deleted (a queue deletion holds it FOR
                -- UPDATE) or deleted. Skipped rather than waited for: see Locks above.
                -- Pushes lock partitions FOR NO KEY UPDATE, which does not conflict.
                -- The lock also holds retention off the partition (it trims only under a
                -- FOR UPDATE lock of it, 012_retention.sql): log_start as read now stays.
                SELECT lp.log_start INTO v_log_start
                  FROM queen.log_partitions lp WHERE lp.id = v_pid FOR KEY SHARE SKIP LOCKED;
                EXIT try WHEN NOT FOUND;
                v_committed := greatest(v_committed, v_log_start - 1);
                INSERT INTO queen.log_consumers AS lc (partition_id, consumer_group, committed, batch_end)
                VALUES (v_pid, p_group, v_committed, v_committed)
                ON CONFLICT ON CONSTRAINT log_consumers_pkey DO NOTHING;
                EXIT try WHEN NOT FOUND;
                SELECT v_committed AS committed, v_committed AS batch_end, NULL::uuid AS lease_id,
                       NULL::timestamptz AS lease_expires_at, -1::bigint AS delivery_start,
                       0 AS delivery_attempt, -1::bigint AS delivered_end
                  INTO c;
            ELSE
                -- Retention trims a partition only while it holds every cursor row of it
                -- (012_retention.sql), so log_start read under this cursor's lock stays
                -- until the claim commits: the segments read below are all there. The
                -- log_start read above without a lock may be older.
                SELECT lp.log_start INTO v_log_start FROM queen.log_partitions lp WHERE lp.id = v_pid;
            END IF;
            -- Again on the newest version of the row, which the lock read.
            IF c.lease_id IS NOT NULL AND c.lease_expires_at > v_now THEN
                v_verdict := 3;
                v_held := c.lease_expires_at;
                EXIT try;
            END IF;
            v_verdict := 2;
            v_committed := greatest(c.committed, v_log_start - 1);
            EXIT try WHEN v_committed >= p.last_offset;
            v_end := least(v_committed + v_left, p.last_offset);
            -- delayedProcessing: only segments at least D seconds old are visible.
            IF p.delayed_processing > 0 THEN
                SELECT s.base_offset + s.msg_count - 1 INTO v_vis
                  FROM queen.log_segments s
                 WHERE s.partition_id = v_pid AND s.base_offset <= v_end
                   AND s.created_at <= v_now - make_interval(secs => p.delayed_processing)
                 ORDER BY s.base_offset DESC LIMIT 1;
                IF v_vis IS NULL OR v_vis <= v_committed THEN
                    -- The segment holding the next wanted offset is the first hidden one.
                    -- Only the hot-list reads the answer (a scan skips it).
                    IF v_report THEN
                        SELECT s.created_at + make_interval(secs => p.delayed_processing) INTO v_nb
                          FROM queen.log_segments s
                         WHERE s.partition_id = v_pid AND s.base_offset <= v_committed + 1
                         ORDER BY s.base_offset DESC LIMIT 1;
                    END IF;
                    EXIT try;
                END IF;
                v_end := least(v_end, v_vis);
            END IF;

            -- A redelivery is a span whose first message was delivered before. Inside the
            -- last delivered span (a lease that expired, a failed or retried item, a
            -- partial ack then expiry) the attempt counts up, also when the span starts
            -- after the old start because a prefix was acked. Past that span but not past
            -- the highest offset ever delivered (a redelivery shorter than the delivery it
            -- repeats, then its continuation) it is at least the second. Beyond it, the
            -- first. So a message delivered again never says 1.
            v_attempt := CASE WHEN c.delivery_start >= 0 AND v_committed + 1 >= c.delivery_start
                                   AND v_committed + 1 <= c.batch_end THEN c.delivery_attempt + 1
                              WHEN v_committed + 1 <= c.delivered_end THEN 2
                              ELSE 1 END;
            IF p_auto_ack THEN
                v_expires := NULL;
                UPDATE queen.log_consumers lc SET
                    committed = v_end, batch_end = v_end, lease_id = NULL, lease_expires_at = NULL,
                    retry_count = 0, delivery_start = v_committed + 1, delivery_attempt = v_attempt,
                    delivered_end = greatest(lc.delivered_end, v_end), last_consumed_at = v_now
                 WHERE lc.partition_id = v_pid AND lc.consumer_group = p_group;
            ELSE
                v_lease := CASE WHEN p_lease_secs > 0 THEN p_lease_secs
                                WHEN p.configured THEN p.lease_time ELSE 60 END;
                v_expires := v_now + make_interval(secs => v_lease);
                UPDATE queen.log_consumers lc SET
                    committed = v_committed, batch_end = v_end, lease_id = p_lease_id,
                    lease_expires_at = v_expires, delivery_start = v_committed + 1,
                    delivery_attempt = v_attempt, delivered_end = greatest(lc.delivered_end, v_end),
                    last_consumed_at = v_now
                 WHERE lc.partition_id = v_pid AND lc.consumer_group = p_group;
            END IF;
            v_verdict := 1;
        END;

        IF v_verdict = 1 THEN
            RETURN QUERY
                SELECT CASE WHEN v_report THEN v_ord END, 1::smallint, v_end >= p.last_offset,
                       NULL::timestamptz, v_pid, p.name, p.queue_name, v_committed + 1, v_end, v_attempt,
                       v_expires, s.base_offset, s.msg_count, s.created_at, s.blob
                  FROM queen.log_segments s
                 WHERE s.partition_id = v_pid
                   AND s.base_offset >= coalesce((SELECT max(s2.base_offset) FROM queen.log_segments s2
                                                   WHERE s2.partition_id = v_pid
                                                     AND s2.base_offset <= v_committed + 1), 0)
                   AND s.base_offset <= v_end
                 ORDER BY s.base_offset;
            v_left := v_left - (v_end - v_committed)::integer;
            v_claimed := v_claimed + 1;
        ELSIF v_report THEN
            -- One row, from the output variables (the segment columns stay NULL: nothing
            -- else assigns them).
            cand_ord := v_ord;
            verdict := v_verdict;
            not_before := v_nb;
            lease_expires_at := v_held;
            partition_id := v_pid;
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;

-- log_extend_lease_v1 renews every live lease held by p_lease_id to
-- max(current expiry, now + p_secs); expired leases are not revived (docs/api.md §5.5).
CREATE OR REPLACE FUNCTION queen.log_extend_lease_v1(p_lease_id uuid, p_secs integer)
RETURNS TABLE (renewed integer, expires_at timestamptz)
LANGUAGE sql AS $$
    WITH r AS (
        UPDATE queen.log_consumers lc
           SET lease_expires_at = greatest(lc.lease_expires_at, clock_timestamp() + make_interval(secs => p_secs))
         WHERE lc.lease_id = p_lease_id AND lc.lease_expires_at > clock_timestamp()
        RETURNING lc.lease_expires_at)
    SELECT count(*)::integer, min(r.lease_expires_at) FROM r
$$;
