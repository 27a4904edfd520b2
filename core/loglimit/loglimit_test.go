package loglimit_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/queen-go/queen/core/loglimit"
)

// lines collects a JSON handler's lines.
type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// records decodes the lines written so far.
func (l *lines) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("line %q: %v", s, err)
		}
		out = append(out, m)
	}
	return out
}

func newLogger(out *lines, opts loglimit.Options) *slog.Logger {
	h := slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug})
	return slog.New(loglimit.NewHandler(h, opts)).With("server_id", "s1")
}

func TestLimit(t *testing.T) {
	tests := []struct {
		name string
		log  func(l *slog.Logger) // runs at t = 0, 1 ms, 2 ms... (one call per ms)
		n    int                  // calls
		// want: per cause, the lines written in the first interval (3 s) before its end,
		// and the suppressed count of the summary at its end (0: no summary).
		wantLines      map[string]int
		wantSuppressed map[string]int
	}{
		{
			name:           "one cause: Lines pass, the rest are summarised",
			log:            func(l *slog.Logger) { l.Error("ack failed", loglimit.Cause("ack"), "items", 1) },
			n:              100,
			wantLines:      map[string]int{"ack": 3},
			wantSuppressed: map[string]int{"ack": 97},
		},
		{
			name: "causes are limited apart",
			log: func(l *slog.Logger) {
				l.Warn("a", loglimit.Cause("a"))
				l.Warn("b", loglimit.Cause("b"))
			},
			n:              10,
			wantLines:      map[string]int{"a": 3, "b": 3},
			wantSuppressed: map[string]int{"a": 7, "b": 7},
		},
		{
			name:           "within the limit: no summary",
			log:            func(l *slog.Logger) { l.Warn("rare", loglimit.Cause("rare")) },
			n:              2,
			wantLines:      map[string]int{"rare": 2},
			wantSuppressed: map[string]int{},
		},
		{
			name:           "lines without a cause are never limited",
			log:            func(l *slog.Logger) { l.Error("http request") },
			n:              50,
			wantLines:      map[string]int{"": 50},
			wantSuppressed: map[string]int{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				out := &lines{}
				l := newLogger(out, loglimit.Options{Lines: 3, Interval: 3 * time.Second})
				start := time.Now()
				for range tt.n {
					tt.log(l)
					time.Sleep(time.Millisecond)
				}
				time.Sleep(time.Until(start.Add(3*time.Second - time.Nanosecond)))
				synctest.Wait()
				got := map[string]int{}
				for _, r := range out.records(t) {
					if _, ok := r["suppressed"]; ok {
						t.Fatalf("summary before the interval ended: %v", r)
					}
					c, _ := r["cause"].(string)
					got[c]++
				}
				if !maps.Equal(got, tt.wantLines) {
					t.Errorf("lines per cause in the interval = %v, want %v", got, tt.wantLines)
				}
				time.Sleep(time.Nanosecond) // the interval ends
				synctest.Wait()
				sums := map[string]int{}
				for _, r := range out.records(t) {
					if k, ok := r["suppressed"].(float64); ok {
						sums[r["cause"].(string)] = int(k)
						if r["server_id"] != "s1" {
							t.Errorf("summary %v lost the logger's attributes", r)
						}
					}
				}
				if !maps.Equal(sums, tt.wantSuppressed) {
					t.Errorf("summaries = %v, want %v", sums, tt.wantSuppressed)
				}
			})
		})
	}
}

// TestNextInterval: after an interval's summary, the cause gets Lines lines again; at
// most Lines lines plus one summary per interval however long the flood lasts.
func TestNextInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &lines{}
		l := newLogger(out, loglimit.Options{Lines: 2, Interval: time.Second})
		for range 5000 { // 5 s of one line per ms
			l.Error("bundle failed", loglimit.Cause("bundle"))
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		var plain, summaries, suppressed int
		for _, r := range out.records(t) {
			if k, ok := r["suppressed"].(float64); ok {
				summaries++
				suppressed += int(k)
				if r["level"] != "ERROR" || r["msg"] != "bundle failed" {
					t.Errorf("summary %v: want the level and message of the lines it stands for", r)
				}
				continue
			}
			plain++
		}
		if plain != 10 || summaries != 5 || plain+suppressed != 5000 {
			t.Errorf("%d lines, %d summaries of %d suppressed; want 10 lines, 5 summaries, 4990 suppressed",
				plain, summaries, suppressed)
		}
	})
}

// TestSummaryLevel: a summary is written at the highest level it stands for.
func TestSummaryLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &lines{}
		l := newLogger(out, loglimit.Options{Lines: 1, Interval: time.Second})
		l.Warn("x", loglimit.Cause("c"))
		l.Warn("x", loglimit.Cause("c"))
		l.Error("x", loglimit.Cause("c"))
		l.Warn("x", loglimit.Cause("c"))
		time.Sleep(time.Second)
		synctest.Wait()
		recs := out.records(t)
		if len(recs) != 2 || recs[1]["level"] != "ERROR" || recs[1]["suppressed"] != 3.0 {
			t.Fatalf("lines %v: want one WARN line, then an ERROR summary of 3", recs)
		}
	})
}
