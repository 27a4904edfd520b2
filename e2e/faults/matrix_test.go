package faults

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// The rest of the matrix: slower faults that `make faults` runs (QUEEN_FAULTS_FULL);
// make test skips them to stay within CI's time.

// fullOnly skips a scenario outside the whole matrix.
func fullOnly(t *testing.T) {
	t.Helper()
	if os.Getenv(fullEnv) == "" {
		t.Skipf("part of the whole matrix only: make faults (%s=1)", fullEnv)
	}
}

// queuedAfter waits (bounded) for the first push that began after since and was
// committed (queued, not buffered) and returns when it was answered, after since.
func queuedAfter(t *testing.T, r *load.FaultRun, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, s := range r.PushSamples(since, time.Now().Add(time.Hour)) {
			if s.OK && !s.Buffered {
				return s.At.Add(s.Took).Sub(since)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("no push committed within a minute after %v", since.Format(time.TimeOnly))
	return time.Minute
}

// TestFaultF2KillDuringReplay: PostgreSQL away long enough to spool a backlog; when it
// returns the broker is killed halfway through the replay and restarted: the replay
// resumes, what was committed before the kill comes back duplicate and is stored once.
func TestFaultF2KillDuringReplay(t *testing.T) {
	fullOnly(t)
	runScenario(t, scenario{name: "F2 broker kill -9 during spool replay", cfg: load.L1("f2", ciRate),
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			pg.crash(t)
			time.Sleep(20 * time.Second)
			pending, err := f.broker.metric(context.Background(), "queen_file_buffer_pending")
			if err != nil || pending == 0 {
				t.Fatalf("nothing spooled after 20 s without PostgreSQL (%v, %v)", pending, err)
			}
			pg.restart(t)
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if n, err := f.broker.metric(context.Background(), "queen_file_buffer_pending"); err == nil && n <= pending/2 {
					break
				}
			}
			killed := time.Now()
			f.broker.kill()
			f.broker.restart()
			return queuedAfter(t, f.load, killed)
		}})
}

// TestFaultF4PostgresRestarts: five clean restarts of PostgreSQL (5 s down each) within
// two minutes; the pool finds it again each time within 2 s.
func TestFaultF4PostgresRestarts(t *testing.T) {
	fullOnly(t)
	runScenario(t, scenario{name: "F4 PostgreSQL clean restart x5", cfg: load.L1("f4", ciRate),
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			var worst time.Duration
			for i := range 5 {
				if i > 0 {
					time.Sleep(15 * time.Second)
				}
				if err := pg.stop(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Second)
				pg.restart(t)
				back := time.Now()
				took := queuedAfter(t, f.load, back)
				if took > 2*time.Second {
					t.Errorf("restart %d: first committed push %v after PostgreSQL was back, want <= 2s", i+1, took)
				}
				worst = max(worst, took)
			}
			return worst
		}})
}

// TestFaultF5PostgresHang: the cluster's processes stopped (SIGSTOP) for 20 s: pushes
// turn buffered after the statement timeout, the broker's goroutines stay bounded, and
// within 10 s of SIGCONT live traffic commits again and the spool drains.
func TestFaultF5PostgresHang(t *testing.T) {
	fullOnly(t)
	runScenario(t, scenario{name: "F5 PostgreSQL hang (SIGSTOP 20 s)", cfg: load.L1("f5", ciRate),
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			before, err := f.broker.metric(context.Background(), "go_goroutines")
			if err != nil {
				t.Fatal(err)
			}
			pg.freeze(t)
			frozen := time.Now()
			peak := before
			for time.Since(frozen) < 20*time.Second {
				if n, err := f.broker.metric(context.Background(), "go_goroutines"); err == nil {
					peak = max(peak, n)
				}
				time.Sleep(500 * time.Millisecond)
			}
			pg.thaw(t)
			thawed := time.Now()
			if peak > 2*before+200 {
				t.Errorf("goroutines rose from %v to %v while PostgreSQL hung: a pile-up per request", before, peak)
			}
			buffered := 0
			for _, s := range f.load.PushSamples(frozen.Add(3*time.Second), thawed) {
				if s.Buffered {
					buffered++
				}
			}
			if buffered == 0 {
				t.Errorf("no push answered buffered while PostgreSQL hung")
			}
			took := queuedAfter(t, f.load, thawed)
			if drained := f.broker.waitSpoolEmpty(t, time.Minute).Sub(thawed); took > 10*time.Second || drained > 10*time.Second {
				t.Errorf("after SIGCONT: first commit %v, spool empty %v; want both within 10s", took, drained)
			}
			return took
		}})
}

