package queen

import (
	"log/slog"

	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/retention"
	"github.com/queen-go/queen/ports"
)

// ProvideRetention builds the retention and housekeeping cycle (App.Start runs it).
func ProvideRetention(store *postgres.Store, act ports.Activity, cfg config.Config, log *slog.Logger) *retention.Job {
	return retention.New(store, retention.Options{
		Interval: cfg.RetentionInterval, BatchSize: cfg.RetentionBatch, DueCap: cfg.RetentionDueCap,
		Parallelism: cfg.RetentionParallel, CleanupIdle: cfg.PartitionCleanupIdle(),
		MetricsRetention: cfg.MetricsRetentionPeriod(), Activity: act, Logger: log.With("target", "retention"),
	})
}
