package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

var _ ports.PlacementStore = (*Store)(nil)

// Place implements ports.PlacementStore on queen.placements.
func (s *Store) Place(ctx context.Context, p ports.Placement) (ports.Placement, error) {
	got := p
	err := s.run(ctx, "place", func(ctx context.Context, c *pgxpool.Conn) error {
		return firstWriter(func() error {
			return c.QueryRow(ctx, `WITH ins AS (
					INSERT INTO queen.placements (tenant_id, queue, namespace, shard) VALUES ($1::uuid, $2, $3, $4)
					ON CONFLICT (tenant_id, queue) DO NOTHING RETURNING namespace, shard)
				SELECT namespace, shard FROM ins
				UNION ALL SELECT namespace, shard FROM queen.placements WHERE tenant_id = $1::uuid AND queue = $2 LIMIT 1`,
				p.Tenant, p.Queue, p.Namespace, p.Shard).Scan(&got.Namespace, &got.Shard)
		})
	})
	if err != nil {
		return ports.Placement{}, fmt.Errorf("postgres: place %s: %w", p.Queue, err)
	}
	return got, nil
}

// Lookup implements ports.PlacementStore.
func (s *Store) Lookup(ctx context.Context, tenant, queue string) (ports.Placement, bool, error) {
	p := ports.Placement{Tenant: tenant, Queue: queue}
	found := false
	err := s.run(ctx, "placement", func(ctx context.Context, c *pgxpool.Conn) error {
		err := c.QueryRow(ctx, `SELECT namespace, shard FROM queen.placements WHERE tenant_id = $1::uuid AND queue = $2`,
			tenant, queue).Scan(&p.Namespace, &p.Shard)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	return p, found, err
}

// NamespaceShard implements ports.PlacementStore.
func (s *Store) NamespaceShard(ctx context.Context, tenant, ns string) (int, bool, error) {
	shard, found := 0, false
	err := s.run(ctx, "namespace placement", func(ctx context.Context, c *pgxpool.Conn) error {
		err := c.QueryRow(ctx, `SELECT shard FROM queen.placements
			WHERE tenant_id = $1::uuid AND namespace = $2 AND namespace <> '' ORDER BY placed_seq LIMIT 1`, tenant, ns).Scan(&shard)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	return shard, found, err
}

// Placements implements ports.PlacementStore.
func (s *Store) Placements(ctx context.Context) ([]ports.Placement, error) {
	var out []ports.Placement
	err := s.run(ctx, "placements", func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, `SELECT tenant_id::text, queue, namespace, shard FROM queen.placements ORDER BY placed_seq`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ports.Placement, error) {
			var p ports.Placement
			err := r.Scan(&p.Tenant, &p.Queue, &p.Namespace, &p.Shard)
			return p, err
		})
		return err
	})
	return out, err
}

// firstWriter runs an insert-or-read statement (a CTE inserting ON CONFLICT DO NOTHING,
// then reading the row either way) until it returns a row: when another session
// inserted the key and committed while this statement waited on it, the statement's
// snapshot sees neither its own insert nor the other's row, and the next run does.
func firstWriter(stmt func() error) error {
	for range 3 {
		if err := stmt(); !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
	}
	return errors.New("no row readable after three tries")
}

// HeldQueues lists the queues this database holds, as placements on its shard
// (Options.Shard): what shard.Backfill records in the catalogue for queues created
// before the broker was sharded.
func (s *Store) HeldQueues(ctx context.Context) ([]ports.Placement, error) {
	var out []ports.Placement
	err := s.run(ctx, "held queues", func(ctx context.Context, c *pgxpool.Conn) error {
		rows, err := c.Query(ctx, `SELECT tenant_id::text, name, namespace FROM queen.queues ORDER BY tenant_id, name`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ports.Placement, error) {
			p := ports.Placement{Shard: s.opts.Shard}
			err := r.Scan(&p.Tenant, &p.Queue, &p.Namespace)
			return p, err
		})
		return err
	})
	return out, err
}
