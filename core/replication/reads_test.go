package replication

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestChoose(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		lag    time.Duration
		known  bool
		maxLag time.Duration
		want   ReadTarget
	}{
		{"caught up", 0, true, 5 * time.Second, OnReplica},
		{"under the limit", 4 * time.Second, true, 5 * time.Second, OnReplica},
		{"at the limit", 5 * time.Second, true, 5 * time.Second, OnReplica},
		{"over the limit", 5*time.Second + time.Millisecond, true, 5 * time.Second, OnPrimary},
		{"unknown (unreachable)", 0, false, 5 * time.Second, OnPrimary},
		{"limit 0, caught up", 0, true, 0, OnReplica},
		{"limit 0, any lag", time.Millisecond, true, 0, OnPrimary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ChooseRead(tt.lag, tt.known, tt.maxLag); got != tt.want {
				t.Errorf("ChooseRead(%v, %v, %v) = %v, want %v", tt.lag, tt.known, tt.maxLag, got, tt.want)
			}
		})
	}
}

// TestEstimate runs sequences of readings one second apart through one LagHistory.
func TestEstimate(t *testing.T) {
	t.Parallel()
	type step struct {
		rd    Reading
		lag   time.Duration
		known bool
	}
	standby := func(primary, replay uint64, age time.Duration) Reading {
		return Reading{PrimaryLSN: primary, ReplayLSN: replay, InRecovery: true, ReplayAge: age, HasReplayTime: age >= 0}
	}
	hour := time.Hour
	tests := []struct {
		name  string
		steps []step
	}{
		{"idle primary, caught up: no lag whatever the replay age", []step{
			{standby(100, 100, hour), 0, true},
			{standby(100, 100, hour+time.Second), 0, true},
		}},
		{"replayed past the position read: caught up", []step{{standby(100, 120, hour), 0, true}}},
		{"no standby (it takes writes): caught up", []step{{Reading{PrimaryLSN: 200, ReplayLSN: 0}, 0, true}}},
		{"first commit after an idle hour: the previous reading bounds the lag", []step{
			{standby(100, 100, hour), 0, true},
			{standby(150, 100, hour+time.Second), time.Second, true},
		}},
		{"replay paused: the lag grows with the clock", []step{
			{standby(100, 100, 2*time.Second), 0, true},
			{standby(150, 100, 3*time.Second), time.Second, true},
			{standby(200, 100, 4*time.Second), 2 * time.Second, true},
			{standby(250, 100, 5*time.Second), 3 * time.Second, true},
		}},
		{"behind from the first reading: the replay age alone", []step{
			{standby(150, 100, 7*time.Second), 7 * time.Second, true},
			{standby(160, 100, 8*time.Second), 8 * time.Second, true},
		}},
		{"a younger replay age wins over an old covered position", []step{
			{standby(100, 100, hour), 0, true},
			{standby(150, 120, 300*time.Millisecond), 300 * time.Millisecond, true},
		}},
		{"behind, no replayed transaction, nothing covered: unknown", []step{
			{standby(150, 100, -1), 0, false},
		}},
		{"catching up: a newer covered position lowers the bound", []step{
			{standby(100, 90, -1), 0, false},
			{standby(200, 100, -1), time.Second, true},
			{standby(300, 200, -1), time.Second, true},
			{standby(300, 300, -1), 0, true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var h LagHistory
			at := time.Unix(1_700_000_000, 0)
			for i, s := range tt.steps {
				lag, known := h.Estimate(s.rd, at, at.Add(10*time.Millisecond))
				// The bound counts from the start of a covered reading: 10 ms more than the steps' seconds.
				if known && lag != s.lag && lag != s.lag+10*time.Millisecond {
					t.Errorf("step %d: lag %v, want %v", i, lag, s.lag)
				}
				if known != s.known {
					t.Errorf("step %d: known %v, want %v", i, known, s.known)
				}
				at = at.Add(time.Second)
			}
			if len(h.samples) > maxLagSamples {
				t.Errorf("%d samples kept", len(h.samples))
			}
		})
	}
}

func TestEstimateKeepsFewSamples(t *testing.T) {
	t.Parallel()
	var h LagHistory
	at := time.Unix(1_700_000_000, 0)
	for i := range 1000 { // replay paused at 0: nothing is ever covered
		h.Estimate(Reading{PrimaryLSN: uint64(i + 1), InRecovery: true}, at, at)
		at = at.Add(time.Second)
	}
	if len(h.samples) != maxLagSamples {
		t.Fatalf("%d samples kept, want %d", len(h.samples), maxLagSamples)
	}
	for i := range 1000 { // caught up: one lagSample is enough
		h.Estimate(Reading{PrimaryLSN: 2000, ReplayLSN: 2000, InRecovery: true}, at.Add(time.Duration(i)), at)
	}
	if len(h.samples) != 1 {
		t.Fatalf("%d samples kept while caught up, want 1", len(h.samples))
	}
}

// replicaReader answers the readings it is given, in turn (the last one again and again).
type replicaReader struct {
	mu   sync.Mutex
	rds  []Reading
	errs []error
}

func (r *replicaReader) set(rd Reading, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rds, r.errs = []Reading{rd}, []error{err}
}

func (r *replicaReader) ReplicaReading(context.Context) (Reading, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rds[0], r.errs[0]
}

func caughtUp() Reading { return Reading{PrimaryLSN: 10, ReplayLSN: 10, InRecovery: true} }

func lagging(age time.Duration) Reading {
	return Reading{PrimaryLSN: 20, ReplayLSN: 10, InRecovery: true, ReplayAge: age, HasReplayTime: true}
}

func TestRouterFollowsTheRule(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := &replicaReader{}
	r.set(caughtUp(), nil)
	// Ten seconds between measurements: the remembered positions bound no lag below the replay ages.
	now := time.Unix(1_700_000_000, 0)
	rt := NewReadRouter(r, ReadOptions{MaxLag: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		Now: func() time.Time { return now }})
	if rt.Replica() {
		t.Fatal("reads go to the replica before any measurement")
	}
	if _, known := rt.Lag(); known {
		t.Fatal("a lag is known before any measurement")
	}
	steps := []struct {
		rd      Reading
		err     error
		want    ReadTarget
		lag     time.Duration
		known   bool
		newLine string // "" no line
	}{
		{caughtUp(), nil, OnReplica, 0, true, "answer from the replica"},
		{caughtUp(), nil, OnReplica, 0, true, ""},
		{lagging(6 * time.Second), nil, OnPrimary, 6 * time.Second, true, "lags 6s, more than QUEEN_READ_MAX_LAG_MS (5s)"},
		{lagging(7 * time.Second), nil, OnPrimary, 7 * time.Second, true, ""},
		{Reading{}, errors.New("connection refused"), OnPrimary, 0, false, ""}, // still the primary: no new line
		{caughtUp(), nil, OnReplica, 0, true, "answer from the replica"},
		{Reading{}, errors.New("connection refused"), OnPrimary, 0, false, "does not answer: connection refused"},
		{lagging(2 * time.Second), nil, OnReplica, 2 * time.Second, true, "answer from the replica"},
	}
	lines := 0
	for i, s := range steps {
		r.set(s.rd, s.err)
		now = now.Add(10 * time.Second)
		if got := rt.Measure(context.Background()); got != s.want || rt.Replica() != (s.want == OnReplica) {
			t.Fatalf("step %d: %v (OnReplica %v), want %v", i, got, rt.Replica(), s.want)
		}
		lag, known := rt.Lag()
		if known != s.known || lag != s.lag && known {
			t.Errorf("step %d: lag %v known %v, want %v %v", i, lag, known, s.lag, s.known)
		}
		out := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if buf.Len() == 0 {
			out = nil
		}
		switch {
		case s.newLine == "" && len(out) != lines:
			t.Errorf("step %d: a line without a change: %s", i, out[len(out)-1])
		case s.newLine != "" && (len(out) != lines+1 || !strings.Contains(out[len(out)-1], s.newLine)):
			t.Errorf("step %d: want one new line saying %q, log:\n%s", i, s.newLine, buf.String())
		}
		lines = len(out)
	}
}

func TestRouterWithoutReplica(t *testing.T) {
	t.Parallel()
	rt := NewReadRouter(nil, ReadOptions{})
	rt.Start(context.Background()) // starts nothing
	defer rt.Stop()
	if rt.Configured() || rt.Replica() || rt.Measure(context.Background()) != OnPrimary {
		t.Fatal("a router without a replica routes to it")
	}
	if _, known := rt.Lag(); known {
		t.Fatal("a lag without a replica")
	}
}

// TestRouterPolls: Start measures at once, then every Every, until Stop.
func TestRouterPolls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := &replicaReader{}
		r.set(caughtUp(), nil)
		rt := NewReadRouter(r, ReadOptions{Every: time.Second, Logger: slog.New(slog.DiscardHandler)})
		rt.Start(context.Background())
		if !rt.Replica() {
			t.Fatal("Start did not measure at once")
		}
		r.set(lagging(time.Minute), nil)
		time.Sleep(1500 * time.Millisecond) // the fake clock of the bubble: one tick
		synctest.Wait()
		if rt.Replica() {
			t.Fatal("no measurement after a period")
		}
		rt.Stop()
		r.set(caughtUp(), nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if rt.Replica() {
			t.Fatal("measured after Stop")
		}
	})
}
