-- Broker-wide flags shared by every broker on this database (docs/api.md §5.12): rows
-- 'maintenance_mode' and 'pop_maintenance_mode' with value {"enabled": bool}. Brokers
-- re-read them about once a second, so a toggle on one broker reaches the others.
CREATE TABLE IF NOT EXISTS queen.system_state (
    key        text        PRIMARY KEY,
    value      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
