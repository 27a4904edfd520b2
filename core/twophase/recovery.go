package twophase

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

// RecoveryOptions tunes a Recovery; zero values take the defaults in brackets.
type RecoveryOptions struct {
	Every time.Duration // between passes [5 s]
	// Grace is the least age of a prepared transaction the recovery touches: longer than
	// a live coordinator takes from PREPARE to its decision [30 s].
	Grace time.Duration
	// Keep is how long decisions are kept [1 h]; it must exceed Grace by far.
	Keep   time.Duration
	Logger *slog.Logger // [slog.Default()]
	Now    func() time.Time
}

// Resolved counts what a pass did.
type Resolved struct {
	Committed, RolledBack, Expired int
}

// Recovery resolves the prepared transactions a crash left in doubt (the package doc).
type Recovery struct {
	shards []ports.TwoPhaseStore // by shard number
	log    ports.DecisionLog
	opts   RecoveryOptions

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRecovery returns the recovery of shards (indexed by shard number) against log.
func NewRecovery(shards []ports.TwoPhaseStore, log ports.DecisionLog, opts RecoveryOptions) *Recovery {
	if opts.Every <= 0 {
		opts.Every = 5 * time.Second
	}
	if opts.Grace <= 0 {
		opts.Grace = 30 * time.Second
	}
	if opts.Keep <= 0 {
		opts.Keep = time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Recovery{shards: shards, log: log, opts: opts}
}

// Pass resolves every transaction in doubt now; the error is the first failure (the
// rest of the pass still ran).
func (r *Recovery) Pass(ctx context.Context) (Resolved, error) {
	var (
		res   Resolved
		first error
	)
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	started := r.opts.Now()
	for n, s := range r.shards {
		gids, err := s.InDoubt(ctx, Prefix, started.Add(-r.opts.Grace))
		if err != nil {
			fail(fmt.Errorf("twophase: in-doubt transactions of shard %d: %w", n, err))
			continue
		}
		for _, pg := range gids {
			commit, err := r.resolveOne(ctx, s, pg)
			switch {
			case err != nil:
				fail(fmt.Errorf("twophase: resolve %s on shard %d: %w", pg, n, err))
			case commit:
				res.Committed++
			default:
				res.RolledBack++
			}
			if err == nil {
				r.opts.Logger.Info("twophase: resolved a transaction left in doubt", "gid", pg, "shard", n, "commit", commit)
			}
		}
	}
	if first != nil {
		return res, first // decisions are kept while anything may still need them
	}
	n, err := r.log.Expire(ctx, started.Add(-r.opts.Keep))
	res.Expired = n
	if err != nil {
		return res, fmt.Errorf("twophase: expire decisions: %w", err)
	}
	return res, nil
}

// resolveOne records abort for pg's transaction unless an outcome is recorded, and
// applies the recorded outcome.
func (r *Recovery) resolveOne(ctx context.Context, s ports.TwoPhaseStore, pg string) (bool, error) {
	i := strings.LastIndexByte(pg, ':')
	if i <= len(Prefix) {
		return false, fmt.Errorf("not a part's gid")
	}
	commit, err := r.log.Decide(ctx, pg[:i], false)
	if err != nil {
		return false, err
	}
	if commit {
		return true, s.CommitPrepared(ctx, pg)
	}
	return false, s.RollbackPrepared(ctx, pg)
}

// Start runs a pass every Every until Stop.
func (r *Recovery) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go r.loop(ctx, r.done)
}

func (r *Recovery) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(r.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.opts.Logger.Warn("twophase: recovery pass failed; the next one retries", "err", err)
		}
	}
}

// Stop ends the passes and waits for the one running.
func (r *Recovery) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel = nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
