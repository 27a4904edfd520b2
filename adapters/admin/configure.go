package admin

import (
	"context"
	"reflect"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// queueRow is a row of queen.queues. The options are the port's own type: bun names
// their columns after the fields (LeaseTime -> lease_time, DLQAfterMaxRetries ->
// dlq_after_max_retries), which is how the schema names them.
type queueRow struct {
	bun.BaseModel `bun:"table:queen.queues,alias:q"`

	ID         string `bun:"id,pk,nullzero,type:uuid"`
	TenantID   string `bun:"tenant_id,type:uuid"`
	Name       string `bun:"name"`
	Namespace  string `bun:"namespace"`
	Task       string `bun:"task"`
	Configured bool   `bun:"configured"`
	ports.QueueOptions
	CreatedAt time.Time `bun:"created_at,nullzero"` // NULL on insert: the column default
	UpdatedAt time.Time `bun:"updated_at,nullzero"`
}

// columns maps each option to its column.
var columns = []struct {
	opt ports.QueueOption
	col string
}{
	{ports.OptNamespace, "namespace"},
	{ports.OptTask, "task"},
	{ports.OptPriority, "priority"},
	{ports.OptLeaseTime, "lease_time"},
	{ports.OptRetryLimit, "retry_limit"},
	{ports.OptRetryDelay, "retry_delay"},
	{ports.OptMaxSize, "max_size"},
	{ports.OptTTL, "ttl"},
	{ports.OptDeadLetterQueue, "dead_letter_queue"},
	{ports.OptDLQAfterMaxRetries, "dlq_after_max_retries"},
	{ports.OptDelayedProcessing, "delayed_processing"},
	{ports.OptWindowBuffer, "window_buffer"},
	{ports.OptRetentionSeconds, "retention_seconds"},
	{ports.OptCompletedRetentionSeconds, "completed_retention_seconds"},
	{ports.OptRetentionEnabled, "retention_enabled"},
	{ports.OptEncryptionEnabled, "encryption_enabled"},
	{ports.OptMaxWaitTimeSeconds, "max_wait_time_seconds"},
	{ports.OptMinPopWaitTime, "min_pop_wait_time"},
	{ports.OptDedupWindowSeconds, "dedup_window_seconds"},
	{ports.OptRetentionSinkHold, "retention_sink_hold"},
	{ports.OptRetentionSinkHoldMaxSeconds, "retention_sink_hold_max_seconds"},
}

func rowOf(tenant string, c ports.QueueConfig) queueRow {
	return queueRow{TenantID: tenant, Name: c.Name, Namespace: c.Namespace, Task: c.Task, Configured: true,
		QueueOptions: c.QueueOptions}
}

func (r *queueRow) config() ports.QueueConfig {
	return ports.QueueConfig{ID: r.ID, Name: r.Name, Namespace: r.Namespace, Task: r.Task, QueueOptions: r.QueueOptions}
}

// Configure implements ports.QueueAdmin: one upsert. The inserted row carries cfg
// whole (a new queue gets it), and on conflict only the columns of the options in set
// take the proposed (EXCLUDED) values, so the others keep what is stored.
func (a *Admin) Configure(ctx context.Context, tenant string, cfg ports.QueueConfig, set ports.QueueOption) (ports.QueueConfig, error) {
	row := rowOf(tenant, cfg)
	err := a.run(ctx, "configure", func(ctx context.Context, c bun.Conn) error {
		st := newStmt(c)
		q := st.bindModel(st.NewInsert().Model(&row), c.Dialect().Tables().Get(reflect.TypeFor[queueRow]()), reflect.ValueOf(row)).
			On("CONFLICT (tenant_id, name) DO UPDATE").
			Set("configured = true").
			Set("updated_at = now()")
		for _, col := range columns {
			if set.Has(col.opt) {
				q = q.Set("? = EXCLUDED.?", bun.Ident(col.col), bun.Ident(col.col))
			}
		}
		return q.Returning("*").Scan(ctx)
	})
	if err != nil {
		return ports.QueueConfig{}, err
	}
	return row.config(), nil
}
