-- The push path: the allocator (log_push_one_v2), the fused bundle (log_push_multi_v2)
-- and the covering-segment lookup (log_segment_at_v1). Seed 000 §4-5 is the specification.
-- (The v1 functions answered jsonb; databases shared with older brokers keep them.)

-- log_push_one_v2 is the only place an offset is assigned. The caller has already
-- resolved the partition id and its deduplication window and holds (or is about to take)
-- the partition row lock; p_now is the bundle timestamp stored as the segment's created_at.
--
-- Result: queued: o_base is the base offset (frame k is at o_base + k), the dup arrays
-- are NULL. Duplicate: o_base is NULL and frames o_dup_idx[j] match the stored offsets
-- o_dup_off[j]; nothing was written for the segment.
CREATE OR REPLACE FUNCTION queen.log_push_one_v2(
    p_pid      uuid,
    p_window   integer,
    p_count    integer,
    p_hashes   bytea,
    p_verified bigint,
    p_blob     bytea,
    p_now      timestamptz,
    OUT o_base    bigint,
    OUT o_dup_idx integer[],
    OUT o_dup_off bigint[]
)
LANGUAGE plpgsql
-- Callers run it with plan_cache_mode = force_generic_plan (log_push_multi_v2 sets it
-- for its whole call): its statements run thousands of times a second with the same
-- shapes, and re-planning them on every call costs more than executing them. It is not
-- set here because a SET clause costs a GUC save/restore on every call.
AS $$
DECLARE
    v_last       bigint;
    v_txns_start bigint;
    v_lo         bigint;
    v_cutoff     timestamptz;
    v_all        bytea;
    v_hit        boolean;
    v_i          integer;
    v_checked    boolean;
