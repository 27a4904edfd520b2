package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// Options tunes a Drainer; zero values take the defaults in brackets.
type Options struct {
	MaxBatch   int           // [100] FILE_BUFFER_MAX_BATCH: records per partition segment of a replay bundle
	BundleMax  int           // [64] QUEEN_V2_BUNDLE_MAX: partitions per bundle; a step reads MaxBatch x BundleMax records
	Interval   time.Duration // [100 ms] FILE_BUFFER_FLUSH_MS: idle re-check period
	Backoff    time.Duration // [100 ms] first retry delay after a failed batch
	MaxBackoff time.Duration // [5 s]
	// Probe is how often a background drain pings a database it lost while it backs off
	// ([250 ms]): replay resumes within one Probe of the database answering again instead
	// of sleeping out a backoff that grew during the outage.
	Probe     time.Duration
	Permanent int         // [5] failures (database up) before a batch is split, then a record quarantined
	Paused    func() bool // push maintenance: replay waits while it reports true
	// Held, when set, also makes replay wait while it reports true: pushes are held out
	// of the database (a required synchronous standby is missing, core/replication).
	Held func() bool
	Ping ports.Pinger // distinguishes "database away" from "this batch is bad"
	// Encryption prepares each record spooled unsealed as its queue requires now: sealed
	// when the queue encrypts, refused (kept, then quarantined) when it cannot be sealed
	// ([nil] records are replayed as spooled).
	Encryption *encryption.Policy
	Logger     *slog.Logger
}

// The defaults of Options that the server's variables share: config's defaults are these
// values (its tests check it).
const (
	DefaultMaxBatch = 100                    // FILE_BUFFER_MAX_BATCH
	DefaultInterval = 100 * time.Millisecond // FILE_BUFFER_FLUSH_MS
)

