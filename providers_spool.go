package queen

import (
	"context"
	"log/slog"

	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/maintenance"
)

// ProvideMaintenance reads the maintenance flags and keeps re-reading them (stopped by
// the cleanup).
func ProvideMaintenance(ctx context.Context, store *postgres.Store, cfg config.Config, log *slog.Logger) (*maintenance.Flags, func()) {
	f := maintenance.New(ctx, store, maintenance.Options{Refresh: cfg.MaintenanceMS, Logger: log})
	f.Start()
	return f, f.Close
}