BEGIN
    IF p_count IS NULL OR p_count < 1 THEN
        RAISE EXCEPTION 'log_push_one_v2: msg_count must be positive, got %', p_count
            USING ERRCODE = '22023';
    END IF;
    -- A stride mismatch would mis-address acks silently: fail loudly instead.
    IF coalesce(octet_length(p_hashes), -1) <> 16 * p_count THEN
        RAISE EXCEPTION 'log_push_one_v2: hash blob is % bytes, want 16 x % = %',
            octet_length(p_hashes), p_count, 16 * p_count
            USING ERRCODE = '22023';
    END IF;

    -- The allocation: the UPDATE below is the only statement that assigns offsets. The
    -- CASE quantises last_write_at to one second so the update stays HOT most of the time.
    -- With window 0 there is nothing to probe and the UPDATE is also the lock. With a
    -- positive window the first attempt allocates only where the probe below would skip
    -- anyway: no offset past the caller's verified watermark (last_offset = p_verified)
    -- or no retained hash sidecar (last_offset < txns_start, an empty partition too). That is
    -- the common case of a broker pushing to partitions it wrote last, and it saves the
    -- re-lock statement per segment; the row lock is the same one (the bundle's pre-lock
    -- already holds it), so the outcome is the probe path's. Otherwise the probe runs and
    -- a clean probe allocates unconditionally.
    v_checked := p_window <= 0;
    LOOP
        UPDATE queen.log_partitions SET
            last_offset   = last_offset + p_count,
            last_write_at = CASE WHEN clock_timestamp() - last_write_at > interval '1 second'
                                 THEN clock_timestamp() ELSE last_write_at END
         WHERE id = p_pid
           AND (v_checked OR last_offset = p_verified OR last_offset < txns_start)
        RETURNING last_offset INTO v_last;
        EXIT WHEN FOUND;
        IF v_checked THEN
            RAISE EXCEPTION 'log_push_one_v2: partition % not found', p_pid USING ERRCODE = 'P0002';
        END IF;

        -- Probe before allocate, under the row lock: a duplicate writes nothing.
        SELECT last_offset, txns_start INTO v_last, v_txns_start
          FROM queen.log_partitions WHERE id = p_pid FOR NO KEY UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'log_push_one_v2: partition % not found', p_pid USING ERRCODE = 'P0002';
        END IF;
        v_cutoff := clock_timestamp() - make_interval(secs => p_window);
        -- A watermark above the allocator cannot come from this partition's history (it
        -- was deleted and created again behind the broker's back): ignore it.
        v_lo := GREATEST(CASE WHEN p_verified <= v_last THEN p_verified ELSE -1 END,
                         v_txns_start - 1);
        IF v_last > v_lo THEN
            -- Fast screen: the window's hashes as one byte string, searched in C by
            -- position(). A hit may be unaligned (a false positive across two hashes),
            -- so any hit goes to the exact query below; a clean screen allocates at once.
            SELECT string_agg(t.hashes, ''::bytea) INTO v_all
              FROM queen.log_txns t
             WHERE t.partition_id = p_pid AND t.end_offset > v_lo AND t.created_at >= v_cutoff;
            v_hit := false;
            IF v_all IS NOT NULL THEN
                FOR v_i IN 0 .. p_count - 1 LOOP
                    IF position(substring(p_hashes FROM v_i * 16 + 1 FOR 16) IN v_all) > 0 THEN
                        v_hit := true;
                        EXIT;
                    END IF;
                END LOOP;
            END IF;
            IF v_hit THEN
                -- Exact: aligned matches only, earliest original offset per incoming frame.
                SELECT array_agg(m.i ORDER BY m.i), array_agg(m.off ORDER BY m.i) INTO o_dup_idx, o_dup_off
                  FROM (
                    SELECT DISTINCT ON (inc.i) inc.i, t.base_offset + s.k AS off
                      FROM generate_series(0, p_count - 1) AS inc(i)
                      JOIN queen.log_txns t
                        ON t.partition_id = p_pid
                       AND t.end_offset > v_lo
                       AND t.created_at >= v_cutoff
                       AND position(substring(p_hashes FROM inc.i * 16 + 1 FOR 16) IN t.hashes) > 0
                     CROSS JOIN LATERAL generate_series(0, (t.end_offset - t.base_offset)::integer) AS s(k)
                     WHERE substring(t.hashes FROM s.k * 16 + 1 FOR 16)
                         = substring(p_hashes FROM inc.i * 16 + 1 FOR 16)
                     ORDER BY inc.i, off
                  ) m;
                IF o_dup_idx IS NOT NULL THEN
                    RETURN;
                END IF;
            END IF;
        END IF;
        v_checked := true;
    END LOOP;

    INSERT INTO queen.log_segments (partition_id, base_offset, msg_count, created_at, blob)
    VALUES (p_pid, v_last - p_count + 1, p_count, p_now, p_blob);
    -- Always written: ack-by-transactionId resolves through it even with dedup off.
    INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
    VALUES (p_pid, v_last, v_last - p_count + 1, p_now, p_hashes);

    o_base := v_last - p_count + 1;
END
$$;

-- log_push_multi_v2 commits one fusion bundle: N segments, one per input ordinal, in one
-- transaction. It returns one row per input, in lock order (ascending partition id):
-- the input's ordinal (1-based), its partition, and log_push_one_v2's verdict (base NULL
-- for a duplicate), the bundle timestamp and the queue's dedup window in seconds.
CREATE OR REPLACE FUNCTION queen.log_push_multi_v2(
    p_queues     text[],
    p_partitions text[],
    p_msg_counts integer[],
    p_hashes     bytea[],
    p_verified   bigint[],
    p_blobs      bytea[],
    p_tenants    uuid[] DEFAULT NULL
) RETURNS TABLE (ord integer, partition_id uuid, base_offset bigint, created_at timestamptz,
                 window_seconds integer, dup_idx integer[], dup_off bigint[])
LANGUAGE plpgsql
-- Plan once (generic plans), also for the nested log_push_one_v2 calls: see there.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_n       integer := coalesce(cardinality(p_queues), 0);
    v_tenants uuid[]  := p_tenants;
    v_ords    integer[];
    v_pids    uuid[];
    v_wins    integer[];
    v_seen    boolean[];
    v_r       record;
    v_now     timestamptz;
    v_k       integer;
    v_ord     integer;
    v_round   integer;
    v_found   bigint;
    v_done    integer;
