package replication

import (
	"context"
	"fmt"
	"log/slog"
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

// Check judges the set-up of one database, read through r.
type Check struct{ r ports.ReplicationReader }

// New returns a Check reading through r.
func New(r ports.ReplicationReader) *Check { return &Check{r: r} }

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
