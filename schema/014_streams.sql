-- Streams (/streams/v1/*, docs/streams.md): the registry of streaming queries and their state,
-- one key/value shard per (query, source partition). Idempotent: applied on every start.

-- One row per query name. id is what clients send back as query_id; it survives a
-- reset (the state goes, the row stays). config_hash is opaque: only compared.
CREATE TABLE IF NOT EXISTS queen.stream_queries (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text        NOT NULL UNIQUE,
    source_queue text        NOT NULL,
    sink_queue   text,                      -- NULL: the pipeline has no sink
    config_hash  text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- The state of (query, partition): every cycle reads a whole shard, so the primary key
-- starts with the shard and clusters it in the index; an idle flush reads a shard's keys
-- with a literal prefix (key is COLLATE "C": byte order, so a prefix is one contiguous
-- index range and rows come back in the same order from every broker) and filters the
-- few it finds on value->'windowEnd'. partition_id has no foreign key (the hot partition
-- row must not pay for one, see 001_tables.sql): a queue's deletion removes its
-- partitions' state explicitly (adapters/admin), retention's empty-partition drop keeps
-- it (core/streams doc.go says why).
CREATE TABLE IF NOT EXISTS queen.stream_state (
    query_id     uuid        NOT NULL REFERENCES queen.stream_queries (id) ON DELETE CASCADE,
    partition_id uuid        NOT NULL,
    key          text        COLLATE "C" NOT NULL,
    value        jsonb       NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (query_id, partition_id, key)
);

-- Queue deletion finds its partitions' state by partition alone.
DO $$ BEGIN
    IF to_regclass('queen.stream_state_partition') IS NULL THEN
        CREATE INDEX stream_state_partition ON queen.stream_state (partition_id);
    END IF;
END $$;
