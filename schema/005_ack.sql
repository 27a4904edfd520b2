-- The ack path (docs/api.md §5.3): identity by (partition, transactionId) resolved through the
-- hash sidecar, optional lease fencing, implicit ack of the prefix, explicit signals that
-- clamp the cursor, the retry budget, then dead-letter or drop.

-- log_resolve_v1 returns the newest offset of partition p_pid whose transaction-id hash is
-- p_hash, searching segments ending after p_after first (the delivered span: the cheap
-- common case), then the rest of the resolution window; NULL when not found.
CREATE OR REPLACE FUNCTION queen.log_resolve_v1(p_pid uuid, p_hash bytea, p_after bigint, p_window integer)
RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        (SELECT t.base_offset + s.k
           FROM queen.log_txns t
          CROSS JOIN LATERAL generate_series(0, (t.end_offset - t.base_offset)::integer) AS s(k)
          WHERE t.partition_id = p_pid AND t.end_offset > p_after
            AND position(p_hash IN t.hashes) > 0
            AND substring(t.hashes FROM s.k * 16 + 1 FOR 16) = p_hash
          ORDER BY 1 DESC LIMIT 1),
        (SELECT t.base_offset + s.k
           FROM queen.log_txns t
          CROSS JOIN LATERAL generate_series(0, (t.end_offset - t.base_offset)::integer) AS s(k)
          WHERE t.partition_id = p_pid AND t.end_offset <= p_after
            AND t.created_at >= clock_timestamp() - make_interval(secs => p_window)
            AND position(p_hash IN t.hashes) > 0
            AND substring(t.hashes FROM s.k * 16 + 1 FOR 16) = p_hash
          ORDER BY 1 DESC LIMIT 1))
$$;

-- log_match_v1 pairs acked transaction-id hashes with the offsets that carry them.
-- p_offs/p_offh are candidate offsets and their hashes (parallel, any order); p_items are
-- item indexes into p_hashes, ascending (input order). The k-th item naming a hash gets
-- that hash's k-th copy in offset order, or the last copy when there are fewer copies;
-- with p_newest every item gets the last (newest) copy. Items whose hash has no copy are
-- left out.
--
-- There is no join: both sides are sorted together by hash and window functions pick
-- each item's copy, so the cost is one sort of items plus offsets whatever the planner
-- estimates. (A generic plan estimates an unnested parameter after a filter at one row
-- and joins it with a nested loop that rescans every offset once per item.)
CREATE OR REPLACE FUNCTION queen.log_match_v1(p_offs bigint[], p_offh bytea[], p_items integer[],
                                              p_hashes bytea[], p_newest boolean)