func (o *Options) defaults() {
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.BundleMax <= 0 {
		o.BundleMax = fusion.DefaultBundleMax
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Backoff <= 0 {
		o.Backoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Probe <= 0 {
		o.Probe = 250 * time.Millisecond
	}
	if o.Permanent <= 0 {
		o.Permanent = 5
	}
	if o.Held == nil {
		o.Held = func() bool { return false }
	}
	if o.Paused == nil {
		o.Paused = func() bool { return false }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Summary is what a drain did.
type Summary struct {
	Replayed    int64 `json:"replayed"`    // records stored by the replay
	Duplicates  int64 `json:"duplicates"`  // records already in the database
	Quarantined int64 `json:"quarantined"` // records moved to failed/
	Remaining   int64 `json:"remaining"`   // records still spooled
}

// Drainer replays one spool.
type Drainer struct {
	spool   *spool.Spool
	batcher *fusion.Batcher
	opts    Options

	healthy     atomic.Bool // the last replay (or ping) reached the database
	kick        chan struct{}
	headFails   int   // consecutive failures of the head batch with the database up (Run/Until goroutine only)
	head        *head // which records of the head batch already reached the database
	replayed    atomic.Int64
	duplicates  atomic.Int64
	quarantined atomic.Int64

	stop context.CancelFunc // ends the background drain (Start); nil when not started
	done chan struct{}
}

// New returns a Drainer of sp submitting through b; it starts nothing (see Start).
func New(sp *spool.Spool, b *fusion.Batcher, opts Options) *Drainer {
	opts.defaults()
	d := &Drainer{spool: sp, batcher: b, opts: opts, kick: make(chan struct{}, 1)}
	d.healthy.Store(true)
	return d
}

// Healthy reports whether the database answered the last replay attempt or ping. The
// push path spools straight away while it is false, so pushes during an outage answer
// buffered at once instead of each waiting for a failed connection.
func (d *Drainer) Healthy() bool { return d.healthy.Load() }

// Unhealthy records that a push bundle failed to reach the database.
func (d *Drainer) Unhealthy() {
	if d.healthy.Swap(false) {
		d.opts.Logger.Warn("drain: database unreachable, spooling pushes until it answers again")
	}
	d.Kick()
}

// Kick wakes the drain loop early (new records, maintenance turned off).
func (d *Drainer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Status is the spool as the maintenance and status routes and the metrics show it.
type Status struct {
	Pending     int64 // records spooled, not yet replayed
	Failed      int64 // records quarantined (failed/) or found corrupt
	FailedFiles int64
	FailedBytes int64
	DBHealthy   bool // the drain's view of the database
	// SpoolWriteFailedAt is when the spool's last write failed (a full disk); zero when
	// its last write succeeded or none failed.
	SpoolWriteFailedAt time.Time
}

// Status reports the spool and whether the database answered the last attempt.
func (d *Drainer) Status() Status {
	st := d.spool.Stats()
	return Status{Pending: st.PendingRecords, Failed: st.Quarantined + st.CorruptRecords,
		FailedFiles: st.FailedFiles, FailedBytes: st.FailedBytes, DBHealthy: d.Healthy(), SpoolWriteFailedAt: st.WriteFailedAt}
}

// Combine is the status of several spools as one (a broker on several shards keeps a
// spool per shard): counts add up, the database is healthy when every drain finds its
// own healthy, and the last write failure is the latest of any.
func Combine(sts ...Status) Status {
	out := Status{DBHealthy: true}
	for _, st := range sts {
		out.Pending += st.Pending
		out.Failed += st.Failed
		out.FailedFiles += st.FailedFiles
		out.FailedBytes += st.FailedBytes
		out.DBHealthy = out.DBHealthy && st.DBHealthy
		if st.SpoolWriteFailedAt.After(out.SpoolWriteFailedAt) {
			out.SpoolWriteFailedAt = st.SpoolWriteFailedAt
		}
	}
	return out
}

// SpoolWriteFailedAt is when the spool's last write failed (zero when its last write
// succeeded or none failed): what GET /ready asks (core/readiness).
func (d *Drainer) SpoolWriteFailedAt() time.Time { return d.spool.Stats().WriteFailedAt }

// Summary returns the counters so far and what remains spooled.
func (d *Drainer) Summary() Summary {
	return Summary{Replayed: d.replayed.Load(), Duplicates: d.duplicates.Load(),
		Quarantined: d.quarantined.Load(), Remaining: d.spool.Stats().PendingRecords}
}

// Start runs the broker's background drain (Run) until Stop.
func (d *Drainer) Start() {
	if d.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.stop, d.done = cancel, make(chan struct{})
	go func() {
		defer close(d.done)
		d.Run(ctx)
	}()
}

// Stop ends the background drain and waits for its current step.
func (d *Drainer) Stop() {
	if d.stop == nil {
		return
	}
	d.stop()
	<-d.done
}

// Run drains until ctx ends (the broker's background drain).
func (d *Drainer) Run(ctx context.Context) {
	backoff := d.opts.Backoff
	for ctx.Err() == nil {
		if d.opts.Paused() || d.opts.Held() {
			d.wait(ctx, d.opts.Interval)
			continue
		}
		if !d.healthy.Load() && d.spool.Empty() {
			d.probe(ctx) // nothing to replay: find out by ping when the database is back
			if !d.healthy.Load() {
				d.waitAway(ctx, backoff)
				backoff = min(2*backoff, d.opts.MaxBackoff)
				continue
			}
		}
		progressed, err := d.Step(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				d.opts.Logger.Warn("drain: replay failed, backing off", "err", err, "backoff", backoff)
			}
			d.waitAway(ctx, backoff)
			backoff = min(2*backoff, d.opts.MaxBackoff)
		case !progressed:
			backoff = d.opts.Backoff
			d.wait(ctx, d.opts.Interval)
		default:
			backoff = d.opts.Backoff
		}
	}
}

// Until drains until the spool is empty or deadline passes (the batch-drain job), and
// returns what it did. Transient failures back off inside the deadline.
func (d *Drainer) Until(ctx context.Context, deadline time.Time) (Summary, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	backoff := d.opts.Backoff
	var last error
	for ctx.Err() == nil && !d.spool.Empty() {
		progressed, err := d.Step(ctx)
		if err != nil {
			last = err
			d.wait(ctx, backoff)
			backoff = min(2*backoff, d.opts.MaxBackoff)
			continue
		}
		if progressed {
			last, backoff = nil, d.opts.Backoff
		}
	}
	s := d.Summary()
	if s.Remaining > 0 && last != nil {
		return s, last
	}
	return s, nil
}

func (d *Drainer) wait(ctx context.Context, dt time.Duration) {
	t := time.NewTimer(dt)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-d.kick:
	}
}

// waitAway is the backoff wait of the background drain. While the database is away it
// pings every Probe and ends the wait as soon as one answers: after an outage the
// backoff has grown to MaxBackoff, and the spooled backlog (and every push of its
// partitions, spooled behind it to keep their order) should not wait it out. A batch
// that failed with the database up (a bad record) waits the whole backoff.
func (d *Drainer) waitAway(ctx context.Context, dt time.Duration) {
	if d.healthy.Load() {
		d.wait(ctx, dt)
		return
	}
	for end := time.Now().Add(dt); ctx.Err() == nil; {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		d.wait(ctx, min(left, d.opts.Probe))
		if d.probe(ctx); d.healthy.Load() {
			return
		}
	}
}

func (d *Drainer) probe(ctx context.Context) {
	if d.opts.Ping == nil {
		return
	}
	if d.reachable(ctx) {
		if !d.healthy.Swap(true) {
			d.opts.Logger.Info("drain: database reachable again")
		}
	}
}

// reachable pings the database (true without a Pinger: nothing tells it is away).
func (d *Drainer) reachable(ctx context.Context) bool {
	if d.opts.Ping == nil {
		return true
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return d.opts.Ping.Ping(pctx) == nil
}

// errBatch is a batch that did not fully reach the database.
var errBatch = errors.New("drain: batch not stored")

// head remembers which records of the head batch already reached the database, so a
// retry after a partial failure (some partitions' bundles committed, others failed)
// sends only the rest: with a dedup window of 0 a resent record would be stored twice.
type head struct {
	file  string
	first [16]byte
	done  []bool
}

// headFor returns the progress of batch b: kept when b is the batch retried, new otherwise.
func (d *Drainer) headFor(b *spool.Batch) *head {
	h := d.head
	if h == nil || h.file != b.File || len(h.done) != len(b.Records) || h.first != b.Records[0].MessageID {
		h = &head{file: b.File, first: b.Records[0].MessageID, done: make([]bool, len(b.Records))}
		d.head = h
	}
	return h
}

// Step replays one batch. It reports whether the spool moved forward.
func (d *Drainer) Step(ctx context.Context) (bool, error) {
	b, err := d.spool.Next(d.opts.MaxBatch * d.opts.BundleMax)
	if err != nil || b == nil {
		return false, err
	}
	h := d.headFor(b)
	var todo []int
	for i, done := range h.done {
		if !done {
			todo = append(todo, i)
		}
	}
	failed, refused, why := d.replay(ctx, b, h, todo)
	if failed+refused == 0 {
		d.headFails, d.head = 0, nil
		if err := d.spool.Commit(b); err != nil {
			return false, fmt.Errorf("drain: commit %s: %w", b.File, err)
		}
		if !d.healthy.Swap(true) {
			d.opts.Logger.Info("drain: database reachable again")
		}
		return true, nil
	}
	if failed > 0 || refused > 0 {
		// A failure in the database may mean it went away; so may a refusal, when the
		// queue's settings could not be read (an encrypted queue's flag): ask it.
		if d.opts.Ping != nil {
			d.healthy.Store(false)
			d.probe(ctx)
		}
		if !d.healthy.Load() || d.opts.Ping == nil {
			return false, fmt.Errorf("%w: %d of %d records of %s failed (database unreachable)", errBatch, failed, len(b.Records), b.File)
		}
	}
	// The database answers: maybe a passing overload (a timeout), maybe a bad record, or
	// one that cannot be written as its queue requires (refused). Retry the rest of the
	// batch first; only a batch that keeps failing is taken apart.
	if d.headFails++; d.headFails < d.opts.Permanent {
		return false, fmt.Errorf("%w: %d of %d records of %s failed with the database up, %d refused (attempt %d)%s",
			errBatch, failed+refused, len(b.Records), b.File, refused, d.headFails, because(why))
	}
	d.headFails = 0
	return d.isolate(ctx, b, h)
}

// because formats the reason of a refusal for an error message ("" when none).
func because(why error) string {
	if why == nil {
		return ""
	}
	return ": " + why.Error()
}

// replay submits records todo of b, marks the ones that reached the database (stored or
// duplicate) in h and counts them. It returns how many failed in the database, and how
// many were refused before it (their payload cannot be written as their queue requires,
// or they wait behind such a record of their partition) with the last refusal.
func (d *Drainer) replay(ctx context.Context, b *spool.Batch, h *head, todo []int) (failed, refused int, why error) {
	recs := make([]spool.Record, len(todo))
	for k, i := range todo {
		recs[k] = b.Records[i]
	}
	sts, errs := d.submit(ctx, recs)
	for k, st := range sts {
		switch {
		case errs[k] != nil:
			refused++
			if !errors.Is(errs[k], errHeld) {
				why = errs[k]
			}
			continue
		case st == fusion.Queued:
			d.replayed.Add(1)
		case st == fusion.Duplicate:
			d.duplicates.Add(1)
		default:
			failed++
			continue
		}
		h.done[todo[k]] = true
	}
	return failed, refused, why
}

// isolate handles a batch that fails although the database answers: each record not yet
// stored is tried on its own, Permanent times, and quarantined when it never passes.
// Records are tried in order and the batch is committed only when all are stored or
// quarantined, so a transient failure in the middle keeps the position.
func (d *Drainer) isolate(ctx context.Context, b *spool.Batch, h *head) (bool, error) {
	for i := range b.Records {
		var lastErr error
		for attempt := 0; !h.done[i] && attempt < d.opts.Permanent && ctx.Err() == nil; attempt++ {
			failed, refused, why := d.replay(ctx, b, h, []int{i})
			if failed+refused == 0 {
				break
			}
			lastErr = fmt.Errorf("%w: record %d of %s failed %d times with the database up%s", errBatch, i, b.File, attempt+1, because(why))
			d.wait(ctx, d.opts.Backoff)
		}
		if h.done[i] {
			continue
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// Only a record that fails while the database answers is poison: one that failed
		// because the database went away meanwhile stays spooled (the batch keeps its
		// position, and h remembers what was already stored).
		if !d.reachable(ctx) {
			d.healthy.Store(false)
			return false, fmt.Errorf("%w: record %d of %s failed (database unreachable)", errBatch, i, b.File)
		}
		if err := d.spool.Quarantine(b, i, lastErr); err != nil {
			return false, fmt.Errorf("drain: quarantine record %d of %s: %w", i, b.File, err)
		}
		h.done[i] = true
		d.quarantined.Add(1)
		d.opts.Logger.Error("drain: record quarantined", "file", b.File, "record", i,
			"queue", b.Records[i].Queue, "partition", b.Records[i].Partition, "err", lastErr)
	}
	d.head = nil
	if err := d.spool.Commit(b); err != nil {
		return false, fmt.Errorf("drain: commit %s: %w", b.File, err)
	}
	return true, nil
}

// errHeld marks a record not submitted because an earlier record of its partition was
// refused: storing it first would reorder the partition.
var errHeld = errors.New("drain: held behind a refused record of its partition")

// submit pushes records through fusion, one group per partition in record order, waits
// for every verdict and returns each record's. A record whose payload cannot be written
// as its queue requires now (see Options.Encryption), and every later record of its
// partition, is not submitted: its error says why.
func (d *Drainer) submit(ctx context.Context, recs []spool.Record) ([]fusion.Status, []error) {
	groups, where, errs := groupsOf(recs, d.opts.Encryption.Memo(ctx, true))
	done := make(chan struct{}, len(groups))
	for _, g := range groups {
		g.Done = func() { done <- struct{}{} }
	}
	if len(groups) > 0 {
		d.batcher.Submit(groups...)
	}
	for range groups {
		<-done // fusion always answers (Close answers Error): no need to watch ctx
	}
	out := make([]fusion.Status, len(recs))
	for i, w := range where {
		if errs[i] != nil {
			continue
		}
		res := groups[w[0]].Results[w[1]]
		if res.Status == fusion.Error && errors.Is(res.Err, fusion.ErrEncrypts) {
			// The store refused the record unsealed: this broker's cached flag of its
			// queue was stale (another broker switched the queue to encryptionEnabled).
			// A refusal, not a database failure: the flag is forgotten, so the next
			// attempt reads it again and seals the record, or refuses it as it refuses
			// any record of a queue known to encrypt when there is no key.
			d.opts.Encryption.Forget(recs[i].Tenant, recs[i].Queue)
			errs[i] = fmt.Errorf("drain: record %s of %s/%s: %w", recs[i].TransactionID, recs[i].Queue, recs[i].Partition, res.Err)
			continue
		}
		out[i] = res.Status
	}
	return out, errs
}

// groupsOf turns records into fusion groups, one per (tenant, queue, partition) in the
// order the partitions first appear, frames in record order, each prepared by memo, and
// says where each record went: (group, frame), or why it was not submitted.
func groupsOf(recs []spool.Record, memo *encryption.Memo) ([]*fusion.Group, [][2]int, []error) {
	var groups []*fusion.Group
	where := make([][2]int, len(recs))
	errs := make([]error, len(recs))
	idx := make(map[[3]string]int)
	stopped := make(map[[3]string]bool) // partitions with a refused record in this batch
	for ri, r := range recs {
		k := [3]string{r.Tenant, r.Queue, r.Partition}
		if stopped[k] {
			errs[ri] = errHeld
			continue
		}
		f := segment.Frame{ID: r.MessageID, TransactionID: r.TransactionID, ProducerSub: r.ProducerSub,
			TraceID: r.TraceID, HasTrace: r.HasTrace, Encrypted: r.Encrypted, Payload: r.Payload}
		if err := memo.Seal(r.Tenant, r.Queue, &f); err != nil {
			errs[ri], stopped[k] = fmt.Errorf("drain: record %s of %s/%s: %w", r.TransactionID, r.Queue, r.Partition, err), true
			continue
		}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, &fusion.Group{Tenant: r.Tenant, Queue: r.Queue, Partition: r.Partition})
		}
		g := groups[i]
		where[ri] = [2]int{i, len(g.Frames)}
		g.Frames = append(g.Frames, f)
		g.Hashes = append(g.Hashes, dedup.Hash(r.TransactionID))
	}
	return groups, where, errs
}
