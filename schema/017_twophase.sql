-- The decision log of transactions that span shards (core/twophase; docs/design.md,
-- "Operations that span shards"): one row per cross-shard transaction, written once,
-- first writer wins (the coordinator's commit or the recovery's abort), kept until every
-- shard resolved its prepared part and then expired in batches. Only the catalogue's
-- (shard 0's) rows are ever read.
CREATE TABLE IF NOT EXISTS queen.xact_decisions (
    gid        text        PRIMARY KEY,
    commit     boolean     NOT NULL,
    decided_at timestamptz NOT NULL DEFAULT now()
);

-- Guarded: CREATE INDEX IF NOT EXISTS would lock the table even when the index exists.
DO $$ BEGIN
    IF to_regclass('queen.xact_decisions_decided_at') IS NULL THEN
        CREATE INDEX xact_decisions_decided_at ON queen.xact_decisions (decided_at);
    END IF;
END $$;
