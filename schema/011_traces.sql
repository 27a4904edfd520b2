-- Trace events and the message routes' dead-letter lookups (docs/api.md §5.8, §5.10; the
-- adapters/admin MessageStore and TraceStore). Idempotent: applied on every start (see
-- doc.go).

-- One row per recorded trace event: what a consumer said about a message, addressed by
-- (partition id, transaction id) as acks address it. The message itself is not looked
-- up: it may already be past its hash window or deleted. tenant_id is the partition's
-- queue's, copied at insert so reads stay scoped after the partition is gone. No foreign
-- key to log_partitions (see 001_tables.sql): an orphaned trace simply expires.
--
-- Bounded by expires_at, fixed at insert from the queue's retention (core/admin
-- TraceLifetime): every insert deletes a batch of expired rows through
-- message_traces_expiry, so expired rows never accumulate while traces are written.
CREATE TABLE IF NOT EXISTS queen.message_traces (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id      uuid        NOT NULL,
    partition_id   uuid        NOT NULL,
    transaction_id text        NOT NULL,
    consumer_group text        NOT NULL,
    event_type     text        NOT NULL,
    trace_names    text[]      NOT NULL DEFAULT '{}', -- as given (distinct), for display
    data           json        NOT NULL,              -- kept as sent (json, not jsonb)
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz NOT NULL
);
-- One message's traces, in time order.
DO $$ BEGIN
    IF to_regclass('queen.message_traces_message') IS NULL THEN
        CREATE INDEX message_traces_message
            ON queen.message_traces (tenant_id, partition_id, transaction_id, created_at);
    END IF;
END $$;
-- The expiry batches of AddTrace.
DO $$ BEGIN
    IF to_regclass('queen.message_traces_expiry') IS NULL THEN
        CREATE INDEX message_traces_expiry ON queen.message_traces (expires_at);
    END IF;
END $$;

-- One row per (trace, name): lookups by name, newest first, read the primary key in
-- order; the name listing groups it. Rows go with their trace (ON DELETE CASCADE,
-- through message_trace_names_trace).
CREATE TABLE IF NOT EXISTS queen.message_trace_names (
    tenant_id  uuid        NOT NULL,
    trace_name text        NOT NULL,
    created_at timestamptz NOT NULL,
    trace_id   uuid        NOT NULL REFERENCES queen.message_traces (id) ON DELETE CASCADE,
    PRIMARY KEY (tenant_id, trace_name, created_at, trace_id)
);
DO $$ BEGIN
    IF to_regclass('queen.message_trace_names_trace') IS NULL THEN
        CREATE INDEX message_trace_names_trace ON queen.message_trace_names (trace_id);
    END IF;
END $$;

-- Dead letters by message offset: a message browse marks the messages of a page's
-- segments that some group dead-lettered (one index range per segment). Dead letters
-- are written rarely (a failed message), so the index costs the ack path nothing that
-- matters. Guarded: CREATE INDEX takes a SHARE lock on the table (until the schema's
-- transaction ends) before it looks whether the index exists, which would hold up every
-- dead-letter move of the other brokers on each start.
DO $$
BEGIN
    IF to_regclass('queen.dlq_offset') IS NULL THEN
        CREATE INDEX dlq_offset ON queen.dlq (partition_id, msg_offset);
    END IF;
END
$$;
