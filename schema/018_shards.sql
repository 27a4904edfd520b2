-- Which shard this database is (docs/design.md, "Routing without a lookup"): one row,
-- written by the first broker that migrates it (queen.shard_claim_v1), checked by every
-- later one, so that a reordered QUEEN_SHARDS list fails loudly instead of sending acks
-- to the wrong database.
CREATE TABLE IF NOT EXISTS queen.shard_identity (
    only_row boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    shard    integer     NOT NULL CHECK (shard BETWEEN 0 AND 65535),
    set_at   timestamptz NOT NULL DEFAULT now()
);

-- A new partition id naming this database's shard (core/shard's layout): shard 0 mints
-- version 4 UUIDs as an unsharded database always has; shard n > 0 mints version 8 ones
-- with n in bytes 0-1 and the rest of gen_random_uuid()'s random bits (its RFC 9562
-- variant kept).
CREATE OR REPLACE FUNCTION queen.new_partition_id() RETURNS uuid
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n integer;
    b bytea;
BEGIN
    SELECT shard INTO n FROM queen.shard_identity;
    b := uuid_send(gen_random_uuid());
    IF coalesce(n, 0) = 0 THEN
        RETURN encode(b, 'hex')::uuid;
    END IF;
    b := set_byte(set_byte(b, 0, n >> 8), 1, n & 255);
    b := set_byte(b, 6, (get_byte(b, 6) & 15) | 128);
    RETURN encode(b, 'hex')::uuid;
END $$;

-- Claims the database for shard p_shard, or checks that it is that shard's, and on a
-- shard other than 0 makes new partitions mint ids naming it. Raises QSHARD when the
-- database belongs to another shard. Serialised by the migration's advisory lock. Its
-- search_path is pg_catalog alone, so that pg_get_expr names the default with its
-- schema whatever the role's search_path (else the check would miss and ALTER TABLE,
-- which waits for every writer, would run at each migration).
CREATE OR REPLACE FUNCTION queen.shard_claim_v1(p_shard integer) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog AS $$
DECLARE
    have integer;
BEGIN
    INSERT INTO queen.shard_identity (shard) VALUES (p_shard) ON CONFLICT (only_row) DO NOTHING;
    SELECT shard INTO have FROM queen.shard_identity;
    IF have <> p_shard THEN
        RAISE EXCEPTION 'QSHARD this database is shard %, configured as shard %: was the list of shards reordered?', have, p_shard;
    END IF;
    -- Only when the default must change: ALTER TABLE locks the table.
    IF p_shard <> 0 AND NOT EXISTS (
        SELECT 1 FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
         WHERE d.adrelid = 'queen.log_partitions'::regclass AND a.attname = 'id'
           AND pg_get_expr(d.adbin, d.adrelid) = 'queen.new_partition_id()') THEN
        ALTER TABLE queen.log_partitions ALTER COLUMN id SET DEFAULT queen.new_partition_id();
    END IF;
END $$;

-- The placement map (read on the catalogue, shard 0, only): which shard each queue lives
-- on, written once per queue (ON CONFLICT DO NOTHING: the first broker's proposal wins).
-- placed_seq orders the queues of a namespace, so that "the namespace's shard" is the
-- first one's whatever moved since.
CREATE TABLE IF NOT EXISTS queen.placements (
    tenant_id  uuid        NOT NULL,
    queue      text        NOT NULL,
    namespace  text        NOT NULL DEFAULT '',
    shard      integer     NOT NULL CHECK (shard BETWEEN 0 AND 65535),
    placed_seq bigserial   NOT NULL,
    placed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, queue)
);

DO $$ BEGIN
    IF to_regclass('queen.placements_namespace') IS NULL THEN
        CREATE INDEX placements_namespace ON queen.placements (tenant_id, namespace, placed_seq) WHERE namespace <> '';
    END IF;
END $$;
