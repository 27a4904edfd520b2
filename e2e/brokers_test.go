package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/bench/load"
)

// TestPeerHintsWakeLongPollsOnOtherBrokers: two brokers on one database, a long poll
// parked on one, a push on the other. With the peers' hints (QUEEN_PEER_HINTS, the
// default) the push wakes the parked pop at once; without them the pop's own re-check
// (4 s here) finds the message, or, for the wildcard pop, a reseed of its cold ring. The
// hint path bounds the latency.
func TestPeerHintsWakeLongPollsOnOtherBrokers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		hints string
		// recheck: the answer comes no sooner than this after the long polls were sent
		// (their re-check, 4 s after they parked; 0: not bounded); max: at the latest
		// this long after the push.
		recheck, max time.Duration
	}{
		{"with hints the push wakes the other broker's pop", "true", 0, time.Second},
		{"without hints only the re-check finds it", "false", 4*time.Second - 50*time.Millisecond, 6 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The reseed floor (every 5 s by default, at a random phase) also wakes a
			// parked wildcard pop once it reads the pushed partition: pushed back to a
			// minute. A cold ring's reseed (the long poll's arrival asks for one, at most
			// one a second) still may: see reseeded below.
			env := map[string]string{"POP_WAIT_INITIAL_INTERVAL_MS": "4000", "POP_WAIT_MAX_INTERVAL_MS": "4000",
				"QUEEN_PEER_HINTS": tt.hints, "QUEEN_HOTLIST_RESEED_MS": "60000"}
			producer := startBroker(t, env)
			consumer := startBrokerOn(t, producer.DB, env)
			for _, path := range []string{"/api/v1/pop/queue/hinted", "/api/v1/pop/queue/hinted/partition/p"} {
				consumer.popEmpty(t, path) // the queue and the group's ring exist before the long polls
			}
			sent := time.Now()
			wild := consumer.startPop(context.Background(), "/api/v1/pop/queue/hinted?wait=true&timeout=10000")
			pinned := consumer.startPop(context.Background(), "/api/v1/pop/queue/hinted/partition/p?wait=true&timeout=10000&consumerGroup=pinned")
			eventually(t, 10*time.Second, "the long polls never parked", func() bool {
				return consumer.metric(t, "queen_pop_parked") == 2
			})
			reseedRows := consumer.metric(t, "queen_hotlist_reseed_rows_total")
			pushed := time.Now()
			producer.pushN(t, "hinted", "p", "h", 1)
			for name, done := range map[string]<-chan popAnswer{"wildcard": wild, "pinned": pinned} {
				var r popAnswer
				select {
				case r = <-done:
				case <-time.After(12 * time.Second):
					t.Fatalf("%s: the parked pop never answered", name)
				}
				if r.err != nil || r.code != http.StatusOK || !strings.Contains(string(r.body), `"transactionId":"h-0"`) {
					t.Fatalf("%s: %d %s %v", name, r.code, r.body, r.err)
				}
				// The bound below is from the long polls' sending, not the push: on a busy
				// machine the push may come seconds after they parked, close to their
				// re-check.
				// A reseed that read partitions after the push may have found the message
				// and woken the wildcard pop: a legitimate wake that is not a hint.
				reseeded := name == "wildcard" && consumer.metric(t, "queen_hotlist_reseed_rows_total") > reseedRows
				if d := r.at.Sub(sent); d < tt.recheck && reseeded {
					t.Logf("%s: answered %v after the long poll was sent: a reseed found the message", name, d)
				} else if d < tt.recheck {
					t.Fatalf("%s: answered %v after the long poll was sent, before its re-check (%v): something else woke it",
						name, d, tt.recheck)
				}
				if d := r.at.Sub(pushed); d > tt.max {
					t.Fatalf("%s: answered %v after the push on the other broker, want at most %v", name, d, tt.max)
				}
			}
		})
	}
}

// TestThreeBrokersSurviveAKill runs the ordered pipeline over three brokers on one
// database: producers push to the first, wildcard consumers pop and ack on the other two,
// and the third (a separate process) is killed mid-run with SIGKILL. Its consumers fail
// over to the second broker; what it had leased is delivered again when the leases
// expire. The verifier must pass: no gap, no order violation on any stage.
func TestThreeBrokersSurviveAKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a 30 s end-to-end run")
	}
	db := pgtest.NewDatabase(t)
	producer := startBrokerOn(t, db, nil)
	consumer := startBrokerOn(t, db, nil)
	child, childURL := startChildBroker(t, db, filepath.Join(t.TempDir(), "spool"))
	out := &testWriter{t: t}
	cfg := load.PipelineConfig{
		Common:       load.Common{URL: producer.URL, Duration: 12 * time.Second, Out: out},
		ConsumerURLs: []string{consumer.URL, childURL},
		Dir:          t.TempDir(),
		Prefix:       "kill",
		Entities:     20, Rate: 60, Ramp: 2 * time.Second, Fanout: 2,
		WorkMin: 10 * time.Millisecond, WorkMax: 30 * time.Millisecond,
		PopBatch: 50, PopParts: 4, Consumers: 2, Producers: 2,
		// The killed broker's leases lapse within the drain: 3 s leases, 12 s of drain.
		Drain: 12 * time.Second, DedupWindow: 300, CompletedRetention: 300, LeaseTime: 3,
	}
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		// Mid-run: after the warm-up and a few seconds of traffic.
		eventually(t, time.Minute, "the pipeline never got going on the broker to kill", func() bool {
			return remoteBroker(t, childURL).metric(t, `queen_hotlist_checkouts_total`) > 0
		})
		time.Sleep(4 * time.Second) // a fixed point in the run, not a wait for a condition
		if err := child.Process.Kill(); err != nil {
			t.Errorf("kill the third broker: %v", err)
		}
	}()
	sum, rep, err := load.RunPipeline(context.Background(), cfg)
	<-killed
	if err != nil {
		t.Fatal(err)
	}
	sum.Print(out)
	t.Log("\n" + rep.Table())
	if !rep.Pass || rep.Total.Gaps != 0 || rep.Total.Violations != 0 {
		t.Fatalf("pipeline verdict after a broker was killed: %s", rep.VerdictLine())
	}
	if sum.Totals["popErr"] == 0 {
		t.Fatal("no consumer noticed the killed broker: the kill came too late to test anything")
	}
}
