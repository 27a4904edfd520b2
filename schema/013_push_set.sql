-- The set-based push bundle (docs/benchmarks.md, "The set-based bundle"): log_push_multi_v3 allocates the
-- offsets of all its segments with one UPDATE and writes them with one INSERT per table,
-- where log_push_multi_v2 (002_push.sql) calls log_push_one_v2 once per segment, three
-- statements each. It is the broker's only allocator path: fused pushes and transactions
-- both go through it (adapters/postgres/push.go). log_push_multi_v2 and log_push_one_v2
-- stay as the per-segment reference: the equivalence test
-- (adapters/postgres/allocator_equiv_test.go) drives both with the same random bundles,
-- and brokers of an older version sharing the database still call them.
--
-- Rules kept from the per-segment function, and how:
--   - global lock order: every partition row of the bundle is locked by one statement,
--     in ascending id, before anything is probed or allocated;
--   - probe before allocate, under the same lock: the dedup probe of a segment runs
--     after the lock and before its offsets are counted; a duplicate segment writes
--     nothing and moves no offset;
--   - the probe sees what the per-segment path would have written before it: the
--     segments allocated earlier in the same bundle on the same partition are passed to
--     the probe as pending rows (they are inserted only at the end);
--   - the probe is skipped exactly where log_push_one_v2 skips it: window 0, the
--     caller's verified watermark at the partition's last offset, or no retained hash
--     sidecar (last_offset < txns_start, an empty partition too);
--   - the guards: alignment, queue and partition resolution (log_push_prepare_v1, shared
--     with v2), positive counts, the 16-byte hash stride, a partition that vanished
--     before the lock, and one result per input.

-- log_push_prepare_v1 checks a bundle's arrays, provisions missing queues and partitions
-- and resolves every ordinal to its partition id and dedup window, in lock order
-- (ascending partition id, then ordinal). Shared by log_push_multi_v2 and v3.
CREATE OR REPLACE FUNCTION queen.log_push_prepare_v1(
    p_queues     text[],
    p_partitions text[],
    p_msg_counts integer[],
    p_hashes     bytea[],
    p_verified   bigint[],
    p_blobs      bytea[],
    p_tenants    uuid[],
    OUT o_ords   integer[],
    OUT o_pids   uuid[],
    OUT o_wins   integer[]
)
LANGUAGE plpgsql
AS $$
DECLARE
    v_n       integer := coalesce(cardinality(p_queues), 0);
    v_tenants uuid[]  := p_tenants;
    v_round   integer;
    v_found   bigint;
BEGIN
    IF v_tenants IS NULL THEN
        v_tenants := array_fill('00000000-0000-0000-0000-000000000001'::uuid, ARRAY[v_n]);
    END IF;
    -- Alignment guard: a silent misalignment would route verdicts to the wrong request.
    IF coalesce(cardinality(p_partitions), 0) <> v_n OR coalesce(cardinality(p_msg_counts), 0) <> v_n
       OR coalesce(cardinality(p_hashes), 0) <> v_n OR coalesce(cardinality(p_verified), 0) <> v_n
       OR coalesce(cardinality(p_blobs), 0) <> v_n OR coalesce(cardinality(v_tenants), 0) <> v_n THEN
        RAISE EXCEPTION 'log_push: misaligned arrays (queues %, partitions %, msg_counts %, hashes %, verified %, blobs %, tenants %)',
            v_n, cardinality(p_partitions), cardinality(p_msg_counts), cardinality(p_hashes),
            cardinality(p_verified), cardinality(p_blobs), cardinality(v_tenants)
            USING ERRCODE = '22023';
    END IF;
    IF v_n = 0 THEN
        RETURN;
    END IF;

    -- Provisioning skip. Resolving every ordinal's partition id is also the existence
    -- count: only when some (queue, partition) is missing do the two inserts run, each
    -- ordered by its unique key so concurrent bundles take speculative insertion locks in
    -- the same order; then the resolution runs again.
    FOR v_round IN 1 .. 2 LOOP
        -- Queues are looked up once per distinct (tenant, queue), partitions once per
        -- ordinal, each by a unique-index subplan: joins here get generic plans that scan
        -- whole tables once they have grown. Rows come out in lock order: the inner
        -- ORDER BY sorts once and keeps the subquery from being flattened (flattened,
        -- each aggregate argument re-ran the partition subplan: four lookups per ordinal),
        -- and one Agg node feeds every aggregate the same sorted rows.
        SELECT array_agg(x.ord), array_agg(x.pid), array_agg(x.win), count(x.pid)
          INTO o_ords, o_pids, o_wins, v_found
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
        RAISE EXCEPTION 'log_push: % of % (queue, partition) pairs could not be resolved', v_found, v_n
            USING ERRCODE = 'P0002';
    END IF;
