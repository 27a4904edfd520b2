package queen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/queen-go/queen/adapters/httpapi"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/adapters/spoolfs"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// ProvideMaintenance reads the maintenance flags and keeps re-reading them (stopped by
// the cleanup).
func ProvideMaintenance(ctx context.Context, store *postgres.Store, cfg config.Config, log *slog.Logger) (*maintenance.Flags, func()) {
	f := maintenance.New(ctx, store, maintenance.Options{Refresh: cfg.MaintenanceMS, Logger: log})
	f.Start()
	return f, f.Close
}

// ProvideSpool opens the push spool in the first usable directory of
// config.SpoolDirs, as its only owner (closed by the cleanup). A directory another live
// broker owns stops start-up: two brokers must not share one spool.
func ProvideSpool(cfg config.Config, log *slog.Logger) (*spool.Spool, func(), error) {
	var errs []error
	for _, dir := range cfg.SpoolDirs() {
		fsys, err := spoolfs.New(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sp, err := spool.Open(fsys, spool.Options{EventsPerFile: cfg.SpoolPerFile, Logger: log.With("target", "spool")})
		if errors.Is(err, ports.ErrSpoolLocked) {
			return nil, nil, fmt.Errorf("spool directory %s is owned by another running broker or drain job; give each broker its own FILE_BUFFER_DIR: %w", dir, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("spool %s: %w", dir, err)
		}
		if st := sp.Stats(); st.PendingRecords > 0 {
			log.Info("spool: records from an earlier run will be replayed", "dir", dir, "records", st.PendingRecords)
		}
		log.Info("spool ready", "dir", dir)
		return sp, func() {
			if err := sp.Close(); err != nil {
				log.Error("spool: close", "err", err)
			}
		}, nil
	}
	return nil, nil, fmt.Errorf("spool: no usable directory (set FILE_BUFFER_DIR): %w", errors.Join(errs...))
}

// ProvideDrainer starts the background replay of the spool; the cleanup stops it before
// fusion closes. Replay pauses during push maintenance.
func ProvideDrainer(sp *spool.Spool, b *fusion.Batcher, store *postgres.Store, m *maintenance.Flags, cfg config.Config, log *slog.Logger) (*drain.Drainer, func()) {
	d := drain.New(sp, b, drain.Options{MaxBatch: cfg.SpoolBatch, BundleMax: cfg.BundleMax, Interval: cfg.SpoolFlush, Paused: m.Push,
		Ping: store, Logger: log.With("target", "drain")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Run(ctx)
	}()
	return d, func() {
		cancel()
		<-done
	}
}

// bufferStatus reports the spool for the maintenance and status routes.
func bufferStatus(sp *spool.Spool, d *drain.Drainer) func() httpapi.BufferStatus {
	return func() httpapi.BufferStatus {
		st := sp.Stats()
		return httpapi.BufferStatus{Pending: st.PendingRecords, Failed: st.Quarantined + st.CorruptRecords,
			FailedFiles: st.FailedFiles, FailedBytes: st.FailedBytes, DBHealthy: d.Healthy()}
	}
}
