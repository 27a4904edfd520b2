package twophase

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/ports"
)

// Prefix opens the gid of every cross-shard transaction, so the recovery touches no
// prepared transaction of anyone else.
const Prefix = "queen:"

var (
	// ErrUndecided: the decision log did not answer, so this call does not know the
	// outcome; the recovery resolves the prepared parts (the client retries with the
	// same transaction ids, which deduplication makes safe).
	ErrUndecided = errors.New("twophase: the outcome could not be recorded; the recovery resolves it")
	// ErrAborted: the recovery recorded an abort before the coordinator recorded commit
	// (the coordinator was slower than Grace); nothing was committed.
	ErrAborted = errors.New("twophase: aborted by the recovery before the commit was recorded")
)

// Part is one shard's share of a transaction.
type Part struct {
	Shard int
	Store ports.TwoPhaseStore
	Segs  []ports.Segment
	Acks  []ports.AckItem
	Hint  string
}

// Result is a part's results, as ports.TransactionStore answers them.
type Result struct {
	Pushed []ports.SegmentResult
	Acked  []ports.AckResult
}

// Options tunes a Coordinator; zero values take the defaults in brackets.
type Options struct {
	// Cleanup bounds the rollback of prepared parts after a failure, and the commits
	// after the decision, when the request's own context has ended [10 s].
	Cleanup time.Duration
	Logger  *slog.Logger // [slog.Default()]
}

// Coordinator runs cross-shard transactions against one decision log.
type Coordinator struct {
	log  ports.DecisionLog
	opts Options
}

// NewCoordinator returns a coordinator recording its decisions in log.
func NewCoordinator(log ports.DecisionLog, opts Options) *Coordinator {
	if opts.Cleanup <= 0 {
		opts.Cleanup = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Coordinator{log: log, opts: opts}
}

// PartGID is the gid a part of the transaction gid is prepared under on shard.
func PartGID(gid string, shard int) string { return fmt.Sprintf("%s:%d", gid, shard) }

// Run commits parts as one transaction (the package doc) and returns each part's
// results, in parts' order.
func (c *Coordinator) Run(ctx context.Context, parts []Part) ([]Result, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("twophase: transaction id: %w", err)
	}
	gid := Prefix + id.String()
	results := make([]Result, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			results[i].Pushed, results[i].Acked, errs[i] = p.Store.Prepare(ctx, PartGID(gid, p.Shard), p.Segs, p.Acks, p.Hint)
		})
	}
	wg.Wait()
	if err := firstFailure(errs); err != nil {
		// Every part, the failed ones too: a PREPARE whose answer was lost (its context
		// ended) may have prepared, and rolling back before any decision is always safe.
		c.resolve(ctx, gid, parts, nil, false)
		return nil, err
	}
	// The decision outlives the request: a client gone now would otherwise leave every
	// part prepared, its rows locked, until the recovery's grace runs out.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Cleanup)
	commit, err := c.log.Decide(dctx, gid, true)
	cancel()
	if err != nil {
		c.opts.Logger.Warn("twophase: the decision log did not answer; the recovery resolves the transaction",
			"gid", gid, "err", err)
		return nil, fmt.Errorf("%w: %w", ErrUndecided, err)
	}
	c.resolve(ctx, gid, parts, errs, commit)
	if !commit {
		return nil, ErrAborted
	}
	return results, nil
}

// firstFailure is the error to answer with: a rollback the client caused first (it
// says what to fix), else the first error.
func firstFailure(errs []error) error {
	var first error
	for _, err := range errs {
		var rb *ports.RollbackError
		if errors.As(err, &rb) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// resolve commits or rolls back, in parallel, every part (skipped: those errs, when not
// nil, marks failed). A failure is logged and left to the recovery.
func (c *Coordinator) resolve(ctx context.Context, gid string, parts []Part, errs []error, commit bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Cleanup)
	defer cancel()
	var wg sync.WaitGroup
	for i, p := range parts {
		if errs != nil && errs[i] != nil {
			continue
		}
		wg.Go(func() {
			pg := PartGID(gid, p.Shard)
			var err error
			if commit {
				err = p.Store.CommitPrepared(ctx, pg)
			} else {
				err = p.Store.RollbackPrepared(ctx, pg)
			}
			if err != nil {
				c.opts.Logger.Warn("twophase: a prepared part stays in doubt; the recovery resolves it",
					"gid", pg, "commit", commit, "err", err)
			}
		})
	}
	wg.Wait()
}
