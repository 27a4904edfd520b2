package vegas

import (
	"sync"
	"time"
)

// The defaults of Options that the server's variables share: config's defaults are these
// values (its tests check it). Beta defaults to twice Alpha.
const (
	DefaultAlpha = 3 // QUEEN_VEGAS_ALPHA
	DefaultBeta  = 2 * DefaultAlpha
)

// Options bounds and tunes a Limiter. Zero values take the defaults in brackets.
type Options struct {
	Initial    int // starting limit [16]
	Min        int // lowest limit [4]
	Max        int // highest limit [64]
	Alpha      int // grow below this many estimated queued requests [3]
	Beta       int // shrink above this many [6]
	ProbeEvery int // samples between minRTT resets [1000]
}

func (o *Options) defaults() {
	if o.Min <= 0 {
		o.Min = 4
	}
	if o.Max <= 0 {
		o.Max = 64
	}
	if o.Max < o.Min {
		o.Max = o.Min
	}
	if o.Initial <= 0 {
		o.Initial = 16
	}
	o.Initial = min(max(o.Initial, o.Min), o.Max)
	if o.Alpha <= 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Beta <= o.Alpha {
		o.Beta = o.Alpha * 2
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = 1000
	}
}

// Limiter hands out permits up to an adaptive limit. It is safe for concurrent use.
type Limiter struct {
	opts Options

	mu       sync.Mutex
	limit    int
	inFlight int
	maxUsed  int // highest inFlight since the last sample
	minRTT   time.Duration
	samples  int
}

// New returns a limiter starting at opts.Initial.
func New(opts Options) *Limiter {
	opts.defaults()
	return &Limiter{opts: opts, limit: opts.Initial}
}

// TryAcquire takes a permit if one is free right now. It never blocks.
func (l *Limiter) TryAcquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight >= l.limit {
		return false
	}
	l.inFlight++
	l.maxUsed = max(l.maxUsed, l.inFlight)
	return true
}

// TryAcquireIf takes a permit if one is free right now and take, run under the limiter's
// lock only in that case, returns true: work that may have vanished (another permit's
// holder took it) is claimed together with its permit, so no permit is taken, counted as
// used and given back for nothing. take must not call the limiter. It never blocks
// beyond take.
func (l *Limiter) TryAcquireIf(take func() bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight >= l.limit || !take() {
		return false
	}
	l.inFlight++
	l.maxUsed = max(l.maxUsed, l.inFlight)
	return true
}

// Release returns a permit with the round trip it covered; ok is false when the call
// failed (the sample then only shrinks the limit).
func (l *Limiter) Release(rtt time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	if !ok {
		l.limit = max(l.opts.Min, l.limit*9/10)
		return
	}
	if rtt <= 0 {
		return
	}
	l.samples++
	if l.minRTT == 0 || rtt < l.minRTT || l.samples%l.opts.ProbeEvery == 0 {
		l.minRTT = rtt
	}
	queued := float64(l.limit) * (1 - float64(l.minRTT)/float64(rtt))
	switch {
	case queued < float64(l.opts.Alpha) && 2*l.maxUsed >= l.limit:
		l.limit = min(l.opts.Max, l.limit+1)
	case queued > float64(l.opts.Beta):
		l.limit = max(l.opts.Min, l.limit-1)
	}
	l.maxUsed = l.inFlight
}

// Limit is the current limit.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// InFlight is the number of permits held.
func (l *Limiter) InFlight() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight
}
