-- Changes to databases created by older versions of this schema. Idempotent: each step
-- looks before it acts, because ALTER TABLE takes an ACCESS EXCLUSIVE lock and the schema
-- is applied on every start while other brokers may be pushing.

-- Constraints dropped from the hot tables (see log_partitions in 001_tables.sql): the
-- foreign keys from and to log_partitions and the CHECK on log_segments.msg_count.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT con.conrelid::regclass AS rel, con.conname
               FROM pg_constraint con
              WHERE con.connamespace = 'queen'::regnamespace
                AND con.conname IN ('log_partitions_queue_id_fkey', 'log_segments_msg_count_check',
                                    'log_consumers_partition_id_fkey', 'dlq_partition_id_fkey')
    LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.rel, c.conname);
    END LOOP;
END
$$;
