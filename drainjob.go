package queen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/queen-go/queen/adapters/spoolfs"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// DrainJob is the batch-drain job (cmd/lambda, binary queen-drain): it replays spool
// directories into PostgreSQL through the same fusion and allocator path as the broker,
// then exits. It shares the broker's providers (InitializeDrain).
type DrainJob struct {
	Config  config.Config
	Logger  *slog.Logger
	Store   DrainStore
	Batcher *fusion.Batcher
}

// DrainStore is the database as the drain job needs it: reachability, and the push
// maintenance flag that pauses every drain.
type DrainStore interface {
	ports.Pinger
	ports.SystemState
}

// DirSummary is what the job did in one spool directory.
type DirSummary struct {
	Dir string `json:"dir"`
	drain.Summary
	Skipped bool   `json:"skipped,omitempty"` // another live process owns the directory
	Paused  bool   `json:"paused,omitempty"`  // push maintenance was on: nothing replayed
	Error   string `json:"error,omitempty"`
}

// JobSummary is the job's result (the Lambda function's answer, the command's output).
type JobSummary struct {
	Dirs []DirSummary `json:"dirs"`
	drain.Summary
	Paused bool `json:"paused,omitempty"` // a directory was left alone because push maintenance was on
}

// Run drains each directory in turn until it is empty or deadline passes. A directory
// whose lock is held (its broker is alive and drains it itself) is skipped, and so is
// every directory while push maintenance is on (its records count as remaining). The
// error joins every directory's failure; the summary is complete either way.
func (j *DrainJob) Run(ctx context.Context, dirs []string, deadline time.Time) (JobSummary, error) {
	var out JobSummary
	var errs []error
	for _, dir := range dirs {
		ds, err := j.drainDir(ctx, dir, deadline)
		if err != nil {
			ds.Error = err.Error()
			errs = append(errs, fmt.Errorf("drain %s: %w", dir, err))
		}
		out.Dirs = append(out.Dirs, ds)
		out.Replayed += ds.Replayed
		out.Duplicates += ds.Duplicates
		out.Quarantined += ds.Quarantined
		out.Remaining += ds.Remaining
		out.Paused = out.Paused || ds.Paused
	}
	return out, errors.Join(errs...)
}

func (j *DrainJob) drainDir(ctx context.Context, dir string, deadline time.Time) (DirSummary, error) {
	ds := DirSummary{Dir: dir}
	fsys, err := spoolfs.New(dir)
	if err != nil {
		return ds, err
	}
	sp, err := spool.Open(fsys, spool.Options{EventsPerFile: j.Config.SpoolPerFile, Logger: j.Logger})
	if errors.Is(err, ports.ErrSpoolLocked) {
		j.Logger.Info("drain: directory owned by a live process, skipped", "dir", dir)
		ds.Skipped = true
		return ds, nil
	}
	if err != nil {
		return ds, err
	}
	defer func() {
		if err := sp.Close(); err != nil {
			j.Logger.Error("drain: close spool", "dir", dir, "err", err)
		}
	}()
	// Push maintenance pauses the brokers' drains (api.md §5.12): the database is being
	// worked on and takes no pushes, replayed ones included. Flags that cannot be read
	// do not stop the drain: it copes with a database that is away.
	if flags, err := j.Store.Flags(ctx); err == nil && flags[ports.MaintenancePush] {
		j.Logger.Info("drain: push maintenance is on, directory left for a later run", "dir", dir)
		ds.Paused, ds.Remaining = true, sp.Stats().PendingRecords
		return ds, nil
	}
	d := drain.New(sp, j.Batcher, drain.Options{MaxBatch: j.Config.SpoolBatch, BundleMax: j.Config.BundleMax, Interval: j.Config.SpoolFlush,
		Ping: j.Store, Logger: j.Logger.With("dir", dir)})
	s, err := d.Until(ctx, deadline)
	ds.Summary = s
	j.Logger.Info("drain: directory done", "dir", dir, "replayed", s.Replayed, "duplicates", s.Duplicates,
		"quarantined", s.Quarantined, "remaining", s.Remaining)
	return ds, err
}
