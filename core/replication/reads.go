package replication

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultMaxReadLag is ReadOptions.MaxLag's default, QUEEN_READ_MAX_LAG_MS's (config's tests
// check that they agree).
const DefaultMaxReadLag = 5 * time.Second

// DefaultReadEvery is ReadOptions.Every's default: how often the lag is measured.
const DefaultReadEvery = time.Second

// Reading is one measurement of the standby against the primary, taken in this order:
// the primary's position first, then the standby's.
type Reading struct {
	// PrimaryLSN is the primary's current WAL position (pg_current_wal_lsn), in bytes.
	PrimaryLSN uint64
	// ReplayLSN is the last WAL position the standby replayed (pg_last_wal_replay_lsn).
	ReplayLSN uint64
	// InRecovery is false when the read server is no standby: it takes writes (a
	// prefer-standby URL fell back to the primary, or the standby was promoted). It
	// then counts as caught up.
	InRecovery bool
	// ReplayAge is the standby's now() - pg_last_xact_replay_timestamp(), both on the
	// standby's clock; HasReplayTime is false when it replayed no transaction since it
	// started.
	ReplayAge     time.Duration
	HasReplayTime bool
}

// ReplicaReader takes one Reading; an error means the standby (or the primary) did not answer.
type ReplicaReader interface {
	ReplicaReading(ctx context.Context) (Reading, error)
}

// ReadTarget is a server a read goes to.
type ReadTarget int

const (
	OnPrimary ReadTarget = iota // QUEEN_PG_URL
	OnReplica                   // QUEEN_PG_READ_URL
)

func (t ReadTarget) String() string {
	if t == OnReplica {
		return "replica"
	}
	return "primary"
}

// ChooseRead is the rule: the replica while its lag is known and at most maxLag, else the
// primary (an unreachable or never measured replica has no known lag).
func ChooseRead(lag time.Duration, known bool, maxLag time.Duration) ReadTarget {
	if !known || lag > maxLag {
		return OnPrimary
	}
	return OnReplica
}

// lagSample is the primary's WAL position as read at a time.
type lagSample struct {
	lsn uint64
	at  time.Time
}

// maxLagSamples bounds the remembered readings of the primary's position (at one a second,
// four minutes: a standby lagging more than that is judged by its replay age alone).
const maxLagSamples = 256

// LagHistory is what a ReadRouter remembers of the primary's WAL position between readings,
// for Estimate. The zero value is ready.
type LagHistory struct {
	samples []lagSample // oldest first; positions nondecreasing
}

// Estimate returns the lag rd shows at now (rd was taken from began to now) and
// remembers rd's primary position. A standby that replayed the primary's position, or a
// server in no recovery, lags 0; one behind lags the smaller of its replay age and the
// time since the newest remembered primary position it has replayed; known is false
// when neither bound exists.
func (h *LagHistory) Estimate(rd Reading, began, now time.Time) (lag time.Duration, known bool) {
	// The position was read after began: at began the primary was at most there, so a
	// standby that replayed it had everything the primary had at began.
	s := append(h.samples, lagSample{rd.PrimaryLSN, began})
	// Positions at or below the replay position are all covered: the newest of them is
	// the only one that can bound a later lag.
	first := 0
	for first+1 < len(s) && s[first+1].lsn <= rd.ReplayLSN {
		first++
	}
	if len(s)-first > maxLagSamples {
		first = len(s) - maxLagSamples
	}
	h.samples = append(h.samples[:0], s[first:]...)
	if !rd.InRecovery || rd.ReplayLSN >= rd.PrimaryLSN {
		return 0, true
	}
	if rd.HasReplayTime {
		lag, known = max(rd.ReplayAge, 0), true
	}
	if c := h.samples[0]; c.lsn <= rd.ReplayLSN {
		if d := now.Sub(c.at); !known || d < lag {
			lag, known = d, true
		}
	}
	return lag, known
}

// ReadOptions tunes a ReadRouter; zero values take the defaults in brackets.
type ReadOptions struct {
	// MaxLag is the most lag a read on the replica may see [5 s] QUEEN_READ_MAX_LAG_MS.
	MaxLag time.Duration
	// Every is the period of the lag's measurement [1 s].
	Every time.Duration
	// Timeout bounds one measurement [2 s]: a replica that does not answer within it
	// counts as unreachable.
	Timeout time.Duration
	Logger  *slog.Logger
	// Now is the clock [time.Now].
	Now func() time.Time
}

// ReadRouter keeps the choice of server for the replica-eligible reads current.
type ReadRouter struct {
	r    ReplicaReader // nil: no replica configured
	opts ReadOptions

	replica atomic.Bool
	lag     atomic.Int64 // nanoseconds; -1: unknown

	mu      sync.Mutex // one measurement at a time: history and said are its own
	history LagHistory
	said    string // the state the log last announced: "", "replica", "primary: why"

	loop loop
}

// NewReadRouter returns a ReadRouter measuring through r (nil: no replica, every read goes to the
// primary); it starts nothing (see Start). Until a measurement says otherwise, reads go
// to the primary.
func NewReadRouter(r ReplicaReader, opts ReadOptions) *ReadRouter {
	if opts.MaxLag < 0 {
		opts.MaxLag = 0
	}
	if opts.Every <= 0 {
		opts.Every = DefaultReadEvery
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	rt := &ReadRouter{r: r, opts: opts}
	rt.lag.Store(-1)
	return rt
}

// Replica reports whether the replica-eligible reads go to the replica now.
func (rt *ReadRouter) Replica() bool { return rt.replica.Load() }

// Lag is the replica's lag at the last measurement; false when there is no replica, it
// did not answer, or its lag could not be bounded (queen_pg_replica_lag_seconds is then
// absent).
func (rt *ReadRouter) Lag() (time.Duration, bool) {
	n := rt.lag.Load()
	return time.Duration(n), n >= 0
}

// Configured reports whether there is a replica to route to.
func (rt *ReadRouter) Configured() bool { return rt.r != nil }

// Start measures once at once, then every ReadOptions.Every until Stop. Without a replica
// it starts nothing.
func (rt *ReadRouter) Start(ctx context.Context) {
	if rt.r == nil || rt.loop.running() {
		return
	}
	rt.Measure(ctx)
	rt.loop.start(rt.opts.Every, func() { rt.Measure(context.Background()) })
}

// Stop ends the measurements; reads keep the last choice.
func (rt *ReadRouter) Stop() { rt.loop.halt() }

// Measure takes one reading (bounded by ReadOptions.Timeout), applies the rule and logs a
// change of server. Start's loop calls it; tests call it to move the choice at once.
func (rt *ReadRouter) Measure(ctx context.Context) ReadTarget {
	if rt.r == nil {
		return OnPrimary
	}
	ctx, cancel := context.WithTimeout(ctx, rt.opts.Timeout)
	defer cancel()
	began := rt.opts.Now()
	rd, err := rt.r.ReplicaReading(ctx)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var (
		lag   time.Duration
		known bool
		why   string
	)
	switch {
	case err != nil:
		why = fmt.Sprintf("the replica does not answer: %v", err)
	default:
		lag, known = rt.history.Estimate(rd, began, rt.opts.Now())
		if !known {
			why = "the replica is behind and replayed no transaction since it started"
		}
	}
	target := ChooseRead(lag, known, rt.opts.MaxLag)
	if known {
		rt.lag.Store(int64(lag))
	} else {
		rt.lag.Store(-1)
	}
	rt.replica.Store(target == OnReplica)
	rt.announce(target, lag, known, why)
	return target
}

// announce logs the reads' server when it changed since the last line: a warning when
// they fall back to the primary, info when they go (back) to the replica.
func (rt *ReadRouter) announce(target ReadTarget, lag time.Duration, known bool, why string) {
	state := "replica"
	if target == OnPrimary {
		if why == "" {
			why = fmt.Sprintf("the replica lags %s, more than QUEEN_READ_MAX_LAG_MS (%s)", lag.Round(time.Millisecond), rt.opts.MaxLag)
		}
		state = "primary"
	}
	if state == rt.said {
		return
	}
	rt.said = state
	if target == OnPrimary {
		rt.opts.Logger.Warn("reads: the admin and dashboard reads answer from the primary", "why", why)
		return
	}
	args := []any{"max_lag_ms", rt.opts.MaxLag.Milliseconds()}
	if known {
		args = append(args, "lag_ms", lag.Milliseconds())
	}
	rt.opts.Logger.Info("reads: the admin and dashboard reads answer from the replica (QUEEN_PG_READ_URL)", args...)
}