END
$$;

-- log_dedup_probe_v1 is the dedup probe of one segment under its partition's row lock:
-- the frames of p_hashes that match a hash stored in the window above p_lo, each with
-- its earliest original offset, or NULLs when none does. The candidates are the
-- partition's hash rows (log_txns) with end_offset > p_lo and created_at inside the
-- window, plus the pending rows: segments of the same bundle and partition allocated
-- before this one and not yet inserted (created at p_pend_at).
CREATE OR REPLACE FUNCTION queen.log_dedup_probe_v1(
    p_pid         uuid,
    p_window      integer,
    p_count       integer,
    p_hashes      bytea,
    p_lo          bigint,
    p_pend_base   bigint[],
    p_pend_end    bigint[],
    p_pend_hashes bytea[],
    p_pend_at     timestamptz,
    OUT o_dup_idx integer[],
    OUT o_dup_off bigint[]
)
LANGUAGE plpgsql
AS $$
DECLARE
    v_cutoff timestamptz := clock_timestamp() - make_interval(secs => p_window);
    v_all    bytea;
    v_i      integer;
BEGIN
    -- Fast screen: the window's hashes as one byte string, searched in C by position().
    -- A hit may be unaligned (a false positive across two hashes), so any hit goes to the
    -- exact query below; a clean screen means no duplicate.
    SELECT string_agg(c.hashes, ''::bytea) INTO v_all
      FROM (SELECT t.hashes FROM queen.log_txns t
             WHERE t.partition_id = p_pid AND t.end_offset > p_lo AND t.created_at >= v_cutoff
            UNION ALL
            SELECT p.h FROM unnest(p_pend_end, p_pend_hashes) AS p(e, h)
             WHERE p.e > p_lo AND p_pend_at >= v_cutoff) c;
    IF v_all IS NULL THEN
        RETURN;
    END IF;
    FOR v_i IN 0 .. p_count - 1 LOOP
        IF position(substring(p_hashes FROM v_i * 16 + 1 FOR 16) IN v_all) > 0 THEN
            -- Exact: aligned matches only, earliest original offset per incoming frame.
            SELECT array_agg(m.i ORDER BY m.i), array_agg(m.off ORDER BY m.i) INTO o_dup_idx, o_dup_off
              FROM (
                SELECT DISTINCT ON (inc.i) inc.i, c.base_offset + s.k AS off
                  FROM generate_series(0, p_count - 1) AS inc(i)
                  JOIN (SELECT t.base_offset, t.end_offset, t.hashes FROM queen.log_txns t
                         WHERE t.partition_id = p_pid AND t.end_offset > p_lo AND t.created_at >= v_cutoff
                        UNION ALL
                        SELECT p.b, p.e, p.h FROM unnest(p_pend_base, p_pend_end, p_pend_hashes) AS p(b, e, h)
                         WHERE p.e > p_lo AND p_pend_at >= v_cutoff) c
                    ON position(substring(p_hashes FROM inc.i * 16 + 1 FOR 16) IN c.hashes) > 0
                 CROSS JOIN LATERAL generate_series(0, (c.end_offset - c.base_offset)::integer) AS s(k)
                 WHERE substring(c.hashes FROM s.k * 16 + 1 FOR 16)
                     = substring(p_hashes FROM inc.i * 16 + 1 FOR 16)
                 ORDER BY inc.i, off
              ) m;
            RETURN;
        END IF;
    END LOOP;
END
$$;

