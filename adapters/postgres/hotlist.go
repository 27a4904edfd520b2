package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/ports"
)

var _ ports.HotlistStore = (*Store)(nil)

// Pending implements ports.HotlistStore with one call of log_pending_v1
// (schema/006_hotlist.sql): a keyset page over the (queue_id, id) index, the queue's
// deferral options with it. An after that is not a UUID names no partition: ErrInvalid.
func (s *Store) Pending(ctx context.Context, tenant, queue, group, after string, limit int) (ports.PendingPage, error) {
	tenant = tenantOr(tenant)
	var from pgtype.UUID // invalid = NULL: from the first partition
	if after != "" {
		u, err := uuid.Parse(after)
		if err != nil {
			return ports.PendingPage{}, fmt.Errorf("postgres: pending: after %q: %w", after, ports.ErrInvalid)
		}
		from = pgtype.UUID{Bytes: u, Valid: true}
	}
	var (
		page          ports.PendingPage
		delayed, wind int32
		ids           []pgtype.UUID
		names         []string
	)
	err := s.run(ctx, "pending", func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, `SELECT queue_found, delayed_processing, window_buffer, ids, names
			FROM queen.log_pending_v1($1::uuid, $2::text, $3::text, $4::uuid, $5::int4)`,
			tenant, queue, group, from, int32(min(max(limit, 0), 1<<31-1))).Scan(&page.QueueExists, &delayed, &wind, &ids, &names)
	})
	if err != nil {
		return ports.PendingPage{}, err
	}
	if len(ids) != len(names) {
		return ports.PendingPage{}, fmt.Errorf("postgres: pending: %d ids for %d names: %w", len(ids), len(names), ports.ErrInvalid)
	}
	page.DelayedProcessing = time.Duration(delayed) * time.Second
	page.WindowBuffer = time.Duration(wind) * time.Second
	if len(ids) > 0 {
		page.Partitions = make([]ports.PendingPartition, len(ids))
		for i, id := range ids {
			page.Partitions[i] = ports.PendingPartition{ID: uuid.UUID(id.Bytes).String(), Name: names[i]}
		}
	}
	return page, nil
}