BEGIN
    IF v_tenants IS NULL THEN
        v_tenants := array_fill('00000000-0000-0000-0000-000000000001'::uuid, ARRAY[v_n]);
    END IF;
    -- 1. Alignment guard: a silent misalignment would route verdicts to the wrong request.
    IF coalesce(cardinality(p_partitions), 0) <> v_n OR coalesce(cardinality(p_msg_counts), 0) <> v_n
       OR coalesce(cardinality(p_hashes), 0) <> v_n OR coalesce(cardinality(p_verified), 0) <> v_n
       OR coalesce(cardinality(p_blobs), 0) <> v_n OR coalesce(cardinality(v_tenants), 0) <> v_n THEN
        RAISE EXCEPTION 'log_push_multi_v2: misaligned arrays (queues %, partitions %, msg_counts %, hashes %, verified %, blobs %, tenants %)',
            v_n, cardinality(p_partitions), cardinality(p_msg_counts), cardinality(p_hashes),
            cardinality(p_verified), cardinality(p_blobs), cardinality(v_tenants)
            USING ERRCODE = '22023';
    END IF;
    IF v_n = 0 THEN
        RETURN;
    END IF;

    -- 2. Provisioning skip. Resolving every ordinal's partition id is also the
    -- existence count: only when some (queue, partition) is missing do the two inserts
    -- run, each ordered by its unique key so concurrent bundles take speculative
    -- insertion locks in the same order; then the resolution runs again.
    FOR v_round IN 1 .. 2 LOOP
        -- Queues are looked up once per distinct (tenant, queue), partitions once per
        -- ordinal, each by a unique-index subplan: joins here get generic plans that scan
        -- whole tables once they have grown. Rows come out in lock order: the inner
        -- ORDER BY sorts once and keeps the subquery from being flattened (flattened,
        -- each aggregate argument re-ran the partition subplan: four lookups per ordinal),
        -- and one Agg node feeds every aggregate the same sorted rows.
        SELECT array_agg(x.ord), array_agg(x.pid), array_agg(x.win), count(x.pid)
          INTO v_ords, v_pids, v_wins, v_found
          FROM (
            SELECT i.ord::integer AS ord, q.win,
                   (SELECT lp.id FROM queen.log_partitions lp
                     WHERE lp.queue_id = q.qid AND lp.name = i.p) AS pid
              FROM unnest(p_queues, p_partitions, v_tenants) WITH ORDINALITY AS i(q, p, t, ord)
              JOIN (SELECT d.t, d.q,
                           (SELECT qq.id FROM queen.queues qq
                             WHERE qq.tenant_id = d.t AND qq.name = d.q) AS qid,
                           (SELECT qq.dedup_window_seconds FROM queen.queues qq
                             WHERE qq.tenant_id = d.t AND qq.name = d.q) AS win
                      FROM (SELECT DISTINCT u.t, u.q FROM unnest(p_queues, v_tenants) AS u(q, t)) d
                    OFFSET 0 -- a fence: evaluate the queue lookups once per distinct queue
                   ) q ON q.t = i.t AND q.q = i.q
             ORDER BY pid, ord
          ) x;
        EXIT WHEN v_found = v_n OR v_round = 2;

        INSERT INTO queen.queues (tenant_id, name, namespace, task)
        SELECT DISTINCT i.t, i.q,
               CASE WHEN strpos(i.q, '.') > 0 THEN split_part(i.q, '.', 1) ELSE '' END,
               CASE WHEN strpos(i.q, '.') > 0 THEN split_part(i.q, '.', 2) ELSE '' END
          FROM unnest(p_queues, v_tenants) AS i(q, t)
         ORDER BY 1, 2
        ON CONFLICT (tenant_id, name) DO NOTHING;

        -- What a foreign key's check did (there is none, see 001_tables.sql): a queue
        -- being deleted is waited for, and a deleted one gets no partitions. The lock is
        -- taken in the inserting statement itself, so a partition is only ever inserted
        -- under a queue row this transaction holds (with a separate locking statement,
        -- the insert could join a queue row re-created after that statement ran).
        INSERT INTO queen.log_partitions (queue_id, name)
        SELECT DISTINCT qq.id, i.p
          FROM unnest(p_queues, p_partitions, v_tenants) AS i(q, p, t)
          JOIN (SELECT q.id, q.tenant_id, q.name FROM queen.queues q
                 WHERE (q.tenant_id, q.name) IN (SELECT u.t, u.q FROM unnest(v_tenants, p_queues) AS u(t, q))
                 ORDER BY q.id
                   FOR KEY SHARE) qq ON qq.tenant_id = i.t AND qq.name = i.q
         ORDER BY 1, 2
        ON CONFLICT (queue_id, name) DO NOTHING;
    END LOOP;
    IF v_found IS DISTINCT FROM v_n THEN
        RAISE EXCEPTION 'log_push_multi_v2: % of % (queue, partition) pairs could not be resolved', v_found, v_n
            USING ERRCODE = 'P0002';
    END IF;

    -- 3. One set-based pre-lock in the global lock order (ascending partition id).
    -- NO KEY UPDATE, the lock the allocator's UPDATE takes anyway: it serialises pushes
    -- but, unlike FOR UPDATE, does not conflict with the KEY SHARE lock a pop's first
    -- contact takes on the partition before it inserts its cursor (004_pop.sql). With
    -- FOR UPDATE, a transaction that pushes and then acks could deadlock with a pop
    -- holding the consumer row it acks while creating a cursor on the pushed partition.
    PERFORM 1 FROM queen.log_partitions lp
      WHERE lp.id = ANY (v_pids)
      ORDER BY lp.id
        FOR NO KEY UPDATE OF lp;

    -- 4. One bundle timestamp, taken after the locks.
    v_now := clock_timestamp();

    -- 5. Per segment, in ascending partition id order, the allocator.
    v_seen := array_fill(false, ARRAY[v_n]);
    v_done := 0;
    created_at := v_now;
    FOR v_k IN 1 .. coalesce(cardinality(v_ords), 0) LOOP
        v_ord := v_ords[v_k];
        IF NOT v_seen[v_ord] THEN
            v_seen[v_ord] := true;
            v_done := v_done + 1;
        END IF;
        -- An expression, not a query: evaluated without executor start-up per segment.
        v_r := queen.log_push_one_v2(
            v_pids[v_k], v_wins[v_k], p_msg_counts[v_ord], p_hashes[v_ord],
            p_verified[v_ord], p_blobs[v_ord], v_now);
        ord := v_ord; partition_id := v_pids[v_k]; window_seconds := v_wins[v_k];
        base_offset := v_r.o_base; dup_idx := v_r.o_dup_idx; dup_off := v_r.o_dup_off;
        RETURN NEXT;
    END LOOP;

    -- 6. Completeness guard: every input ordinal produced exactly one result.
    IF v_done <> v_n THEN
        RAISE EXCEPTION 'log_push_multi_v2: % of % inputs produced a result (queue or partition vanished)',
            v_done, v_n
            USING ERRCODE = 'P0002';
    END IF;
END
$$;

-- log_segment_at_v1 returns the segment covering p_off in partition p_pid, or no row when
-- retention already removed it. Used to resolve a duplicate's original message id.
CREATE OR REPLACE FUNCTION queen.log_segment_at_v1(p_pid uuid, p_off bigint)
RETURNS TABLE (base_offset bigint, msg_count integer, created_at timestamptz, blob bytea)
LANGUAGE sql STABLE AS $$
    SELECT c.base_offset, c.msg_count, c.created_at, c.blob
      FROM (SELECT s.base_offset, s.msg_count, s.created_at, s.blob
              FROM queen.log_segments s
             WHERE s.partition_id = p_pid AND s.base_offset <= p_off
             ORDER BY s.base_offset DESC
             LIMIT 1) c
     WHERE c.base_offset + c.msg_count > p_off
$$;
