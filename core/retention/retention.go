package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

// The defaults of Options that the server's variables share: config's defaults are these
// values (its tests check it).
const (
	DefaultInterval    = 5 * time.Second // RETENTION_INTERVAL
	DefaultBatchSize   = 1000            // RETENTION_BATCH_SIZE
	DefaultParallelism = 1               // RETENTION_PARALLELISM
)

// dueCapSteps is how many steps' worth of rows (BatchSize x Parallelism) one cycle
// removes at most unless DueCap says otherwise: a backlog drains over several cycles
// instead of holding one for long.
const dueCapSteps = 5

// Options configures a Job; zero values take the defaults in brackets.
type Options struct {
	Interval  time.Duration // [5 s] RETENTION_INTERVAL: time between cycles
	BatchSize int           // [1000] RETENTION_BATCH_SIZE: rows per step
	// DueCap bounds the partitions walked and the rows removed per cycle
	// (QUEEN_RETENTION_DUE_CAP). [5 x BatchSize x Parallelism]
	DueCap int
	// Parallelism scales the default DueCap (RETENTION_PARALLELISM); the steps
	// themselves run one after the other. [1]
	Parallelism int
	// CleanupIdle is how long a partition holding nothing must go unwritten before it
	// is deleted; 0 turns the cleanup off. [0] (the server passes PARTITION_CLEANUP_DAYS)
	CleanupIdle time.Duration
	// CleanupEvery is the time between empty-partition cleanups, which look at every
	// partition. [10 min]
	CleanupEvery time.Duration
	Logger       *slog.Logger
	Now          func() time.Time // [time.Now]
}

// Stats are the cycle's cumulative counters (rows and stored bytes removed per job).
type Stats struct {
	Cycles, Skipped              int64 // cycles run; cycles another broker led
	Segments, Messages, SegBytes int64
	HashRows, HashBytes          int64
	DeadLetters, DeadLetterBytes int64
	Traces, TraceBytes           int64
	Partitions                   int64 // empty partitions deleted
	Errors                       int64 // failed steps
}

// Job is the retention cycle. New starts nothing; Start runs a cycle every Interval
// until Stop. RunCycle runs one at once (tests, tools).
type Job struct {
	store ports.RetentionStore
	opts  Options

	mu          sync.Mutex
	stats       Stats
	cursor      string    // where the trim walk resumes
	lastCleanup time.Time // zero: never

	cycle      sync.Mutex // one cycle at a time
	stop, done chan struct{}
}

// New returns the cycle over store.
func New(store ports.RetentionStore, opts Options) *Job {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultParallelism
	}
	if opts.DueCap <= 0 {
		opts.DueCap = dueCapSteps * opts.BatchSize * opts.Parallelism
	}
	if opts.CleanupEvery <= 0 {
		opts.CleanupEvery = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Job{store: store, opts: opts}
}

// Stats returns the counters so far.
func (j *Job) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
}

// Start runs a cycle every Interval in a goroutine.
func (j *Job) Start() {
	if j.stop != nil {
		return
	}
	j.stop, j.done = make(chan struct{}), make(chan struct{})
	go j.loop(j.stop, j.done)
}

// Stop ends the cycles, interrupting a running one between steps, and waits for it.
func (j *Job) Stop() {
	if j.stop == nil {
		return
	}
	close(j.stop)
	<-j.done
	j.stop = nil
}

func (j *Job) loop(stop, done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(j.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := j.RunCycle(ctx); err != nil && ctx.Err() == nil {
				j.opts.Logger.Warn("retention: cycle failed, next one continues", "err", err)
			}
		}
	}
}

// RunCycle runs one cycle if this broker can lead (ran false: another broker leads).
func (j *Job) RunCycle(ctx context.Context) error {
	j.cycle.Lock()
	defer j.cycle.Unlock()
	ran, err := j.store.Lead(ctx, j.steps)
	j.mu.Lock()
	if ran {
		j.stats.Cycles++
	} else if err == nil {
		j.stats.Skipped++
	}
	j.mu.Unlock()
	return err
}

