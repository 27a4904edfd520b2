package queen

import (
	"log/slog"
	"time"

	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/retention"
)

// ProvideRetention builds the retention and housekeeping cycle (App.Start runs it).
func ProvideRetention(store *postgres.Store, cfg config.Config, log *slog.Logger) *retention.Job {
	dueCap := cfg.RetentionDueCap
	if dueCap == 0 {
		dueCap = cfg.RetentionBatch * cfg.RetentionParallel * 5
	}
	var idle time.Duration
	if cfg.PartitionCleanup {
		idle = time.Duration(cfg.PartitionIdleDays) * 24 * time.Hour
	}
	return retention.New(store, retention.Options{
		Interval: cfg.RetentionInterval, BatchSize: cfg.RetentionBatch, DueCap: dueCap,
		CleanupIdle: idle, Logger: log.With("target", "retention"),
	})
}
