package queen

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/adapters/spoolfs"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// ProvideMaintenance builds this broker's copy of the maintenance flags (App.Start reads
// them and keeps them fresh).
func ProvideMaintenance(store *postgres.Store, cfg config.Config, log *slog.Logger) *maintenance.Flags {
	return maintenance.New(store, maintenance.Options{Refresh: cfg.MaintenanceRefresh, Logger: log})
}

// ProvideSpool opens the push spool in the first usable directory of
// config.SpoolDirs, as its only owner (the cleanup releases it if App.Stop did not). A
// directory another live broker owns stops start-up: two brokers must not share one
// spool.
func ProvideSpool(cfg config.Config, log *slog.Logger) (*spool.Spool, func(), error) {
	return openSpool(cfg.SpoolDirs(), cfg, log)
}

// openSpool opens the spool in the first usable directory of dirs.
func openSpool(dirs []string, cfg config.Config, log *slog.Logger) (*spool.Spool, func(), error) {
	var errs []error
	for _, dir := range dirs {
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
			if err := sp.Close(); err != nil && !errors.Is(err, spool.ErrClosed) {
				log.Error("spool: close", "err", err)
			}
		}, nil
	}
	return nil, nil, fmt.Errorf("spool: no usable directory (set FILE_BUFFER_DIR): %w", errors.Join(errs...))
}

// ProvideDrainer builds the background replay of the spool; replay pauses during push
// maintenance and while pushes are held for a missing synchronous standby, and seals
// what encrypted queues require.
func ProvideDrainer(sp *spool.Spool, b *fusion.Batcher, enc *encryption.Policy, store *postgres.Store, m *maintenance.Flags,
	repl *replication.Check, cfg config.Config, log *slog.Logger) *drain.Drainer {
	return drain.New(sp, b, drain.Options{MaxBatch: cfg.SpoolBatch, BundleMax: cfg.BundleMax, Interval: cfg.SpoolFlush,
		Paused: m.Push, Held: repl.Held, Ping: store, Encryption: enc, Logger: log.With("target", "drain")})
}

// ProvideGate is the push path's spool gate: push maintenance, pushes held for a
// missing synchronous standby, or the database away.
func ProvideGate(d *drain.Drainer, m *maintenance.Flags, repl *replication.Check) *drain.Gate {
	return drain.NewGate(d, m.Push, repl.Held)
}

// ProvideConfiguredDatabase returns the configured database URL; the drain job has
// nothing to drain into without one.
func ProvideConfiguredDatabase(cfg config.Config) (DatabaseURL, error) {
	if len(cfg.ShardURLs()) > 1 {
		// Its replay would commit every shard's spooled pushes to shard 0.
		return "", fmt.Errorf("QUEEN_SHARDS names several shards: the drain job replays the spool of a broker on one database; a sharded broker replays its spools (FILE_BUFFER_DIR and its shard-N directories) itself when it starts on them")
	}
	if cfg.Embedded() {
		return "", fmt.Errorf("no database configured: set QUEEN_PG_URL (or PG_HOST, PG_PORT, PG_USER, PG_PASSWORD, PG_DB) to the brokers' PostgreSQL")
	}
	return DatabaseURL(cfg.DatabaseURL()), nil
}

// ProvideDrainJob builds the batch-drain job over local (or mounted) spool directories;
// like a broker's drain it seals what encrypted queues require (QUEEN_ENCRYPTION_KEY).
func ProvideDrainJob(b *fusion.Batcher, enc *encryption.Policy, store *postgres.Store, cfg config.Config, log *slog.Logger) *drain.Job {
	return drain.NewJob(spoolfs.Dirs{}, b, store, store, drain.JobOptions{EventsPerFile: cfg.SpoolPerFile,
		MaxBatch: cfg.SpoolBatch, BundleMax: cfg.BundleMax, Interval: cfg.SpoolFlush, Encryption: enc, Logger: log})
}