-- log_push_multi_v3 commits one fusion bundle: N segments, one per input ordinal, in one
-- transaction, with log_push_multi_v2's arguments and results (one row per input in lock
-- order: ordinal, partition, base offset or NULL for a duplicate, bundle timestamp, the
-- queue's dedup window in seconds, the duplicate frames and their stored offsets).
CREATE OR REPLACE FUNCTION queen.log_push_multi_v3(
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
-- Plan once (generic plans): the statements run thousands of times a second with the
-- same shapes, and re-planning them costs more than executing them.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_n      integer := coalesce(cardinality(p_queues), 0);
    v_prep   record;
    v_ords   integer[]; -- the ordinals, their partitions and windows, in lock order
    v_pids   uuid[];
    v_wins   integer[];
    v_lk_ids uuid[];   -- locked partitions, ascending id, with their state at the lock
    v_lk_end bigint[];
    v_lk_txs bigint[];
    v_j      integer := 0;
    v_pid    uuid;     -- the partition being allocated, its running last offset and txns_start
    v_last   bigint;
    v_start  bigint;
    v_moved  boolean;  -- the partition allocated something in this bundle
    v_cnt    integer;
    v_hash   bytea;
    v_ver    bigint;
    v_lo     bigint;
    v_probe  record;
    v_now    timestamptz;
    v_na     integer := 0;  -- allocated segments: ordinal, partition, base offset
    v_a_ord  integer[] := '{}';
    v_a_pid  uuid[] := '{}';
    v_a_base bigint[] := '{}';
    v_nu     integer := 0;  -- moved partitions and their new last offsets
    v_u_pid  uuid[] := '{}';
    v_u_last bigint[] := '{}';
    v_np     integer := 0;  -- this partition's pending segments, for the probe
    v_p_base bigint[];
    v_p_end  bigint[];
    v_p_hash bytea[];
    v_seen   boolean[];
    v_done   integer := 0;
    v_k      integer;
    v_ord    integer;
BEGIN
    v_prep := queen.log_push_prepare_v1(p_queues, p_partitions, p_msg_counts, p_hashes,
                                        p_verified, p_blobs, p_tenants);
    IF v_n = 0 THEN
        RETURN;
    END IF;
    v_ords := v_prep.o_ords; v_pids := v_prep.o_pids; v_wins := v_prep.o_wins;

    -- 1. One set-based lock in the global lock order (ascending partition id), reading
    -- each partition's allocator state under it. NO KEY UPDATE, the lock the allocating
    -- UPDATE takes anyway: unlike FOR UPDATE it does not conflict with the KEY SHARE lock
    -- a pop's first contact takes before it inserts its cursor (see log_push_multi_v2).
    SELECT array_agg(l.id ORDER BY l.id), array_agg(l.last_offset ORDER BY l.id),
           array_agg(l.txns_start ORDER BY l.id)
      INTO v_lk_ids, v_lk_end, v_lk_txs
      FROM (SELECT lp.id, lp.last_offset, lp.txns_start FROM queen.log_partitions lp
             WHERE lp.id = ANY (v_pids)
             ORDER BY lp.id
               FOR NO KEY UPDATE OF lp) l;

    -- 2. One bundle timestamp, taken after the locks.
    v_now := clock_timestamp();

    -- 3. Per segment, in lock order: guards, probe where needed, offsets counted in
    -- memory. Segments of one partition are consecutive.
    v_seen := array_fill(false, ARRAY[v_n]);
    created_at := v_now;
    FOR v_k IN 1 .. cardinality(v_ords) LOOP
        v_ord := v_ords[v_k];
        IF NOT v_seen[v_ord] THEN
            v_seen[v_ord] := true;
            v_done := v_done + 1;
        END IF;
        IF v_pids[v_k] IS DISTINCT FROM v_pid THEN
            IF v_moved THEN
                v_nu := v_nu + 1; v_u_pid[v_nu] := v_pid; v_u_last[v_nu] := v_last;
            END IF;
            v_pid := v_pids[v_k];
            v_j := v_j + 1;
            IF v_j > coalesce(cardinality(v_lk_ids), 0) OR v_lk_ids[v_j] <> v_pid THEN
                RAISE EXCEPTION 'log_push_multi_v3: partition % not found', v_pid USING ERRCODE = 'P0002';
            END IF;
            v_last := v_lk_end[v_j]; v_start := v_lk_txs[v_j]; v_moved := false;
            v_np := 0; v_p_base := '{}'; v_p_end := '{}'; v_p_hash := '{}';
        END IF;

        v_cnt := p_msg_counts[v_ord]; v_hash := p_hashes[v_ord]; v_ver := p_verified[v_ord];
        IF v_cnt IS NULL OR v_cnt < 1 THEN
            RAISE EXCEPTION 'log_push_multi_v3: msg_count must be positive, got %', v_cnt
                USING ERRCODE = '22023';
        END IF;
        -- A stride mismatch would mis-address acks silently: fail loudly instead.
        IF coalesce(octet_length(v_hash), -1) <> 16 * v_cnt THEN
            RAISE EXCEPTION 'log_push_multi_v3: hash blob is % bytes, want 16 x % = %',
                octet_length(v_hash), v_cnt, 16 * v_cnt
                USING ERRCODE = '22023';
        END IF;

        ord := v_ord; partition_id := v_pid; window_seconds := v_wins[v_k];
        base_offset := NULL; dup_idx := NULL; dup_off := NULL;
        -- Probe before allocate, where log_push_one_v2 probes: a positive window, the
        -- caller's watermark not at the last offset, and a retained hash sidecar.
        IF window_seconds > 0 AND v_last <> v_ver AND v_last >= v_start THEN
            -- A watermark above the allocator cannot come from this partition's history
            -- (it was deleted and created again behind the broker's back): ignore it.
            v_lo := GREATEST(CASE WHEN v_ver <= v_last THEN v_ver ELSE -1 END, v_start - 1);
            IF v_last > v_lo THEN
                v_probe := queen.log_dedup_probe_v1(v_pid, window_seconds, v_cnt, v_hash, v_lo,
                                                    v_p_base, v_p_end, v_p_hash, v_now);
                dup_idx := v_probe.o_dup_idx; dup_off := v_probe.o_dup_off;
            END IF;
        END IF;
        IF dup_idx IS NULL THEN
            base_offset := v_last + 1;
            v_last := v_last + v_cnt;
            v_moved := true;
            v_na := v_na + 1;
            v_a_ord[v_na] := v_ord; v_a_pid[v_na] := v_pid; v_a_base[v_na] := base_offset;
            v_np := v_np + 1;
            v_p_base[v_np] := base_offset; v_p_end[v_np] := v_last; v_p_hash[v_np] := v_hash;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_moved THEN
        v_nu := v_nu + 1; v_u_pid[v_nu] := v_pid; v_u_last[v_nu] := v_last;
    END IF;

    -- 4. Completeness guard: every input ordinal produced exactly one result.
    IF v_done <> v_n THEN
        RAISE EXCEPTION 'log_push_multi_v3: % of % inputs produced a result (queue or partition vanished)',
            v_done, v_n
            USING ERRCODE = 'P0002';
    END IF;
    IF v_na = 0 THEN
        RETURN;
    END IF;

    -- 5. The allocation, one statement for every partition, the rows already locked. The
    -- CASE quantises last_write_at to one second so the update stays HOT most of the time.
    UPDATE queen.log_partitions lp SET
        last_offset   = u.last,
        last_write_at = CASE WHEN clock_timestamp() - lp.last_write_at > interval '1 second'
                             THEN clock_timestamp() ELSE lp.last_write_at END
      FROM unnest(v_u_pid, v_u_last) AS u(id, last)
     WHERE lp.id = u.id;

    -- 6. The segments and their hash rows, one statement per table, in lock order. The
    -- hash row is always written: ack-by-transactionId resolves through it even with
    -- dedup off.
    INSERT INTO queen.log_segments (partition_id, base_offset, msg_count, created_at, blob)
    SELECT a.pid, a.base, p_msg_counts[a.ord], v_now, p_blobs[a.ord]
      FROM unnest(v_a_pid, v_a_base, v_a_ord) AS a(pid, base, ord);
    INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
    SELECT a.pid, a.base + p_msg_counts[a.ord] - 1, a.base, v_now, p_hashes[a.ord]
      FROM unnest(v_a_pid, v_a_base, v_a_ord) AS a(pid, base, ord);
END
$$;
