package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Flags implements ports.SystemState.
func (s *Store) Flags(ctx context.Context) (map[string]bool, error) {
	out := make(map[string]bool)
	err := s.run(ctx, "system flags", func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, `SELECT key, coalesce((value->>'enabled')::boolean, false) FROM queen.system_state`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			var on bool
			if err := rows.Scan(&k, &on); err != nil {
				return err
			}
			out[k] = on
		}
		return rows.Err()
	})
	return out, err
}

// SetFlag implements ports.SystemState.
func (s *Store) SetFlag(ctx context.Context, key string, on bool) error {
	return s.run(ctx, "set system flag", func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO queen.system_state (key, value) VALUES ($1, jsonb_build_object('enabled', $2::boolean))
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()`, key, on)
		return err
	})
}
