-- The push path, per segment: the allocator (log_push_one_v2), the fused
-- bundle (log_push_multi_v2), and the covering-segment lookup (log_segment_at_v1). The
-- broker now pushes through the set-based log_push_multi_v3 (013_push_set.sql); the two
-- per-segment functions stay as its reference, checked against it by the equivalence
-- test, and for older brokers sharing the database. (The v1 functions answered jsonb;
-- databases shared with older brokers keep them.)

-- log_push_one_v2 assigns the offsets of one segment. The caller has already
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
    v_prep    record;
    v_ords    integer[];
    v_pids    uuid[];
    v_wins    integer[];
    v_seen    boolean[];
    v_r       record;
    v_now     timestamptz;
    v_k       integer;
    v_ord     integer;
    v_done    integer;
BEGIN
    -- 1-2. Alignment guard, provisioning and resolution in lock order (013_push_set.sql).
    v_prep := queen.log_push_prepare_v1(p_queues, p_partitions, p_msg_counts, p_hashes,
                                        p_verified, p_blobs, p_tenants);
    IF v_n = 0 THEN
        RETURN;
    END IF;
    v_ords := v_prep.o_ords; v_pids := v_prep.o_pids; v_wins := v_prep.o_wins;

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