RETURNS TABLE (i integer, off bigint)
LANGUAGE sql IMMUTABLE AS $$
    SELECT s.i, s.pick FROM (
        SELECT r.kind, r.i, r.n,
               nth_value(r.off, greatest(CASE WHEN p_newest THEN r.n ELSE least(r.rn, r.n) END, 1)::integer)
                   OVER (PARTITION BY r.h ORDER BY r.kind, r.ord
                         ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS pick
          FROM (SELECT e.kind, e.ord, e.off, e.h, e.i,
                       row_number() OVER (PARTITION BY e.h, e.kind ORDER BY e.ord) AS rn,
                       count(*) FILTER (WHERE e.kind = 0) OVER (PARTITION BY e.h) AS n
                  FROM (SELECT 0 AS kind, o.off AS ord, o.off, o.h, NULL::integer AS i
                          FROM unnest(p_offs, p_offh) AS o(off, h)
                        UNION ALL
                        SELECT 1, it.i, NULL, p_hashes[it.i], it.i
                          FROM unnest(p_items) AS it(i)) e) r) s
     WHERE s.kind = 1 AND s.n > 0
$$;

-- log_span_hashes_v1 expands partition p_pid's hash sidecar over the offsets
-- (p_after, p_last]: one row per offset with its transaction-id hash. Each sidecar row is
-- read and detoasted once (the fenced subquery materialises it), not once per frame.
-- Both ends of the primary-key range are bounds of the index scan: the upper one is the
-- end of the row holding p_last (one probe). With only end_offset > p_after bounded, the
-- scan read every row up to the partition's head and filtered on base_offset: an ack of
-- 100 messages on a backlog of 600 in segments of 4 read up to 150 rows to use 25.
CREATE OR REPLACE FUNCTION queen.log_span_hashes_v1(p_pid uuid, p_after bigint, p_last bigint)
RETURNS TABLE (off bigint, h bytea)
LANGUAGE sql STABLE AS $$
    SELECT t.base_offset + k, substring(t.hashes FROM k * 16 + 1 FOR 16)
      FROM (SELECT t.base_offset, t.end_offset, t.hashes || '\x'::bytea AS hashes
              FROM queen.log_txns t
             WHERE t.partition_id = p_pid AND t.end_offset > p_after
               -- No row ends at or after p_last (trimmed sidecar): every row after the
               -- cursor ends before it.
               AND t.end_offset <= coalesce((SELECT l.end_offset FROM queen.log_txns l
                                              WHERE l.partition_id = p_pid AND l.end_offset >= p_last
                                              ORDER BY l.end_offset LIMIT 1), p_last)
            OFFSET 0) t
     CROSS JOIN LATERAL generate_series(greatest(p_after + 1 - t.base_offset, 0)::integer,
                                        (least(p_last, t.end_offset) - t.base_offset)::integer) AS k
$$;

-- log_window_hashes_v1 expands what log_resolve_v1 searches: every offset of the
-- sidecar rows ending after p_after, and of those ending at or before it created in the
-- last p_window seconds.
CREATE OR REPLACE FUNCTION queen.log_window_hashes_v1(p_pid uuid, p_after bigint, p_window integer)
RETURNS TABLE (off bigint, h bytea)
LANGUAGE sql STABLE AS $$
    SELECT t.base_offset + k, substring(t.hashes FROM k * 16 + 1 FOR 16)
      FROM (SELECT t.base_offset, t.end_offset, t.hashes || '\x'::bytea AS hashes
              FROM queen.log_txns t
             WHERE t.partition_id = p_pid AND t.end_offset > p_after
            UNION ALL
            SELECT t.base_offset, t.end_offset, t.hashes || '\x'::bytea
              FROM queen.log_txns t
             WHERE t.partition_id = p_pid AND t.end_offset <= p_after
               AND t.created_at >= clock_timestamp() - make_interval(secs => p_window)
            OFFSET 0) t
     CROSS JOIN LATERAL generate_series(0, (t.end_offset - t.base_offset)::integer) AS k
$$;

-- log_ack_v2 applies acknowledgements (v1 answered without the queue and partition names;
-- databases shared with older brokers keep it for them). Items are parallel arrays; status is one of
-- 'completed', 'failed', 'retry', 'dlq' (the broker normalises the wire value). Items are
-- applied per (partition, group) in ascending partition id (the global lock order), each
-- under that consumer row's lock. One result row per item, in input order.
--
-- p_strict (transactions, docs/api.md §5.4): an unknown transactionId or a lease failure
-- raises instead of being reported, rolling back the caller's transaction. p_hint is the
-- transaction's single unambiguous lease hint, checked for acks without their own lease
-- when the row has no live holder.
--
-- Cost: every step is linear in the items (or one sort of them), never items times
-- groups or items times offsets: items are grouped once by (partition, group), each
-- group's delivered span is expanded once (each hash sidecar row read and detoasted
-- once) and matched by log_match_v1.
CREATE OR REPLACE FUNCTION queen.log_ack_v2(
    p_pids     uuid[],
    p_groups   text[],
    p_hashes   bytea[],
    p_txn_ids  text[],
    p_statuses text[],
    p_leases   uuid[],
    p_errors   text[],
    p_strict   boolean DEFAULT false,
    p_hint     uuid DEFAULT NULL
) RETURNS TABLE (idx integer, ok boolean, err text, released boolean, dlq boolean, noop boolean,
                queue_name text, partition_name text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_n        integer := coalesce(cardinality(p_pids), 0);
    v_ok       boolean[];
    v_err      text[];
    v_rel      boolean[];
    v_dlq      boolean[];
    v_noop     boolean[];
    v_qname    text[];
    v_pname    text[];
    v_off      bigint[];
    v_fenced   boolean[];
    g          record;
    c          record;
    q          record;
    v_i        integer;
    v_live     boolean;
    v_lease    uuid;
    v_valid    integer[];
    v_left     integer[];
    v_hc       bigint;
    v_sig      bigint;
    v_sig_kind text;
    v_sig_idx  integer;
    v_new      bigint;
    v_release  boolean;
    v_retry    integer;
    v_to_dlq   boolean;
    v_now      timestamptz := clock_timestamp();
    v_offs     bigint[];
    v_offh     bytea[];
    m          record;
BEGIN
    IF coalesce(cardinality(p_groups), 0) <> v_n OR coalesce(cardinality(p_hashes), 0) <> v_n
       OR coalesce(cardinality(p_txn_ids), 0) <> v_n OR coalesce(cardinality(p_statuses), 0) <> v_n
       OR coalesce(cardinality(p_leases), 0) <> v_n OR coalesce(cardinality(p_errors), 0) <> v_n THEN
        RAISE EXCEPTION 'log_ack_v2: misaligned arrays' USING ERRCODE = '22023';
    END IF;
    v_ok := array_fill(false, ARRAY[v_n]);
    v_err := array_fill(NULL::text, ARRAY[v_n]);
    v_rel := array_fill(false, ARRAY[v_n]);
    v_dlq := array_fill(false, ARRAY[v_n]);
    v_noop := array_fill(false, ARRAY[v_n]);
    v_qname := array_fill(NULL::text, ARRAY[v_n]);
    v_pname := array_fill(NULL::text, ARRAY[v_n]);
    v_off := array_fill(NULL::bigint, ARRAY[v_n]);
    v_fenced := array_fill(false, ARRAY[v_n]);

    -- One row per (partition, group) with its items in input order.
    FOR g IN SELECT u.pid, u.grp, array_agg(u.i::integer ORDER BY u.i) AS items
               FROM unnest(p_pids, p_groups) WITH ORDINALITY AS u(pid, grp, i)
              GROUP BY u.pid, u.grp ORDER BY 1, 2 LOOP
        SELECT lc.committed, lc.batch_end, lc.lease_id, lc.lease_expires_at, lc.retry_count
          INTO c FROM queen.log_consumers lc
         WHERE lc.partition_id = g.pid AND lc.consumer_group = g.grp
           FOR UPDATE;
        IF NOT FOUND THEN
            FOREACH v_i IN ARRAY g.items LOOP
                v_err[v_i] := 'consumer not found';
            END LOOP;
            IF p_strict THEN
                RAISE EXCEPTION 'QTXN ack references unknown transactionId; transaction rolled back (no consumer for partition % group %)', g.pid, g.grp
                    USING ERRCODE = 'P0002';
            END IF;
            CONTINUE;
        END IF;
        SELECT qq.id, qq.retry_limit, (qq.dead_letter_queue OR qq.dlq_after_max_retries) AS dlq_on,
               greatest(qq.dedup_window_seconds, qq.completed_retention_seconds, 900) AS res_window,
               qq.name, lp.name AS partition
          INTO q FROM queen.log_partitions lp JOIN queen.queues qq ON qq.id = lp.queue_id
         WHERE lp.id = g.pid;
        v_live := c.lease_id IS NOT NULL AND c.lease_expires_at > v_now;

        -- Resolve the items of the delivered span (the common case) in one pass over its
        -- hash sidecar rows. A transactionId pushed again after the dedup window (or with
        -- dedup off) can occur several times in the span: the n-th item of this call
        -- naming it gets its n-th copy after the cursor (the last one when there are
        -- fewer copies). Taking the newest copy instead would let an ack of the first
        -- copy complete everything up to the later one, and a failure of the first copy
        -- complete the message itself, unseen.
        --
        -- Items that name the span's messages in offset order, each once (a client acking
        -- what it popped, as popped), pair with the offsets as they come: the same pairs
        -- log_match_v1 makes (the k-th item naming a hash is then the k-th copy of it),
        -- without its sort and window passes (a quarter of a 100-item ack).
        IF c.batch_end > c.committed THEN
            SELECT array_agg(x.off ORDER BY x.off), array_agg(x.h ORDER BY x.off) INTO v_offs, v_offh
              FROM queen.log_span_hashes_v1(g.pid, c.committed, c.batch_end) x;
            IF v_offh = ARRAY(SELECT p_hashes[u.i] FROM unnest(g.items) WITH ORDINALITY AS u(i, o) ORDER BY u.o) THEN
                -- The whole call completing the whole span of one live lease: the answer
                -- of the general path below (every item valid, the cursor at the span's
                -- end, the lease released, the names on the first item) without its
                -- per-item statements, which are half of such an ack's time.
                IF cardinality(g.items) = v_n AND v_live AND c.batch_end - c.committed = v_n
                   AND NOT EXISTS (SELECT 1 FROM generate_series(1, v_n) AS i
                                    WHERE p_statuses[i] IS DISTINCT FROM 'completed'
                                       OR coalesce(p_leases[i] <> c.lease_id, false)) THEN
                    UPDATE queen.log_consumers lc SET
                        committed = c.batch_end, lease_id = NULL, lease_expires_at = NULL,
                        retry_count = 0, last_consumed_at = v_now
                     WHERE lc.partition_id = g.pid AND lc.consumer_group = g.grp;
                    RETURN QUERY SELECT i::integer, true, NULL::text, true, false, false,
                                        CASE WHEN i = 1 THEN q.name END, CASE WHEN i = 1 THEN q.partition END
                                   FROM generate_series(1, v_n) AS i;
                    RETURN;
                END IF;
                FOR v_i IN 1 .. cardinality(g.items) LOOP
                    v_off[g.items[v_i]] := v_offs[v_i];
                END LOOP;
            ELSE
                FOR m IN SELECT * FROM queen.log_match_v1(v_offs, v_offh, g.items, p_hashes, false) LOOP
                    v_off[m.i] := m.off;
                END LOOP;
            END IF;
        END IF;

        -- Fence, then resolve what the span did not hold (below the cursor, beyond the
        -- span, or unknown): newest copy first, in the resolution window. A few items
        -- are probed one by one (each probe skips segments without the hash); many are
        -- matched in one pass over the window's hash rows instead of one pass each.
        v_left := '{}';
        FOREACH v_i IN ARRAY g.items LOOP
            v_lease := coalesce(p_leases[v_i], CASE WHEN NOT v_live THEN p_hint END);
            v_fenced[v_i] := v_lease IS NOT NULL AND (NOT v_live OR c.lease_id <> v_lease);
            IF NOT v_fenced[v_i] AND v_off[v_i] IS NULL THEN
                v_left := v_left || v_i;
            END IF;
        END LOOP;
        IF cardinality(v_left) > 16 THEN
            SELECT array_agg(x.off), array_agg(x.h) INTO v_offs, v_offh
              FROM queen.log_window_hashes_v1(g.pid, c.committed, q.res_window) x;
            FOR m IN SELECT * FROM queen.log_match_v1(v_offs, v_offh, v_left, p_hashes, true) LOOP
                v_off[m.i] := m.off;
            END LOOP;
        ELSE
            FOREACH v_i IN ARRAY v_left LOOP
                v_off[v_i] := queen.log_resolve_v1(g.pid, p_hashes[v_i], c.committed, q.res_window);
            END LOOP;
        END IF;

        -- Per item, in input order: classify. Valid items are inside the delivered span.
        v_valid := '{}';
        FOREACH v_i IN ARRAY g.items LOOP
            IF v_fenced[v_i] THEN
                v_err[v_i] := 'invalid or expired lease';
                IF p_strict THEN
                    RAISE EXCEPTION 'QLEASE invalid or expired lease for transactionId %; transaction rolled back', p_txn_ids[v_i]
                        USING ERRCODE = 'P0001';
                END IF;
            ELSIF v_off[v_i] IS NULL THEN
                v_err[v_i] := 'transactionId not found in partition';
                IF p_strict THEN
                    RAISE EXCEPTION 'QTXN ack references unknown transactionId %; transaction rolled back', p_txn_ids[v_i]
                        USING ERRCODE = 'P0002';
                END IF;
            ELSIF v_off[v_i] <= c.committed THEN
                IF p_statuses[v_i] = 'completed' THEN
                    v_ok[v_i] := true;
                    v_noop[v_i] := true;
                ELSE
                    v_err[v_i] := 'already committed: the cursor moved past this message before this ack';
                END IF;
            ELSIF c.batch_end <= c.committed THEN
                v_err[v_i] := 'no leased batch';
            ELSIF v_off[v_i] > c.batch_end THEN
                v_err[v_i] := 'position beyond leased batch';
            ELSE
                v_valid := v_valid || v_i;
            END IF;
        END LOOP;
        CONTINUE WHEN cardinality(v_valid) = 0;

        -- Highest completed offset, and the lowest explicit signal (dlq > failed > retry
        -- at the same offset).
        v_hc := NULL; v_sig := NULL; v_sig_kind := NULL; v_sig_idx := NULL;
        FOREACH v_i IN ARRAY v_valid LOOP
            IF p_statuses[v_i] = 'completed' THEN
                v_hc := greatest(v_hc, v_off[v_i]);
            ELSIF v_sig IS NULL OR v_off[v_i] < v_sig
                  OR (v_off[v_i] = v_sig AND
                      array_position(ARRAY['dlq', 'failed', 'retry'], p_statuses[v_i])
                      < array_position(ARRAY['dlq', 'failed', 'retry'], v_sig_kind)) THEN
                v_sig := v_off[v_i]; v_sig_kind := p_statuses[v_i]; v_sig_idx := v_i;
            END IF;
        END LOOP;

        v_retry := c.retry_count;
        v_to_dlq := false;
        IF v_sig IS NULL THEN
            -- Implicit ack: everything up to the highest completed offset is done.
            v_new := greatest(c.committed, v_hc);
            v_release := v_new >= c.batch_end;
            IF v_release THEN
                v_retry := 0;
            END IF;
        ELSE
            -- Explicit signals win: the cursor stops below the signalled message.
            v_new := greatest(c.committed, v_sig - 1);
            v_release := true;
            IF v_sig_kind = 'dlq' OR (v_sig_kind = 'failed' AND c.retry_count >= q.retry_limit) THEN
                v_to_dlq := v_sig_kind = 'dlq' OR q.dlq_on;
                v_new := v_sig; -- dead-lettered or dropped: the partition moves on
                v_retry := 0;
            ELSIF v_sig_kind = 'failed' THEN
                v_retry := c.retry_count + 1;
            END IF;
        END IF;

        IF v_to_dlq THEN
            INSERT INTO queen.dlq (queue_id, partition_id, consumer_group, msg_offset, transaction_id,
                                   error_message, retry_count, created_at, frame_index, blob)
            SELECT q.id, g.pid, g.grp, v_sig, p_txn_ids[v_sig_idx],
                   coalesce(nullif(p_errors[v_sig_idx], ''), 'Retries exhausted'), c.retry_count,
                   s.created_at, (v_sig - s.base_offset)::integer, s.blob
              FROM queen.log_segments s
             WHERE s.partition_id = g.pid AND s.base_offset <= v_sig
             ORDER BY s.base_offset DESC LIMIT 1;
        END IF;

        UPDATE queen.log_consumers lc SET
            committed = v_new,
            batch_end = greatest(c.batch_end, v_new),
            lease_id = CASE WHEN v_release THEN NULL ELSE lc.lease_id END,
            lease_expires_at = CASE WHEN v_release THEN NULL ELSE lc.lease_expires_at END,
            retry_count = v_retry,
            last_consumed_at = v_now
         WHERE lc.partition_id = g.pid AND lc.consumer_group = g.grp;

        FOREACH v_i IN ARRAY v_valid LOOP
            v_ok[v_i] := true;
            v_rel[v_i] := v_release;
            v_dlq[v_i] := v_to_dlq AND v_off[v_i] = v_sig AND p_statuses[v_i] <> 'completed';
            -- Names where the broker needs them: the group's first released item (the
            -- hot-list's promote) and each dead letter (a commit announcement).
            IF (v_release AND v_i = v_valid[1]) OR v_dlq[v_i] THEN
                v_qname[v_i] := q.name;
                v_pname[v_i] := q.partition;
            END IF;
        END LOOP;
    END LOOP;

    RETURN QUERY SELECT i::integer, v_ok[i], v_err[i], v_rel[i], v_dlq[i], v_noop[i], v_qname[i], v_pname[i]
                   FROM generate_series(1, v_n) AS i;
END
$$;
