package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// DefaultRefresh is how often the flags are re-read by default; QUEEN_MAINTENANCE_REFRESH_MS
// defaults to it too (config's tests check it).
const DefaultRefresh = time.Second

// Options tunes a Flags; zero values take the defaults in brackets.
type Options struct {
	Refresh time.Duration // [1 s] how often the flags are re-read
	Logger  *slog.Logger
	// Changed, when set, is called (from the refresh goroutine or Set) after a flag
	// changed value on this broker's copy.
	Changed func(key string, on bool)
}

// Flags is this broker's copy of the maintenance flags.
type Flags struct {
	store ports.SystemState
	opts  Options
	push  atomic.Bool
	pop   atomic.Bool
	mu    sync.Mutex // serialises apply so Changed sees transitions in order
	sets  uint64     // Set calls applied so far (mu): a Refresh whose read overlapped one drops its read

	stop chan struct{}
	done chan struct{}
}

// New returns the flags, all off until Start reads them.
func New(store ports.SystemState, opts Options) *Flags {
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Flags{store: store, opts: opts}
}

// Push reports push maintenance.
func (f *Flags) Push() bool { return f.push.Load() }

// Pop reports pop maintenance.
func (f *Flags) Pop() bool { return f.pop.Load() }

// Refresh re-reads the flags from the database.
func (f *Flags) Refresh(ctx context.Context) error {
	f.mu.Lock()
	sets := f.sets
	f.mu.Unlock()
	m, err := f.store.Flags(ctx)
	if err != nil {
		return fmt.Errorf("maintenance: read flags: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sets != sets {
		// A Set ran meanwhile: this read may predate its write, and applying it would
		// undo the Set on this broker until the next refresh.
		return nil
	}
	f.apply(ports.MaintenancePush, m[ports.MaintenancePush])
	f.apply(ports.MaintenancePop, m[ports.MaintenancePop])
	return nil
}

// Set stores a flag and applies it on this broker at once.
func (f *Flags) Set(ctx context.Context, key string, on bool) error {
	if key != ports.MaintenancePush && key != ports.MaintenancePop {
		return fmt.Errorf("maintenance: unknown flag %q", key)
	}
	if err := f.store.SetFlag(ctx, key, on); err != nil {
		return fmt.Errorf("maintenance: set %s: %w", key, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets++
	f.apply(key, on)
	return nil
}

// apply sets a flag on this broker's copy. Called with mu held.
func (f *Flags) apply(key string, on bool) {
	flag := &f.push
	if key == ports.MaintenancePop {
		flag = &f.pop
	}
	if flag.Swap(on) != on {
		f.opts.Logger.Info("maintenance flag changed", "flag", key, "enabled", on)
		if f.opts.Changed != nil {
			f.opts.Changed(key, on)
		}
	}
}

// Start reads the flags (they stay off when unreadable), then re-reads them every
// Refresh until Stop.
func (f *Flags) Start(ctx context.Context) {
	if f.stop != nil {
		return
	}
	if err := f.Refresh(ctx); err != nil {
		f.opts.Logger.Warn("maintenance: flags unreadable at start, assuming off", "err", err)
	}
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(f.done)
		t := time.NewTicker(f.opts.Refresh)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), f.opts.Refresh*5)
				if err := f.Refresh(ctx); err != nil {
					f.opts.Logger.Debug("maintenance: refresh failed, keeping the last flags", "err", err)
				}
				cancel()
			}
		}
	}()
}

// Stop ends the refresh goroutine.
func (f *Flags) Stop() {
	if f.stop != nil {
		close(f.stop)
		<-f.done
		f.stop = nil
	}
}