// TestFaultF6TerminateBackends: every backend of the broker terminated every 5 s, six
// times: the affected pushes are buffered, never lost, and the pool reconnects.
func TestFaultF6TerminateBackends(t *testing.T) {
	fullOnly(t)
	runScenario(t, scenario{name: "F6 pg_terminate_backend x6", cfg: load.L1("f6", ciRate),
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			var worst time.Duration
			db := dbName(f.db)
			for range 6 {
				at := time.Now()
				pg.admin(t, fmt.Sprintf("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND pid <> pg_backend_pid()", db))
				worst = max(worst, queuedAfter(t, f.load, at))
				time.Sleep(5 * time.Second)
			}
			return worst
		}})
}

// dbName is the database of a connection URL.
func dbName(url string) string {
	name := url[strings.LastIndex(url, "/")+1:]
	name, _, _ = strings.Cut(name, "?")
	return name
}

// TestFaultF7LockStorm: a session holds an ACCESS EXCLUSIVE lock on the partitions table
// for 10 s. Pushes are buffered once their statements time out, and the timed-out
// statements are cancelled on the server: no broker backend keeps waiting on a
// statement older than the timeout.
func TestFaultF7LockStorm(t *testing.T) {
	fullOnly(t)
	runScenario(t, scenario{name: "F7 lock storm (ACCESS EXCLUSIVE 10 s)", cfg: load.L1("f7", ciRate),
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			ctx, cancel := context.WithCancel(context.Background())
			locked := make(chan error, 1)
			go func() { locked <- holdLock(ctx, f.db, 10*time.Second) }()
			time.Sleep(5 * time.Second) // the statement timeout (2 s) + 1 s, and more
			stale := queryInt(t, f.db, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
				  AND query NOT LIKE 'LOCK TABLE%' AND now() - query_start > interval '3 seconds'`)
			if stale > 0 {
				t.Errorf("%d broker backends still run statements older than the statement timeout + 1 s: not cancelled", stale)
			}
			if err := <-locked; err != nil {
				t.Error(err)
			}
			cancel()
			released := time.Now()
			return queuedAfter(t, f.load, released)
		}})
}

// TestFaultF10SpoolCorruption: one byte flipped inside a record of a finalised spool file
// and 7 bytes cut off the active file, then a restart with PostgreSQL up: every intact
// record is replayed, the corrupt one is quarantined (failed/) and counted, the torn tail
// is dropped.
func TestFaultF10SpoolCorruption(t *testing.T) {
	fullOnly(t)
	_, b, a := setup(t, map[string]string{"FILE_BUFFER_EVENTS_PER_FILE": "10"})
	pg.crash(t)
	up := false
	t.Cleanup(func() {
		if !up {
			pg.restart(t)
		}
	})
	for i := range 20 {
		if r := a.push(item("f10", fmt.Sprintf("p%02d", i), fmt.Sprintf("MARK-%02d", i)))[0]; r.Status != "buffered" {
			t.Fatalf("push %d with PostgreSQL down: %+v", i, r)
		}
	}
	b.kill()
	bufs, _ := filepath.Glob(filepath.Join(b.Spool, "*.buf"))
	tmps, _ := filepath.Glob(filepath.Join(b.Spool, "*.tmp"))
	if len(bufs) == 0 {
		t.Fatalf("no finalised spool file to corrupt (files: %v %v)", bufs, tmps)
	}
	flipMarker(t, bufs[0], "MARK-03")
	cut := bufs[len(bufs)-1]
	if len(tmps) > 0 {
		cut = tmps[0]
	}
	st, err := os.Stat(cut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(cut, st.Size()-7); err != nil {
		t.Fatal(err)
	}
	pg.restart(t)
	up = true
	b.restart()
	b.waitSpoolEmpty(t, time.Minute)
	got := map[string]bool{}
	for p := a.pop("f10?batch=100&partitions=20&consumerGroup=g"); p != nil; p = a.pop("f10?batch=100&partitions=20&consumerGroup=g") {
		for _, m := range p.Messages {
			got[m.TransactionID] = true
		}
		a.ack("g", p, "", "completed", "")
	}
	pass := !got["MARK-03"] && len(got) == 18
	if !pass {
		t.Errorf("replayed %d of 20 (%v); want 18: all but the flipped record and the torn last one", len(got), got)
	}
	if q := b.quarantined(); len(q) == 0 {
		pass = false
		t.Errorf("nothing quarantined in failed/")
	}
	if n, err := b.metric(context.Background(), "queen_file_buffer_failed"); err != nil || n != 1 {
		pass = false
		t.Errorf("queen_file_buffer_failed = %v (%v), want 1", n, err)
	}
	recordTargeted("F10 spool corruption (byte flip + torn tail)", 20, int64(len(got)), 0, pass)
}

// flipMarker flips one byte of marker inside file.
func flipMarker(t *testing.T, file, marker string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(raw), marker)
	if i < 0 {
		t.Fatalf("%s does not hold %s (payloads are stored raw below 512 bytes?)", file, marker)
	}
	raw[i+len(marker)-1] ^= 0x01
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFaultF13DisconnectAfterClaim: a client sends a pop and closes the connection
// before reading the answer. net/http notices the closed connection and cancels the
// request's context, so the claim is rolled back with it and the messages go to the next
// pop at once (measured: tens of milliseconds). Where the claim commits before the close
// is noticed, the write of the answer cannot tell (it lands in the kernel's buffer) and
// the fallback is the lease's expiry (3 s here): the row allows lease + 1 s, and the
// redelivery comes before any later message.
func TestFaultF13DisconnectAfterClaim(t *testing.T) {
	fullOnly(t)
	_, b, a := setup(t, nil)
	a.configure("f13", map[string]any{"leaseTime": 3})
	a.push(item("f13", "p", "m0"), item("f13", "p", "m1"))
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "GET /api/v1/pop/queue/f13?batch=1&consumerGroup=g HTTP/1.1\r\nHost: x\r\n\r\n")
	conn.Close()
	began := time.Now()
	a.push(item("f13", "p", "m2"))
	var first string
	for time.Since(began) < 10*time.Second {
		if p := a.pop("f13?batch=10&consumerGroup=g&wait=true&timeout=500"); p != nil {
			first = p.Messages[0].TransactionID
			a.ack("g", p, "", "completed", "")
			break
		}
	}
	took := time.Since(began)
	pass := first == "m0" && took <= 4*time.Second
	if !pass {
		t.Errorf("after the abandoned claim: first delivery %q after %v; want m0 within the 3 s lease + 1 s", first, took)
	}
	recordTargeted("F13 client disconnect after the claim", 3, 1, took, pass)
}

// TestFaultF15LeaseExtend: a lease extended every second for 10 s is not redelivered;
// an extend after it expired revives nothing. docs/api.md §5.5 answers 200 with
// success:false and renewed 0 there (the wire contract; docs/reliability.md's row
// suggests 409/404).
func TestFaultF15LeaseExtend(t *testing.T) {
	fullOnly(t)
	_, _, a := setup(t, nil)
	a.configure("f15", map[string]any{"leaseTime": 2})
	a.push(item("f15", "p", "m0"))
	p := a.pop("f15?batch=1&consumerGroup=g")
	if p == nil {
		t.Fatal("nothing to pop")
	}
	pass := true
	for i := range 10 {
		time.Sleep(time.Second)
		var ext struct {
			Success bool `json:"success"`
			Renewed int  `json:"renewed"`
		}
		if code := a.call(http.MethodPost, "/api/v1/lease/"+p.LeaseID+"/extend", map[string]any{"seconds": 2}, &ext); code != http.StatusOK || !ext.Success {
			pass = false
			t.Errorf("extend %d: %d %+v", i, code, ext)
		}
		if again := a.pop("f15?batch=1&consumerGroup=g"); again != nil {
			pass = false
			t.Errorf("redelivered while extended (after %d s)", i+1)
		}
	}
	time.Sleep(3 * time.Second) // no extension: the lease expires
	var late struct {
		Success bool `json:"success"`
		Renewed int  `json:"renewed"`
	}
	if code := a.call(http.MethodPost, "/api/v1/lease/"+p.LeaseID+"/extend", map[string]any{"seconds": 60}, &late); code != http.StatusOK || late.Success || late.Renewed != 0 {
		pass = false
		t.Errorf("late extend: %d %+v, want 200 success:false renewed:0", code, late)
	}
	again := a.pop("f15?batch=1&consumerGroup=g")
	if again == nil || again.Messages[0].TransactionID != "m0" {
		pass = false
		t.Errorf("after expiry: %+v, want m0 redelivered", again)
	}
	recordTargeted("F15 lease extend, then extend after expiry", 1, 1, 0, pass)
}

// TestFaultF18MaintenanceToggle: push maintenance switched on and off ten times, 3 s
// each, under load: pushes while on are buffered, and order holds through it all.
func TestFaultF18MaintenanceToggle(t *testing.T) {
	fullOnly(t)
	runScenario(t, scenario{name: "F18 maintenance toggled x10", cfg: load.L1("f18", ciRate),
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			a := newAPI(t, f.broker)
			for range 10 {
				for _, on := range []bool{true, false} {
					if code := a.call(http.MethodPost, "/api/v1/system/maintenance", map[string]any{"enabled": on}, nil); code != http.StatusOK {
						t.Fatalf("maintenance %v: status %d", on, code)
					}
					time.Sleep(3 * time.Second)
				}
			}
			return queuedAfter(t, f.load, time.Now())
		}})
}

// TestFaultF21SpoolOwnedOnce: a second broker started on a running broker's spool
// directory refuses to start, with a message that says why.
func TestFaultF21SpoolOwnedOnce(t *testing.T) {
	fullOnly(t)
	db := pg.newDatabase(t)
	a := startBroker(t, db, nil)
	env := maps.Clone(a.env)
	env["PORT"] = "0"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // refusing takes a moment; serving would not end
	defer cancel()
	out, err := newBrokerCmd(ctx, env).CombinedOutput()
	pass := err != nil && strings.Contains(strings.ToLower(string(out)), "lock")
	if !pass {
		t.Errorf("a second broker on the same spool: err %v, output:\n%s", err, out)
	}
	recordTargeted("F21 a second broker on a live spool refuses to start", 0, 0, 0, pass)
}

// TestFaultF20ColdPartitionStorm: 4,000 new partitions in 60 s while the fault load
// runs. Commits per second never stay below half the rate before the storm for more
// than 5 s, and no backend waits on another transaction's lock (Lock:transactionid, the
// livelock of mass first contact) for 5 s or more.
func TestFaultF20ColdPartitionStorm(t *testing.T) {
	fullOnly(t)
	runScenario(t, scenario{name: "F20 cold partition storm (4,000 in 60 s)", cfg: load.L1("f20", ciRate),
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			commits := func() int64 {
				return queryInt(t, f.db, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
			}
			c0, t0 := commits(), time.Now()
			time.Sleep(10 * time.Second)
			baseline := float64(commits()-c0) / time.Since(t0).Seconds()

			a := newAPI(t, f.broker)
			stormDone := make(chan struct{})
			go func() {
				defer close(stormDone)
				began := time.Now()
				for i := range 4000 {
					if wait := time.Until(began.Add(time.Duration(i) * 15 * time.Millisecond)); wait > 0 {
						time.Sleep(wait)
					}
					a.push(item("f20-cold", fmt.Sprintf("cold-%04d", i), fmt.Sprintf("c%04d", i)))
				}
			}()
			var low time.Duration // how long commits/s has been below half the baseline
			prevC, prevT := commits(), time.Now()
			for storming := true; storming; {
				select {
				case <-stormDone:
					storming = false
				case <-time.After(500 * time.Millisecond):
				}
				c, now := commits(), time.Now()
				rate := float64(c-prevC) / now.Sub(prevT).Seconds()
				if rate < baseline/2 {
					low += now.Sub(prevT)
				} else {
					low = 0
				}
				if low > 5*time.Second {
					t.Errorf("commits at %.0f/s for over 5 s during the storm, baseline %.0f/s", rate, baseline)
					low = 0
				}
				prevC, prevT = c, now
				if n := queryInt(t, f.db, `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'transactionid'
					  AND now() - state_change > interval '5 seconds'`); n > 0 {
					t.Errorf("%d backends waiting on Lock:transactionid for 5 s or more", n)
				}
			}
			return 0
		}})
}

// TestFaultF8LongTransaction: a session holds its snapshot (BEGIN; SELECT
// txid_current(); then idle) while the load runs, so vacuum cannot remove what the
// broker's updates leave behind. Informational, as docs/reliability.md's row: nothing may fail,
// the row reports how pop-to-ack latency and the hot tables' dead tuples moved, and the
// broker's queen_pg_oldest_xact_age_seconds must show the transaction.
func TestFaultF8LongTransaction(t *testing.T) {
	fullOnly(t)
	hold := 2 * time.Minute // docs/reliability.md: 10 min; 2 keep the matrix within half an hour
	runScenario(t, scenario{name: "F8 transaction holding xmin (2 min, informational)", cfg: load.L1("f8", ciRate),
		warm: 30 * time.Second, after: 10 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			dead := func() int64 {
				return queryInt(t, f.db, `SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables
					WHERE schemaname = 'queen' AND relname IN ('log_partitions', 'log_consumers')`)
			}
			p99 := func(from int) (time.Duration, int) {
				s, n := f.load.AckSamplesFrom(from)
				ds := make([]time.Duration, len(s))
				for i, a := range s {
					ds[i] = a.Took
				}
				return percentile(ds, 0.99), n
			}
			_, mark := f.load.AckSamplesFrom(0)
			time.Sleep(10 * time.Second)
			before, mark := p99(mark)
			dead0 := dead()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			held := make(chan error, 1)
			go func() { held <- holdSnapshot(ctx, f.db, hold) }()
			// Halfway, the broker's gauge must show the transaction (docs/reliability.md's row asks
			// for one): about hold/2 old, at least a quarter of hold.
			time.Sleep(hold / 2)
			age, err := f.broker.metric(context.Background(), "queen_pg_oldest_xact_age_seconds")
			if err != nil || age < (hold/4).Seconds() {
				t.Errorf("queen_pg_oldest_xact_age_seconds %.1f (%v) %v into the hold, want at least %v", age, err, hold/2, hold/4)
			}
			time.Sleep(hold - hold/2)
			during, _ := p99(mark)
			dead1 := dead()
			if err := <-held; err != nil {
				t.Error(err)
			}
			t.Logf("F8: pop-to-ack p99 %v before, %v while the snapshot was held; dead tuples of log_partitions and log_consumers %d -> %d; queen_pg_oldest_xact_age_seconds %.0f halfway",
				before.Round(time.Millisecond), during.Round(time.Millisecond), dead0, dead1, age)
			return 0
		}})
}

// TestFaultF19Overload: docs/reliability.md's L4. The consumers can take about two thirds of what
// the producers push (each pauses after every batch) for two minutes, then the producers
// stop: no push fails, the broker's memory stays bounded, and the backlog drains to 0.
func TestFaultF19Overload(t *testing.T) {
	fullOnly(t)
	cfg := load.L1("f19", ciRate)
	// 2 consumers x 100 messages per batch x (1 / 150 ms) = about 1,300 msg/s per group
	// at most, against 2,000 pushed.
	cfg.ConsumeDelay = 150 * time.Millisecond
	runScenario(t, scenario{name: "F19 overload (L4: push 1.5x the drain rate, 2 min)", cfg: cfg,
		warm: 10 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			rss0 := f.broker.rss(t)
			peak := rss0
			for began := time.Now(); time.Since(began) < 2*time.Minute; time.Sleep(5 * time.Second) {
				peak = max(peak, f.broker.rss(t))
			}
			if n := f.load.PushErrors(); n > 0 {
				t.Errorf("%d push calls failed under overload", n)
			}
			if peak > 2*rss0+256<<20 {
				t.Errorf("broker RSS grew from %d to %d MiB under overload", rss0>>20, peak>>20)
			}
			t.Logf("F19: broker RSS %d MiB before, %d MiB at most; backlog %d", rss0>>20, peak>>20,
				f.load.Progress().Accepted-f.load.Progress().SlowestFirst)
			return 0
		}})
}

// TestFaultF21TwoBrokers: producers push through broker A, consumers pop through broker B
// of the same database; A is killed -9 mid-load and restarted. B keeps delivering while
// A is down, and nothing A accepted is lost.
func TestFaultF21TwoBrokers(t *testing.T) {
	fullOnly(t)
	cfg := load.L1("f21", ciRate)
	cfg.ConsumeDelay = 150 * time.Millisecond // a backlog for B to serve while A is down
	runScenario(t, scenario{name: "F21 two brokers, push via A (kill -9), pop via B", cfg: cfg, second: true,
		warm: 30 * time.Second, after: 30 * time.Second, inject: func(t *testing.T, f *faultRun) time.Duration {
			progress := func() int64 { return f.load.Progress().Delivered }
			killed := time.Now()
			f.broker.kill()
			before := progress()
			time.Sleep(3 * time.Second) // A is down: B keeps serving what A committed
			if after := progress(); after <= before {
				t.Errorf("no delivery through B while A was down (%d deliveries before, %d after)", before, after)
			}
			f.broker.restart()
			return recoveredAfter(t, f.load, killed)
		}})
}
