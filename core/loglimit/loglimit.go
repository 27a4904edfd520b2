package loglimit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// CauseKey is the attribute key of a line's cause.
const CauseKey = "cause"

// Cause marks a line as limited under cause: pass it among the line's arguments.
func Cause(cause string) slog.Attr { return slog.String(CauseKey, cause) }

// Options sets the limit; zero values take the defaults in brackets.
type Options struct {
	Lines    int           // [5] lines of one cause let through per interval
	Interval time.Duration // [10s]
}

// maxIdle bounds the windows kept for causes that are not suppressing: past it, the
// expired ones are dropped (they would open afresh anyway).
const maxIdle = 256

// Handler limits the lines that carry a cause; see the package documentation.
type Handler struct {
	next slog.Handler
	st   *state // shared by every handler derived with WithAttrs or WithGroup
}

// NewHandler returns next limited by opts.
func NewHandler(next slog.Handler, opts Options) *Handler {
	if opts.Lines <= 0 {
		opts.Lines = 5
	}
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	return &Handler{next: next, st: &state{opts: opts, causes: make(map[string]*window)}}
}

type state struct {
	opts   Options
	mu     sync.Mutex
	causes map[string]*window
}

// window is one cause's current interval.
type window struct {
	start      time.Time
	logged     int
	suppressed int
	// What the summary says and where it goes: the last suppressed line's level (the
	// highest seen), message and handler.
	level slog.Level
	msg   string
	to    slog.Handler
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(as), st: h.st}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), st: h.st}
}

// Handle implements slog.Handler: a line with a cause passes only while its cause has
// had fewer than Lines lines in the current interval.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	cause, ok := causeOf(r)
	if !ok || h.st.admit(h.next, cause, r) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func causeOf(r slog.Record) (string, bool) {
	var cause string
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == CauseKey && a.Value.Kind() == slog.KindString {
			cause, found = a.Value.String(), true
			return false
		}
		return true
	})
	return cause, found
}

// admit counts a line of cause and reports whether it may be written. The first line
// suppressed in an interval schedules the interval's summary.
func (s *state) admit(to slog.Handler, cause string, r slog.Record) bool {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.causes[cause]
	if w == nil || now.Sub(w.start) >= s.opts.Interval {
		if len(s.causes) >= maxIdle {
			s.prune(now)
		}
		// An expired window that suppressed lines keeps its pending summary: the timer
		// holds it, and this new window replaces it in the map.
		w = &window{start: now}
		s.causes[cause] = w
	}
	if w.logged < s.opts.Lines {
		w.logged++
		return true
	}
	if w.suppressed == 0 {
		w.level = r.Level
		time.AfterFunc(w.start.Add(s.opts.Interval).Sub(now), func() { s.summarise(cause, w) })
	}
	w.suppressed++
	w.level, w.msg, w.to = max(w.level, r.Level), r.Message, to
	return false
}

// prune drops the expired windows with no summary pending.
func (s *state) prune(now time.Time) {
	for c, w := range s.causes {
		if w.suppressed == 0 && now.Sub(w.start) >= s.opts.Interval {
			delete(s.causes, c)
		}
	}
}

// summarise writes the line that stands for w's suppressed lines, at the end of w's
// interval, and forgets w: the next line of its cause opens a new interval.
func (s *state) summarise(cause string, w *window) {
	s.mu.Lock()
	k, level, msg, to := w.suppressed, w.level, w.msg, w.to
	if s.causes[cause] == w {
		delete(s.causes, cause)
	}
	s.mu.Unlock()
	r := slog.NewRecord(time.Now(), level, msg, 0)
	r.AddAttrs(Cause(cause), slog.Int("suppressed", k), slog.Duration("interval", s.opts.Interval))
	_ = to.Handle(context.Background(), r) // nowhere to report a failed log write
}
