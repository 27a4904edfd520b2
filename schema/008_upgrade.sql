-- Changes to databases created by older versions of this schema. Idempotent: each step
-- looks before it acts, because ALTER TABLE takes an ACCESS EXCLUSIVE lock and the schema
-- is applied on every start while other brokers may be pushing.

-- Constraints dropped from the hot tables (see log_partitions in 001_tables.sql): the
-- foreign keys from and to log_partitions and the CHECK on log_segments.msg_count.
--
-- Dropping a foreign key takes ACCESS EXCLUSIVE locks on both its tables, which live
-- pushes, pops and acks of other brokers take in different orders: each drop waits at
-- most 2 s and gives up on a lock timeout or a deadlock, leaving that constraint for the
-- next start (the broker is correct with it, only slower), instead of failing start-up.
DO $$
DECLARE
    c      record;
    v_wait text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', '2s', true);
    FOR c IN SELECT con.conrelid::regclass AS rel, con.conname
               FROM pg_constraint con
              WHERE con.connamespace = 'queen'::regnamespace
                AND con.conname IN ('log_partitions_queue_id_fkey', 'log_segments_msg_count_check',
                                    'log_consumers_partition_id_fkey', 'dlq_partition_id_fkey')
    LOOP
        BEGIN
            EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            RAISE WARNING 'queen schema: % on % not dropped (%), will retry at the next start',
                c.conname, c.rel, SQLERRM;
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', v_wait, true);
END
$$;

-- log_consumers.delivered_end (pops count deliveryAttempt by it): added to cursor tables
-- created before it. Looked up first, and the ALTER waits at most 2 s for its lock, as
-- above; without the column pops fail, so here a timeout fails the start (and the next
-- start tries again) instead of leaving it for later.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                    WHERE attrelid = 'queen.log_consumers'::regclass AND attname = 'delivered_end' AND NOT attisdropped) THEN
        PERFORM set_config('lock_timeout', '2s', true);
        ALTER TABLE queen.log_consumers ADD COLUMN IF NOT EXISTS delivered_end bigint NOT NULL DEFAULT -1;
    END IF;
END
$$;
