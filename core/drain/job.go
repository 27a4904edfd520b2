package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// JobOptions tunes a Job; zero values take the defaults of Options and spool.Options.
type JobOptions struct {
	EventsPerFile int           // FILE_BUFFER_EVENTS_PER_FILE of the spools it opens
	MaxBatch      int           // FILE_BUFFER_MAX_BATCH
	BundleMax     int           // QUEEN_V2_BUNDLE_MAX
	Interval      time.Duration // FILE_BUFFER_FLUSH_MS
	// Encryption seals replayed records of encrypted queues as a broker's drain does
	// ([nil] records are replayed as spooled).
	Encryption *encryption.Policy
	Logger     *slog.Logger
}

// Job is the batch-drain job (queen-drain, cmd/lambda): it replays spool directories
// whose broker is gone into PostgreSQL, through the same fusion and allocator path as a
// broker, and ends. It takes each directory's owner lock like a broker does, so it skips
// a directory whose owner is alive and never races one.
type Job struct {
	dirs    ports.SpoolDirs
	batcher *fusion.Batcher
	ping    ports.Pinger
	state   ports.SystemState
	opts    JobOptions
}

// NewJob returns a job opening directories with dirs and replaying through b (which
// Start starts); ping and state are the database's reachability and maintenance flags.
func NewJob(dirs ports.SpoolDirs, b *fusion.Batcher, ping ports.Pinger, state ports.SystemState, opts JobOptions) *Job {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Job{dirs: dirs, batcher: b, ping: ping, state: state, opts: opts}
}

// Start starts the job's push fusion.
func (j *Job) Start() { j.batcher.Start() }

// Stop commits what fusion still holds and stops it, within ctx.
func (j *Job) Stop(ctx context.Context) error { return j.batcher.Stop(ctx) }

// DirSummary is what the job did in one spool directory.
type DirSummary struct {
	Dir string `json:"dir"`
	Summary
	Skipped bool   `json:"skipped,omitempty"` // another live process owns the directory
	Paused  bool   `json:"paused,omitempty"`  // push maintenance was on: nothing replayed
	Error   string `json:"error,omitempty"`
}

// JobSummary is the job's result (the Lambda function's answer, the command's output).
type JobSummary struct {
	Dirs []DirSummary `json:"dirs"`
	Summary
	Paused bool `json:"paused,omitempty"` // a directory was left alone because push maintenance was on
}

// Run drains each directory in turn until it is empty or deadline passes. A directory
// whose lock is held (its broker is alive and drains it itself) is skipped, and so is
// every directory while push maintenance is on (its records count as remaining). The
// error joins every directory's failure; the summary is complete either way.
func (j *Job) Run(ctx context.Context, dirs []string, deadline time.Time) (JobSummary, error) {
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

func (j *Job) drainDir(ctx context.Context, dir string, deadline time.Time) (DirSummary, error) {
	ds := DirSummary{Dir: dir}
	fsys, err := j.dirs.Open(dir)
	if err != nil {
		return ds, err
	}
	sp, err := spool.Open(fsys, spool.Options{EventsPerFile: j.opts.EventsPerFile, Logger: j.opts.Logger})
	if errors.Is(err, ports.ErrSpoolLocked) {
		j.opts.Logger.Info("drain: directory owned by a live process, skipped", "dir", dir)
		ds.Skipped = true
		return ds, nil
	}
	if err != nil {
		return ds, err
	}
	defer func() {
		if err := sp.Close(); err != nil {
			j.opts.Logger.Error("drain: close spool", "dir", dir, "err", err)
		}
	}()
	// Push maintenance pauses the brokers' drains (docs/api.md §5.12): the database is being
	// worked on and takes no pushes, replayed ones included. Flags that cannot be read
	// do not stop the drain: it copes with a database that is away.
	if flags, err := j.state.Flags(ctx); err == nil && flags[ports.MaintenancePush] {
		j.opts.Logger.Info("drain: push maintenance is on, directory left for a later run", "dir", dir)
		ds.Paused, ds.Remaining = true, sp.Stats().PendingRecords
		return ds, nil
	}
	d := New(sp, j.batcher, Options{MaxBatch: j.opts.MaxBatch, BundleMax: j.opts.BundleMax, Interval: j.opts.Interval,
		Ping: j.ping, Encryption: j.opts.Encryption, Logger: j.opts.Logger.With("dir", dir)})
	s, err := d.Until(ctx, deadline)
	ds.Summary = s
	j.opts.Logger.Info("drain: directory done", "dir", dir, "replayed", s.Replayed, "duplicates", s.Duplicates,
		"quarantined", s.Quarantined, "remaining", s.Remaining)
	return ds, err
}
