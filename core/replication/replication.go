package replication

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// Verdict is Judge's answer.
type Verdict struct {
	// Durable: an acknowledged commit survives a failover to a synchronous standby.
	Durable bool
	// Sync: a synchronous standby is attached now (the queen_pg_sync_replication gauge).
	Sync bool
	// Known is false when the role cannot see the standbys' state.
	Known bool
	// Why says it in a sentence, with the settings that decide it.
	Why string
}

// synchronous reports whether synchronous_commit makes a commit wait for the
// synchronous standbys.
func synchronous(level string) bool {
	switch level {
	case "on", "remote_apply", "remote_write":
		return true
	}
	return false
}

// Judge applies the rules of doc.go to s.
func Judge(s ports.ReplicationSetup) Verdict {
	names := s.SynchronousStandbyNames
	switch {
	case s.InRecovery:
		return Verdict{Known: true, Why: "the database is a standby (in recovery): it takes no writes"}
	case !synchronous(s.SynchronousCommit):
		return Verdict{Known: true, Why: fmt.Sprintf("synchronous_commit=%s: a commit is acknowledged before any standby has it, "+
			"so a failover may lose acknowledged pushes", s.SynchronousCommit)}
	case names == "" && s.Standbys == 0:
		return Verdict{Known: true, Why: "no standby: acknowledged pushes live on the primary's disk alone, and a failover has nothing to promote"}
	case names == "":
		return Verdict{Known: true, Why: fmt.Sprintf("%d asynchronous standby(s) and no synchronous_standby_names: "+
			"a standby promoted after the primary's loss may miss the last acknowledged pushes", s.Standbys)}
	case s.SyncStandbys > 0:
		why := fmt.Sprintf("%d synchronous standby(s) of %d (synchronous_standby_names=%q, synchronous_commit=%s): "+
			"an acknowledged push survives a failover to a synchronous standby", s.SyncStandbys, s.Standbys, names, s.SynchronousCommit)
		if s.SynchronousCommit == "remote_write" {
			why += " (remote_write: not a crash of that standby at the same moment)"
		}
		return Verdict{Durable: true, Sync: true, Known: true, Why: why}
	case s.Hidden > 0:
		return Verdict{Why: fmt.Sprintf("synchronous_standby_names=%q, but the database role cannot see the state of %d standby(s): "+
			"grant it pg_read_all_stats (or pg_monitor) to let the broker tell", names, s.Hidden)}
	default:
		return Verdict{Durable: true, Known: true, Why: fmt.Sprintf("synchronous_standby_names=%q but no synchronous standby is attached: "+
			"commits wait until one attaches (acknowledged pushes stay durable; pushes stall, then go to the spool)", names)}
	}
}

// Options configures a Check; zero values take the defaults in brackets.
type Options struct {
	// Require holds pushes out of the database while no synchronous standby is attached
	// (QUEEN_REQUIRE_SYNC_REPLICATION): they go to the spool, answered buffered, and the
	// spool's replay waits, so that no push is answered queued, nor replayed, on a
	// primary whose loss could take it along.
	Require bool
	// Every is the period of the re-check while Require is on [2 s].
	Every  time.Duration
	Logger *slog.Logger
}

// Check judges the set-up of one database, read through r, and with Options.Require
// keeps the hold of pushes current from Start until Stop.
type Check struct {
	r    ports.ReplicationReader
	opts Options

	held     atomic.Bool // Require and no synchronous standby at the last reading
	reason   atomic.Pointer[string]
	saidHeld bool // the log last said pushes are held; recheck's own
	loop     loop
}

// New returns a Check reading through r; it starts nothing (see Start). With
// opts.Require it holds pushes until a reading finds a synchronous standby.
func New(r ports.ReplicationReader, opts Options) *Check {
	if opts.Every <= 0 {
		opts.Every = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Check{r: r, opts: opts}
	if opts.Require {
		c.hold(true, "no reading of the replication set-up yet")
	}
	return c
}

// Held reports whether pushes must stay out of the database now (Options.Require and no
// synchronous standby attached at the last reading).
func (c *Check) Held() bool { return c.held.Load() }

// HeldReason says why pushes are held ("" when they are not), for GET /ready.
func (c *Check) HeldReason() string {
	if !c.held.Load() {
		return ""
	}
	if p := c.reason.Load(); p != nil {
		return *p
	}
	return ""
}

func (c *Check) hold(on bool, why string) {
	c.reason.Store(&why)
	c.held.Store(on)
}

// Start reads the set-up once at once and then, with Options.Require, every
// Options.Every until Stop. Without Require it starts nothing.
func (c *Check) Start(ctx context.Context) {
	if !c.opts.Require || c.loop.running() {
		return
	}
	c.recheck(ctx)
	c.loop.start(c.opts.Every, func() { c.recheck(context.Background()) })
}

// Stop ends the re-checks.
func (c *Check) Stop() { c.loop.halt() }

// recheck reads the set-up and holds or releases pushes, logging each change. A failed
// read changes nothing: the database being away is the drain's to handle.
func (c *Check) recheck(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Every)
	defer cancel()
	s, err := c.r.ReplicationSetup(ctx)
	if err != nil {
		return
	}
	v := Judge(s)
	if !v.Sync {
		c.hold(true, "QUEEN_REQUIRE_SYNC_REPLICATION: pushes go to the spool: "+v.Why)
		if !c.saidHeld {
			c.saidHeld = true
			c.opts.Logger.Warn("replication: no synchronous standby attached: pushes go to the spool and its replay waits (QUEEN_REQUIRE_SYNC_REPLICATION)",
				"why", v.Why)
		}
		return
	}
	c.hold(false, "")
	if c.saidHeld {
		c.saidHeld = false
		c.opts.Logger.Info("replication: a synchronous standby is attached: pushes are committed again, the spool replays",
			"sync_standbys", s.SyncStandbys)
	}
}

// Sync reports whether a synchronous standby is attached now (queen_pg_sync_replication).
func (c *Check) Sync(ctx context.Context) (bool, error) {
	s, err := c.r.ReplicationSetup(ctx)
	if err != nil {
		return false, err
	}
	return Judge(s).Sync, nil
}

// Report reads the set-up (bounded by timeout), judges it and logs one line: info when
// an acknowledged push survives a failover, a warning otherwise. A failed read is logged
// as such and answered as an unknown verdict.
func (c *Check) Report(ctx context.Context, timeout time.Duration, log *slog.Logger) Verdict {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := c.r.ReplicationSetup(ctx)
	if err != nil {
		log.Warn("replication: set-up unreadable: whether an acknowledged push survives a failover is unknown", "err", err)
		return Verdict{Why: err.Error()}
	}
	v := Judge(s)
	level := slog.LevelWarn
	if v.Durable && v.Known {
		level = slog.LevelInfo
	}
	log.Log(ctx, level, "replication: "+v.Why, "survives_failover", v.Durable && v.Known, "sync_standbys", s.SyncStandbys,
		"standbys", s.Standbys, "synchronous_commit", s.SynchronousCommit)
	return v
}
