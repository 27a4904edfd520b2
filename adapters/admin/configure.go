package admin

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/queen-go/queen/ports"
)

// queueRow is a row of queen.queues.
type queueRow struct {
	bun.BaseModel `bun:"table:queen.queues,alias:q"`

	ID                          string    `bun:"id,pk,nullzero,type:uuid"`
	TenantID                    string    `bun:"tenant_id,type:uuid"`
	Name                        string    `bun:"name"`
	Namespace                   string    `bun:"namespace"`
	Task                        string    `bun:"task"`
	Configured                  bool      `bun:"configured"`
	Priority                    int       `bun:"priority"`
	LeaseTime                   int       `bun:"lease_time"`
	RetryLimit                  int       `bun:"retry_limit"`
	RetryDelay                  int       `bun:"retry_delay"`
	MaxSize                     int       `bun:"max_size"`
	TTL                         int       `bun:"ttl"`
	DeadLetterQueue             bool      `bun:"dead_letter_queue"`
	DLQAfterMaxRetries          bool      `bun:"dlq_after_max_retries"`
	DelayedProcessing           int       `bun:"delayed_processing"`
	WindowBuffer                int       `bun:"window_buffer"`
	RetentionSeconds            int       `bun:"retention_seconds"`
	CompletedRetentionSeconds   int       `bun:"completed_retention_seconds"`
	RetentionEnabled            bool      `bun:"retention_enabled"`
	EncryptionEnabled           bool      `bun:"encryption_enabled"`
	MaxWaitTimeSeconds          int       `bun:"max_wait_time_seconds"`
	MinPopWaitTime              int       `bun:"min_pop_wait_time"`
	DedupWindowSeconds          int       `bun:"dedup_window_seconds"`
	RetentionSinkHold           string    `bun:"retention_sink_hold"`
	RetentionSinkHoldMaxSeconds int       `bun:"retention_sink_hold_max_seconds"`
	CreatedAt                   time.Time `bun:"created_at,nullzero"` // NULL on insert: the column default
	UpdatedAt                   time.Time `bun:"updated_at,nullzero"`
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
	return queueRow{
		TenantID: tenant, Name: c.Name, Namespace: c.Namespace, Task: c.Task, Configured: true,
		Priority: c.Priority, LeaseTime: c.LeaseTime, RetryLimit: c.RetryLimit, RetryDelay: c.RetryDelay,
		MaxSize: c.MaxSize, TTL: c.TTL, DeadLetterQueue: c.DeadLetterQueue, DLQAfterMaxRetries: c.DLQAfterMaxRetries,
		DelayedProcessing: c.DelayedProcessing, WindowBuffer: c.WindowBuffer, RetentionSeconds: c.RetentionSeconds,
		CompletedRetentionSeconds: c.CompletedRetentionSeconds, RetentionEnabled: c.RetentionEnabled,
		EncryptionEnabled: c.EncryptionEnabled, MaxWaitTimeSeconds: c.MaxWaitTimeSeconds,
		MinPopWaitTime: c.MinPopWaitTime, DedupWindowSeconds: c.DedupWindowSeconds,
		RetentionSinkHold: c.RetentionSinkHold, RetentionSinkHoldMaxSeconds: c.RetentionSinkHoldMaxSeconds,
	}
}

func (r *queueRow) config() ports.QueueConfig {
	return ports.QueueConfig{
		ID: r.ID, Name: r.Name, Namespace: r.Namespace, Task: r.Task,
		Priority: r.Priority, LeaseTime: r.LeaseTime, RetryLimit: r.RetryLimit, RetryDelay: r.RetryDelay,
		MaxSize: r.MaxSize, TTL: r.TTL, DeadLetterQueue: r.DeadLetterQueue, DLQAfterMaxRetries: r.DLQAfterMaxRetries,
		DelayedProcessing: r.DelayedProcessing, WindowBuffer: r.WindowBuffer, RetentionSeconds: r.RetentionSeconds,
		CompletedRetentionSeconds: r.CompletedRetentionSeconds, RetentionEnabled: r.RetentionEnabled,
		EncryptionEnabled: r.EncryptionEnabled, MaxWaitTimeSeconds: r.MaxWaitTimeSeconds,
		MinPopWaitTime: r.MinPopWaitTime, DedupWindowSeconds: r.DedupWindowSeconds,
		RetentionSinkHold: r.RetentionSinkHold, RetentionSinkHoldMaxSeconds: r.RetentionSinkHoldMaxSeconds,
	}
}

// Configure implements ports.QueueAdmin: one upsert. The inserted row carries cfg
// whole (a new queue gets it), and on conflict only the columns of the options in set
// take the proposed (EXCLUDED) values, so the others keep what is stored.
func (a *Admin) Configure(ctx context.Context, tenant string, cfg ports.QueueConfig, set ports.QueueOption) (ports.QueueConfig, error) {
	row := rowOf(tenant, cfg)
	err := a.run(ctx, "configure", func(ctx context.Context, c bun.Conn) error {
		q := c.NewInsert().Model(&row).
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
