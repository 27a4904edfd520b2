package readiness

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// Options tunes a Check; zero values take the defaults in brackets.
type Options struct {
	// SpoolGrace is how long a failed spool write keeps the broker unready [10s].
	SpoolGrace time.Duration
	// PingTimeout bounds the database ping [2s].
	PingTimeout time.Duration
	// Now is the clock [time.Now].
	Now func() time.Time
	// Held, when set, says why pushes are held out of the database ("" when they are
	// not: core/replication's HeldReason); the report carries it.
	Held func() string
}

// Report is one readiness answer and what it was made of.
type Report struct {
	Ready    bool
	Stopping bool // shutdown began
	Database bool // the database answered the ping
	// SpoolFailing: the spool's last write failed within SpoolGrace (false without a
	// spool: then the database alone decides).
	SpoolFailing bool
	HasSpool     bool
	// Held says why pushes go to the spool although the database answers ("": they do
	// not); the broker stays ready, the spool takes them.
	Held string
}

// Check is the readiness rule over the database and the spool.
type Check struct {
	db            ports.Pinger
	spoolFailedAt func() time.Time // nil: no spool
	opts          Options
	stopping      atomic.Bool
}

// New returns a Check pinging db and asking spoolFailedAt (the time of the spool's last
// failed write, zero when none; nil when the broker has no spool).
func New(db ports.Pinger, spoolFailedAt func() time.Time, opts Options) *Check {
	if opts.SpoolGrace <= 0 {
		opts.SpoolGrace = 10 * time.Second
	}
	if opts.PingTimeout <= 0 {
		opts.PingTimeout = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Check{db: db, spoolFailedAt: spoolFailedAt, opts: opts}
}

// Stopping marks the start of the shutdown: every later answer is not ready.
func (c *Check) Stopping() { c.stopping.Store(true) }

// Ready answers whether pushes can be accepted now.
func (c *Check) Ready(ctx context.Context) Report {
	r := Report{Stopping: c.stopping.Load(), HasSpool: c.spoolFailedAt != nil}
	if c.opts.Held != nil {
		r.Held = c.opts.Held()
	}
	if r.HasSpool {
		at := c.spoolFailedAt()
		r.SpoolFailing = !at.IsZero() && c.opts.Now().Sub(at) < c.opts.SpoolGrace
	}
	if r.Stopping {
		return r
	}
	pctx, cancel := context.WithTimeout(ctx, c.opts.PingTimeout)
	defer cancel()
	r.Database = c.db.Ping(pctx) == nil
	r.Ready = r.Database || (r.HasSpool && !r.SpoolFailing)
	return r
}
