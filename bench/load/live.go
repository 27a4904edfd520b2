package load

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LiveWriter is a run's output (Common.Out) that also keeps a live status line on a
// terminal: elapsed time, messages so far, their rate over the last second, errors,
// redrawn in place with a carriage return once a second while a mode runs, and erased
// when it ends. queen-bench makes one only when the terminal is there to see it (its
// -progress flag), so CI logs and piped output never hold a carriage return.
//
// Every mode gets the line without code of its own: a Meter whose output is a
// LiveWriter tracks its counters (Meter.Start), and the soak tracks its accepted
// messages (RunSoak). When the output and the line share a screen (stdout and stderr
// on the same terminal), each write to the output erases the line first and draws it
// again after, so the progress lines scroll above it instead of running into it.
type LiveWriter struct {
	out, term io.Writer
	shared    bool          // out and term are the same screen
	tick      time.Duration // redraw period: a second (shorter in tests)

	mu   sync.Mutex
	line string // drawn now ("" none)
}

// NewLiveWriter returns out with a live status line drawn on term; shared says that
// both are the same screen.
func NewLiveWriter(out, term io.Writer, shared bool) *LiveWriter {
	return &LiveWriter{out: out, term: term, shared: shared, tick: time.Second}
}

// Write writes p to the output, around the live line when they share a screen.
func (l *LiveWriter) Write(p []byte) (int, error) {
	if !l.shared {
		return l.out.Write(p)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	drawn := l.line
	if drawn != "" {
		l.draw("")
	}
	n, err := l.out.Write(p)
	if drawn != "" {
		l.draw(drawn)
	}
	return n, err
}

// draw replaces the line on the terminal by s ("" erases it); l.mu is held. Only a
// carriage return and spaces: no terminal escape codes.
func (l *LiveWriter) draw(s string) {
	if s == "" && l.line == "" {
		return
	}
	pad := max(len(l.line)-len(s), 0)
	var b strings.Builder
	b.WriteByte('\r')
	b.WriteString(s)
	b.WriteString(strings.Repeat(" ", pad))
	if s == "" || pad > 0 {
		b.WriteByte('\r')
		b.WriteString(s)
	}
	_, _ = io.WriteString(l.term, b.String()) // a status line that cannot be drawn is not an error of the run
	l.line = s
}

// Track draws the status line of a running mode from src (the messages counter named
// what, and the failures) every tick, until stop, which erases it.
func (l *LiveWriter) Track(mode, what string, src func() (msgs, errs int64)) (stop func()) {
	start := time.Now()
	quit, done := make(chan struct{}), make(chan struct{})
	show := func(now, prevAt time.Time, prevN int64) int64 {
		n, errs := src()
		rate := 0.0
		if dt := now.Sub(prevAt).Seconds(); dt > 0 {
			rate = float64(n-prevN) / dt
		}
		line := fmt.Sprintf("%s %s  %s %s  %s/s  errors %s", mode, now.Sub(start).Truncate(time.Second),
			what, grouped(n), grouped(int64(rate+0.5)), grouped(errs))
		l.mu.Lock()
		l.draw(line)
		l.mu.Unlock()
		return n
	}
	go func() {
		defer close(done)
		t := time.NewTicker(l.tick)
		defer t.Stop()
		prevAt := start
		prevN := show(start, start, 0)
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				prevN, prevAt = show(now, prevAt, prevN), now
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
			l.mu.Lock()
			l.draw("")
			l.mu.Unlock()
		})
	}
}

// trackLive tracks src on out's live line when out is a LiveWriter; the returned stop
// is never nil.
func trackLive(out io.Writer, mode, what string, src func() (msgs, errs int64)) (stop func()) {
	if l, ok := out.(*LiveWriter); ok {
		return l.Track(mode, what, src)
	}
	return func() {}
}

// grouped renders n with thousands separators: 1234567 as 1,234,567.
func grouped(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
