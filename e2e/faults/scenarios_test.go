package faults

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// scenario is one fault run under load: a broker on a fresh database, the load, the
// fault, the mandatory drain, then the verifier and the database invariants.
type scenario struct {
	name   string
	cfg    load.FaultConfig
	env    map[string]string // broker configuration on top of startBroker's
	tmpfs  string            // the spool on a tmpfs of this size (startBrokerTmpfs)
	second bool              // a second broker on the same database serves the consumers
	warm   time.Duration     // load before the fault
	after  time.Duration     // load after the fault
	inject func(t *testing.T, f *faultRun) time.Duration
	// db is the scenario's database ("": a fresh one on the package's cluster).
	db string
	// measure: the verifier's and the invariants' findings are recorded, not failures
	// (a fault whose loss is documented, not promised away: asynchronous failover).
	measure bool
	// failover adds the row to the failover table (time without queued answers, pushes
	// spooled, redeliveries).
	failover bool
}

// faultRun is what an injector works with.
type faultRun struct {
	db     string
	broker *brokerProc
	other  *brokerProc // the consumers' broker when scenario.second is set
	load   *load.FaultRun
}

// runScenario runs s and records its row; the test fails on any broken promise.
func runScenario(t *testing.T, s scenario) {
	db := s.db
	if db == "" {
		db = pg.newDatabase(t)
	}
	b := startBrokerTmpfs(t, db, s.env, s.tmpfs)
	var other *brokerProc
	if s.second {
		other = startBroker(t, db, s.env)
		s.cfg.ConsumeURL = other.URL
	}
	r, err := load.StartFaultLoad(b.URL, s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	time.Sleep(s.warm) // load runs: the fault hits a broker under traffic
	recovery := time.Duration(0)
	injected := time.Now()
	if s.inject != nil {
		recovery = s.inject(t, &faultRun{db: db, broker: b, other: other, load: r})
	}
	time.Sleep(s.after)
	took := r.Drain(b.spoolEmpty, 3*time.Minute)
	rep := r.Verify()
	for _, err := range r.Errors() {
		t.Error(err)
	}
	if s.failover {
		// Recovered: queued answers flowing again after the longest stretch without one.
		recovery = recordFailover(s.name, rep, r, injected, s.measure)
	}
	if s.measure {
		t.Logf("%s (measured, not judged): drain %v, push errors %d\n%s", s.name, took.Round(time.Millisecond), r.PushErrors(), rep)
		return
	}
	pass := !t.Failed()
	if backlog := b.spoolBacklog(); len(backlog) > 0 {
		t.Errorf("spool not empty after the drain: %v", backlog)
		pass = false
	}
	if q := b.quarantined(); len(q) > 0 {
		t.Errorf("spool quarantine not empty: %v", q)
		pass = false
	}
	record(s.name, rep, recovery, pass)
	t.Logf("%s: drain %v, push errors %d\n%s", s.name, took.Round(time.Millisecond), r.PushErrors(), rep)
	if !rep.Pass {
		t.Errorf("verifier FAIL:\n%s", rep)
	}
	if rep.Groups[0].Acknowledged == 0 {
		t.Errorf("no push was accepted: the scenario measured nothing")
	}
	checkInvariants(t, db, s.cfg.Queue, s.cfg.Groups)
}

// ciRate is the fault load's rate: 400 msg/s in CI, where the race-built broker,
// PostgreSQL and the load share two cores; the plan's 2,000 in the whole matrix.
var ciRate = sized(400, 2000)

// TestFaultNone is the control: the load without a fault must pass the verifier and the
// invariants, or no fault row means anything.
func TestFaultNone(t *testing.T) {
	runScenario(t, scenario{name: "none (control)", cfg: load.L1("f0", ciRate), warm: sized(8*time.Second, 30*time.Second)})
}

// TestFaultF1BrokerKill: kill -9 of the broker mid-push, three times, restarted at once.
// Clients see resets and retry with the same transaction ids; nothing acknowledged is
// lost and nothing is stored twice.
func TestFaultF1BrokerKill(t *testing.T) {
	runScenario(t, scenario{name: "F1 broker kill -9 x3", cfg: load.L1("f1", ciRate), warm: sized(5*time.Second, 30*time.Second),
		after: sized(3*time.Second, 30*time.Second), inject: func(t *testing.T, f *faultRun) time.Duration {
			var worst time.Duration
			for i := range 3 {
				if i > 0 {
					time.Sleep(sized(4*time.Second, 20*time.Second))
				}
				killed := time.Now()
				f.broker.kill()
				f.broker.restart()
				worst = max(worst, recoveredAfter(t, f.load, killed))
			}
			return worst
		}})
}

// TestFaultF3PostgresCrash: PostgreSQL stopped with -m immediate for a while. Pushes
// turn to buffered within the statement timeout + 1 s, fast; pops answer 503 with
// Retry-After; after the restart the spool drains in order.
func TestFaultF3PostgresCrash(t *testing.T) {
	outage := sized(10*time.Second, 30*time.Second)
	runScenario(t, scenario{name: fmt.Sprintf("F3 PostgreSQL crash (immediate) %v", outage), cfg: load.L1("f3", ciRate),
		warm: sized(5*time.Second, 30*time.Second), after: sized(2*time.Second, 30*time.Second), inject: func(t *testing.T, f *faultRun) time.Duration {
			crashed := time.Now()
			pg.crash(t)
			time.Sleep(outage / 2)
			checkPopUnavailable(t, f.broker)
			time.Sleep(outage / 2)
			restarted := time.Now()
			pg.restart(t)
			back := time.Now() // PostgreSQL accepts connections again (crash recovery done)
			// Pushes during the outage: buffered within statement timeout (2 s) + 1 s.
			settled := crashed.Add(3 * time.Second)
			during := f.load.PushSamples(settled, restarted)
			if len(during) == 0 {
				t.Errorf("no push began between %v after the crash and the restart", settled.Sub(crashed))
			}
			var lat []time.Duration
			for _, s := range during {
				if !s.Buffered {
					t.Errorf("a push %v after the crash was not answered buffered (ok %v, took %v)", s.At.Sub(crashed), s.OK, s.Took)
					break
				}
				lat = append(lat, s.Took)
			}
			// The latency target is checked in the whole matrix (make faults) only: in CI
			// the other packages' tests share the two cores, and speed is never judged by
			// a timed test there (the semantic check, buffered and not waiting for the
			// database, is above).
			p99 := percentile(lat, 0.99)
			t.Logf("buffered pushes during the outage: %d, p99 %v", len(lat), p99)
			if os.Getenv(fullEnv) != "" && p99 > 50*time.Millisecond {
				t.Errorf("buffered pushes during the outage: p99 %v, want < 50ms (%d pushes)", p99, len(lat))
			}
			recovered := recoveredAfter(t, f.load, restarted)
			// The replay: every buffered item back in PostgreSQL, at >= 5,000 msg/s in the
			// plan's size (CI's outage spools too little to measure a rate).
			spooled := f.load.Ledger.Count("buffered")
			drained := f.broker.waitSpoolEmpty(t, 2*time.Minute)
			rate := float64(spooled) / drained.Sub(back).Seconds()
			t.Logf("replay: %d buffered items back in PostgreSQL %v after it accepted connections again (%.0f msg/s; its restart took %v)",
				spooled, drained.Sub(back).Round(time.Millisecond), rate, back.Sub(restarted).Round(time.Millisecond))
			if os.Getenv(fullEnv) != "" && rate < 5000 {
				t.Errorf("replay at %.0f msg/s, want >= 5,000", rate)
			}
			return recovered
		}})
}

// checkPopUnavailable: while PostgreSQL is down a pop answers 503 with Retry-After, not
// a 500.
func checkPopUnavailable(t *testing.T, b *brokerProc) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get(b.URL + "/api/v1/pop/queue/f3?batch=1&consumerGroup=probe")
	if err != nil {
		t.Errorf("pop during the outage: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("pop during the outage: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// recoveredAfter waits (bounded) for the first accepted push that began after since and
// returns how long after since it was answered.
func recoveredAfter(t *testing.T, r *load.FaultRun, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, s := range r.PushSamples(since, time.Now().Add(time.Hour)) {
			if s.OK {
				return s.At.Add(s.Took).Sub(since)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("no push accepted within a minute after %v", since.Format(time.TimeOnly))
	return time.Minute
}

// percentile returns the p-quantile of ds (0 when empty).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