// steps is one cycle under the lead: the trim walk, then dead letters, traces and (when
// due) empty partitions. A failed job does not keep the others from running.
func (j *Job) steps(ctx context.Context) error {
	errs := []error{j.trim(ctx)}
	for _, job := range []struct {
		name string
		run  func(context.Context, int) (ports.Removed, error)
		add  func(*Stats, ports.Removed)
	}{
		{"dead letters", j.store.PurgeDeadLetters, func(s *Stats, r ports.Removed) { s.DeadLetters += r.Rows; s.DeadLetterBytes += r.Bytes }},
		{"traces", j.store.PurgeTraces, func(s *Stats, r ports.Removed) { s.Traces += r.Rows; s.TraceBytes += r.Bytes }},
	} {
		errs = append(errs, j.purge(ctx, job.name, job.run, job.add))
	}
	if j.cleanupDue() {
		drop := func(ctx context.Context, n int) (ports.Removed, error) {
			return j.store.DropEmptyPartitions(ctx, j.opts.CleanupIdle, n)
		}
		errs = append(errs, j.purge(ctx, "empty partitions", drop, func(s *Stats, r ports.Removed) { s.Partitions += r.Rows }))
	}
	return errors.Join(errs...)
}

// trim continues the partition walk for at most DueCap partitions and DueCap rows.
func (j *Job) trim(ctx context.Context) error {
	j.mu.Lock()
	after := j.cursor
	j.mu.Unlock()
	walked, removed := 0, 0
	for walked < j.opts.DueCap && removed < j.opts.DueCap {
		if err := ctx.Err(); err != nil {
			return err
		}
		ask, rows := j.opts.DueCap-walked, min(j.opts.BatchSize, j.opts.DueCap-removed)
		st, err := j.store.Trim(ctx, after, ask, rows)
		if err != nil {
			j.count(func(s *Stats) { s.Errors++ })
			return fmt.Errorf("retention: trim after %q: %w", after, err)
		}
		j.count(func(s *Stats) {
			s.Segments += st.Segments
			s.Messages += st.Messages
			s.SegBytes += st.SegmentBytes
			s.HashRows += st.HashRows
			s.HashBytes += st.HashBytes
		})
		walked += st.Walked
		n := int(st.Segments + st.HashRows)
		removed += n
		if st.Walked < ask && n < rows {
			after = "" // the walk reached the end: the next cycle starts over
			break
		}
		after = st.Last // a step the row budget cut short resumes at its partition
	}
	j.mu.Lock()
	j.cursor = after
	j.mu.Unlock()
	return nil
}

// purge runs one job's steps until a step removes less than a batch or the cycle's
// DueCap rows are removed.
func (j *Job) purge(ctx context.Context, name string, run func(context.Context, int) (ports.Removed, error), add func(*Stats, ports.Removed)) error {
	for removed := 0; removed < j.opts.DueCap; {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := run(ctx, j.opts.BatchSize)
		if err != nil {
			j.count(func(s *Stats) { s.Errors++ })
			return fmt.Errorf("retention: %s: %w", name, err)
		}
		j.count(func(s *Stats) { add(s, r) })
		removed += int(r.Rows)
		if r.Rows < int64(j.opts.BatchSize) {
			return nil
		}
	}
	return nil
}

// cleanupDue reports whether the empty-partition cleanup runs this cycle, and records
// that it does.
func (j *Job) cleanupDue() bool {
	if j.opts.CleanupIdle <= 0 {
		return false
	}
	now := j.opts.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.lastCleanup.IsZero() && now.Sub(j.lastCleanup) < j.opts.CleanupEvery {
		return false
	}
	j.lastCleanup = now
	return true
}

func (j *Job) count(f func(*Stats)) {
	j.mu.Lock()
	f(&j.stats)
	j.mu.Unlock()
}
