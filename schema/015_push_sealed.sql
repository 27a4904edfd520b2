-- log_push_multi_v4: log_push_multi_v3 (013_push_set.sql) guarded against plaintext for
-- encrypted queues. A broker decides whether to seal a payload from its cached copy of
-- the queue's encryptionEnabled flag, which can be stale: another broker may have
-- switched the queue on milliseconds ago (its announcement still in flight, or lost:
-- then for a whole cache interval). The flag that counts is the row in queen.queues, so
-- the check is made here, in the transaction that would store the segment: a bundle
-- whose statement starts after the configure committed sees the new flag.
--
-- p_plain says, per segment, that some frame of it is stored unsealed. NULL when no
-- segment is (every frame sealed): then nothing is checked and v4 is v3. Otherwise the
-- flag of each distinct (tenant, queue) of the plain segments is read once, by its
-- unique index, and every plain segment of a queue that encrypts is refused: nothing is
-- provisioned or allocated for it, and its row carries only its ordinal (base_offset
-- and dup_idx both NULL, which no committed or duplicate segment answers). A queue that
-- does not exist yet does not encrypt. The other segments are committed by v3, exactly
-- as v3 would commit them alone. The flag is read without a lock: a configure
-- committing while the bundle runs is concurrent with it, and either order is right.
CREATE OR REPLACE FUNCTION queen.log_push_multi_v4(
    p_queues     text[],
    p_partitions text[],
    p_msg_counts integer[],
    p_hashes     bytea[],
    p_verified   bigint[],
    p_blobs      bytea[],
    p_tenants    uuid[]    DEFAULT NULL,
    p_plain      boolean[] DEFAULT NULL
) RETURNS TABLE (ord integer, partition_id uuid, base_offset bigint, created_at timestamptz,
                 window_seconds integer, dup_idx integer[], dup_off bigint[])
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    v_n       integer := coalesce(cardinality(p_queues), 0);
    v_tenants uuid[]  := p_tenants;
    v_keep    integer[]; -- ordinals committed by v3, ascending
    v_refused integer[]; -- ordinals refused: plain, and their queue encrypts
BEGIN
    IF p_plain IS NULL THEN
        RETURN QUERY SELECT * FROM queen.log_push_multi_v3(p_queues, p_partitions, p_msg_counts,
                                                           p_hashes, p_verified, p_blobs, p_tenants);
        RETURN;
    END IF;
    -- v3 checks the arrays it is given; the kept ones are cut from these, so these are
    -- checked first (a silent misalignment would refuse or commit the wrong segment).
    IF coalesce(cardinality(p_plain), 0) <> v_n OR array_position(p_plain, NULL) IS NOT NULL
       OR coalesce(cardinality(p_partitions), 0) <> v_n OR coalesce(cardinality(p_msg_counts), 0) <> v_n
       OR coalesce(cardinality(p_hashes), 0) <> v_n OR coalesce(cardinality(p_verified), 0) <> v_n
       OR coalesce(cardinality(p_blobs), 0) <> v_n OR (p_tenants IS NOT NULL AND coalesce(cardinality(p_tenants), 0) <> v_n) THEN
        RAISE EXCEPTION 'log_push_multi_v4: misaligned arrays (queues %, plain %) or a NULL plain flag',
            v_n, cardinality(p_plain)
            USING ERRCODE = '22023';
    END IF;
    -- The common case first: no plain segment's queue encrypts. One flag read per
    -- distinct (tenant, queue) of the plain segments, each a probe of the unique index,
    -- stopping at the first that encrypts. (unnest pads a NULL p_tenants with NULLs: the
    -- default tenant.)
    IF NOT EXISTS (
        SELECT 1
          FROM (SELECT DISTINCT coalesce(u.t, '00000000-0000-0000-0000-000000000001'::uuid) AS t, u.q
                  FROM unnest(p_queues, p_tenants, p_plain) AS u(q, t, plain)
                 WHERE u.plain) d
         WHERE (SELECT qq.encryption_enabled FROM queen.queues qq
                 WHERE qq.tenant_id = d.t AND qq.name = d.q)) THEN
        RETURN QUERY SELECT * FROM queen.log_push_multi_v3(p_queues, p_partitions, p_msg_counts,
                                                           p_hashes, p_verified, p_blobs, p_tenants);
        RETURN;
    END IF;
    -- Some segment is refused: which ones (the flags read again, in this statement's
    -- snapshot; the fence keeps the subplan to one run per distinct queue).
    IF v_tenants IS NULL THEN
        v_tenants := array_fill('00000000-0000-0000-0000-000000000001'::uuid, ARRAY[v_n]);
    END IF;
    SELECT array_agg(i.ord::integer ORDER BY i.ord) FILTER (WHERE e.enc IS NOT TRUE),
           array_agg(i.ord::integer ORDER BY i.ord) FILTER (WHERE e.enc)
      INTO v_keep, v_refused
      FROM unnest(p_queues, v_tenants, p_plain) WITH ORDINALITY AS i(q, t, plain, ord)
      LEFT JOIN (SELECT d.t, d.q,
                        (SELECT qq.encryption_enabled FROM queen.queues qq
                          WHERE qq.tenant_id = d.t AND qq.name = d.q) AS enc
                   FROM (SELECT DISTINCT u.t, u.q
                           FROM unnest(p_queues, v_tenants, p_plain) AS u(q, t, plain)
                          WHERE u.plain) d
                 OFFSET 0) e ON i.plain AND e.t = i.t AND e.q = i.q;
    IF v_refused IS NULL THEN -- switched off between the two reads
        RETURN QUERY SELECT * FROM queen.log_push_multi_v3(p_queues, p_partitions, p_msg_counts,
                                                           p_hashes, p_verified, p_blobs, p_tenants);
        RETURN;
    END IF;
    IF v_keep IS NOT NULL THEN
        -- v3 on the kept segments only, its ordinals mapped back to the caller's.
        RETURN QUERY
        SELECT v_keep[r.ord], r.partition_id, r.base_offset, r.created_at, r.window_seconds,
               r.dup_idx, r.dup_off
          FROM queen.log_push_multi_v3(
                 ARRAY(SELECT p_queues[k]     FROM unnest(v_keep) WITH ORDINALITY AS x(k, o) ORDER BY o),
                 ARRAY(SELECT p_partitions[k] FROM unnest(v_keep) WITH ORDINALITY AS x(k, o) ORDER BY o),
                 ARRAY(SELECT p_msg_counts[k] FROM unnest(v_keep) WITH ORDINALITY AS x(k, o) ORDER BY o),
                 ARRAY(SELECT p_hashes[k]     FROM unnest(v_keep) WITH ORDINALITY AS x(k, o) ORDER BY o),
                 ARRAY(SELECT p_verified[k]   FROM unnest(v_keep) WITH ORDINALITY AS x(k, o) ORDER BY o),
                 ARRAY(SELECT p_blobs[k]      FROM unnest(v_keep) WITH ORDINALITY AS x(k, o) ORDER BY o),
                 ARRAY(SELECT v_tenants[k]    FROM unnest(v_keep) WITH ORDINALITY AS x(k, o) ORDER BY o)) r;
    END IF;
    RETURN QUERY
    SELECT x.k, NULL::uuid, NULL::bigint, NULL::timestamptz, NULL::integer, NULL::integer[], NULL::bigint[]
      FROM unnest(v_refused) AS x(k);
END
$$;
