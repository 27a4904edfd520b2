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
	// DefaultMetricsRetention is how long the metrics history is kept
	// (METRICS_RETENTION_DAYS).
	DefaultMetricsRetention = 90 * 24 * time.Hour
)

// historyEvery is the time between purges of the metrics history, whose rows come by the
// minute: a purge more often would find next to nothing.
const historyEvery = time.Minute

// recordTimeout bounds the write of a cycle's record when the cycle was interrupted (a
// Stop): what it removed is still recorded.
const recordTimeout = 5 * time.Second

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
	// MetricsRetention is how long the metrics history and the record of retention
	// runs are kept (METRICS_RETENTION_DAYS); older rows are purged at most every
	// minute, in the cycle's bounded steps. [90 days]
	MetricsRetention time.Duration
	// Activity hears of the empty partitions deleted, per queue (nil: none).
	Activity ports.Activity
	Logger   *slog.Logger
	Now      func() time.Time // [time.Now]
}

// Stats are the cycle's cumulative counters (rows and stored bytes removed per job).
type Stats struct {
	Cycles, Skipped              int64 // cycles run; cycles another broker led
	Segments, Messages, SegBytes int64
	HashRows, HashBytes          int64
	DeadLetters, DeadLetterBytes int64
	Traces, TraceBytes           int64
	Partitions                   int64 // empty partitions deleted
	History, HistoryBytes        int64 // rows of the metrics history and of retention_runs
	Errors                       int64 // failed steps (the record's write included)
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
	lastHistory time.Time // zero: never

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
	if opts.MetricsRetention <= 0 {
		opts.MetricsRetention = DefaultMetricsRetention
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

// purgeJob is one of the cycle's purges: a store call of at most n rows, the record's
// job for rows the store cannot place in a queue, and its counters.
type purgeJob struct {
	name, job string
	run       func(context.Context, int) (ports.Removed, error)
	add       func(*Stats, ports.Removed)
}

// steps is one cycle under the lead: the trim walk, then dead letters, traces, (when
// due) empty partitions and the metrics history, then the record of what the cycle
// removed (queen.retention_runs, one write; none when nothing was removed). A failed job
// does not keep the others from running.
func (j *Job) steps(ctx context.Context) error {
	ranAt := j.opts.Now()
	var runs ports.RunTally
	errs := []error{j.trim(ctx, &runs)}
	jobs := []purgeJob{
		{"dead letters", ports.JobDeadLetters, j.store.PurgeDeadLetters,
			func(s *Stats, r ports.Removed) { s.DeadLetters += r.Rows; s.DeadLetterBytes += r.Bytes }},
		{"traces", ports.JobTraces, j.store.PurgeTraces,
			func(s *Stats, r ports.Removed) { s.Traces += r.Rows; s.TraceBytes += r.Bytes }},
	}
	if j.due(&j.lastCleanup, j.opts.CleanupEvery, j.opts.CleanupIdle > 0) {
		jobs = append(jobs, purgeJob{"empty partitions", ports.JobPartitions, j.dropEmpty,
			func(s *Stats, r ports.Removed) { s.Partitions += r.Rows }})
	}
	if j.due(&j.lastHistory, historyEvery, true) {
		before := ranAt.Add(-j.opts.MetricsRetention)
		purge := func(ctx context.Context, n int) (ports.Removed, error) { return j.store.PurgeHistory(ctx, before, n) }
		jobs = append(jobs, purgeJob{"metrics history", ports.JobMetricsHistory, purge,
			func(s *Stats, r ports.Removed) { s.History += r.Rows; s.HistoryBytes += r.Bytes }})
	}
	for _, job := range jobs {
		errs = append(errs, j.purge(ctx, job, &runs))
	}
	return errors.Join(append(errs, j.record(ctx, ranAt, runs.Runs()))...)
}

// dropEmpty is one step of the empty-partition cleanup; Activity hears of each queue's
// deleted partitions.
func (j *Job) dropEmpty(ctx context.Context, n int) (ports.Removed, error) {
	r, err := j.store.DropEmptyPartitions(ctx, j.opts.CleanupIdle, n)
	if j.opts.Activity != nil {
		for _, q := range r.Queues {
			j.opts.Activity.PartitionsDeleted(q.Tenant, q.Queue, int(q.Rows))
		}
	}
	return r, err
}

// record writes the cycle's runs, even when the cycle was interrupted after removing
// something (bounded by recordTimeout).
func (j *Job) record(ctx context.Context, ranAt time.Time, runs []ports.RetentionRun) error {
	if len(runs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := j.store.RecordRuns(ctx, ranAt, runs); err != nil {
		j.count(func(s *Stats) { s.Errors++ })
		return fmt.Errorf("retention: record of %d runs: %w", len(runs), err)
	}
	return nil
}

// trim continues the partition walk for at most DueCap partitions and DueCap rows.
func (j *Job) trim(ctx context.Context, runs *ports.RunTally) error {
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
		for _, r := range st.Removals {
			runs.Add(r)
		}
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
// DueCap rows are removed, adding what each step removed to runs: per queue where the
// store tells, else under the job alone.
func (j *Job) purge(ctx context.Context, job purgeJob, runs *ports.RunTally) error {
	for removed := 0; removed < j.opts.DueCap; {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := job.run(ctx, j.opts.BatchSize)
		if err != nil {
			j.count(func(s *Stats) { s.Errors++ })
			return fmt.Errorf("retention: %s: %w", job.name, err)
		}
		j.count(func(s *Stats) { job.add(s, r) })
		if len(r.Queues) == 0 {
			runs.Add(ports.RetentionRun{Job: job.job, Rows: r.Rows, Bytes: r.Bytes})
		}
		for _, q := range r.Queues {
			runs.Add(q)
		}
		removed += int(r.Rows)
		if r.Rows < int64(j.opts.BatchSize) {
			return nil
		}
	}
	return nil
}

// due reports whether a job run at most every every runs this cycle (never when on is
// false), and records in last that it does.
func (j *Job) due(last *time.Time, every time.Duration, on bool) bool {
	if !on {
		return false
	}
	now := j.opts.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	if !last.IsZero() && now.Sub(*last) < every {
		return false
	}
	*last = now
	return true
}

func (j *Job) count(f func(*Stats)) {
	j.mu.Lock()
	f(&j.stats)
	j.mu.Unlock()
}
