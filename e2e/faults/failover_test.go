package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// The failover scenarios (docs/reliability.md, "Failover"): the fault load through two
// brokers (producers on one, consumers on the other) on a Patroni cluster of three nodes,
// the database's primary replaced under it. Only the planned switchover runs in make
// test; make faults runs them all.

// failoverScenario runs the fault load on a fresh cluster in mode with inject as the
// fault; measure records the verifier's findings without judging them.
func failoverScenario(t *testing.T, name, mode string, measure bool, inject func(t *testing.T, h *haCluster, f *faultRun) time.Duration) {
	h := startHA(t, mode)
	db := h.newDatabase(t, fmt.Sprintf("failover_%d", time.Now().UnixNano()))
	env := map[string]string{
		// A commit acknowledged while no synchronous standby is attached could be lost by
		// a failover: spool instead (docs/api.md).
		"QUEEN_REQUIRE_SYNC_REPLICATION": strconv.FormatBool(mode == "sync"),
	}
	var brokers []*brokerProc
	runScenario(t, scenario{name: name, cfg: load.L1("ha", ciRate), env: env, db: db, second: true,
		warm: sized(5*time.Second, 20*time.Second), after: sized(5*time.Second, 20*time.Second),
		measure: measure, failover: true,
		inject: func(t *testing.T, f *faultRun) time.Duration {
			brokers = []*brokerProc{f.broker, f.other}
			want := 0.0
			if mode == "sync" {
				want = 1
			}
			for _, b := range brokers {
				if v, err := b.metric(context.Background(), "queen_pg_sync_replication"); err != nil || v != want {
					t.Errorf("queen_pg_sync_replication at %s: %v (%v), want %v", b.URL, v, err, want)
				}
			}
			recovered := inject(t, h, f)
			resumes(t, f.other)
			return recovered
		}})
	for _, b := range brokers {
		if bad := serverErrors(t, b); len(bad) > 0 {
			t.Errorf("the broker at %s answered server errors other than 503 during the failover: %v", b.URL, bad)
		}
	}
}

// resumes checks that the consumers' broker works on the new primary in the background
// too: its LISTEN connection died with the old primary, and the commit hints it receives
// from the producers' broker (which wake its long polls at once) grow again; its
// hot-list's reseeds, which failed while no primary answered, succeed again.
func resumes(t *testing.T, b *brokerProc) {
	t.Helper()
	for _, name := range []string{`queen_peer_hints_total{direction="received"}`, "queen_hotlist_reseeds_total"} {
		before, err := b.metric(context.Background(), name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		grew := false
		for deadline := time.Now().Add(time.Minute); !grew && time.Now().Before(deadline); {
			now, err := b.metric(context.Background(), name)
			grew = err == nil && now > before
			if !grew {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !grew {
			t.Errorf("%s of the consumers' broker still %v a minute after the failover: it did not resume", name, before)
		}
	}
}

// queuedAgain waits (bounded) for the first push begun after since, the moment a new
// primary was seen to lead, that was answered queued, and returns when it was answered,
// counted from since. It fails the test when pushes never commit again.
func queuedAgain(t *testing.T, r *load.FaultRun, since time.Time) time.Duration {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		for _, s := range r.PushSamples(since, time.Now().Add(time.Hour)) {
			if s.OK && !s.Buffered {
				return s.At.Add(s.Took).Sub(since)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("no push answered queued within 2 minutes after %v", since.Format(time.TimeOnly))
	return 2 * time.Minute
}

// TestFailoverSwitchover: a planned switchover (patronictl switchover) under load, in
// synchronous mode. Pushes spool while no primary takes writes and replay on the new one.
func TestFailoverSwitchover(t *testing.T) {
	failoverScenario(t, "switchover (patronictl), sync", "sync", false, func(t *testing.T, h *haCluster, f *faultRun) time.Duration {
		began := time.Now()
		to := h.switchover(t)
		led := time.Now()
		t.Logf("switchover to %s took %v", to.Name, led.Sub(began).Round(time.Millisecond))
		return queuedAgain(t, f.load, led)
	})
}

// TestFailoverPrimaryKilled: the primary's PostgreSQL SIGKILLed, Patroni promotes the
// synchronous standby.
func TestFailoverPrimaryKilled(t *testing.T) {
	fullOnly(t)
	failoverScenario(t, "primary PostgreSQL kill -9, sync", "sync", false, killPrimary)
}

// killPrimary is the fault of the kill -9 scenarios: the primary's postmaster killed,
// then the wait for another leader and for queued answers.
func killPrimary(t *testing.T, h *haCluster, f *faultRun) time.Duration {
	began := time.Now()
	old := h.killPrimary(t)
	to := h.waitRole(t, "leader", old.Name, 2*time.Minute)
	led := time.Now()
	t.Logf("failover from %s to %s took %v", old.Name, to.Name, led.Sub(began).Round(time.Millisecond))
	return queuedAgain(t, f.load, led)
}

// TestFailoverPartition: the primary's node cut off the brokers, its standbys and etcd
// (bytes held, nothing refused): Patroni demotes it when its leader lease runs out and
// promotes the synchronous standby; the node rejoins after the partition heals.
func TestFailoverPartition(t *testing.T) {
	fullOnly(t)
	failoverScenario(t, "primary partitioned from brokers, standbys and etcd, sync", "sync", false, func(t *testing.T, h *haCluster, f *faultRun) time.Duration {
		old := h.waitRole(t, "leader", "", time.Minute)
		began := time.Now()
		h.partition(old)
		defer h.heal(old)
		to := h.waitRole(t, "leader", old.Name, 2*time.Minute)
		led := time.Now()
		t.Logf("partition of %s: %s leads after %v", old.Name, to.Name, led.Sub(began).Round(time.Millisecond))
		return queuedAgain(t, f.load, led)
	})
}

// TestFailoverBrokerKilled: the producers' broker SIGKILLed during a failover (the
// primary's PostgreSQL killed) and restarted once the new primary leads: what it spooled
// before it died replays after the restart.
func TestFailoverBrokerKilled(t *testing.T) {
	fullOnly(t)
	failoverScenario(t, "primary kill -9 + broker kill -9 during the failover, sync", "sync", false, func(t *testing.T, h *haCluster, f *faultRun) time.Duration {
		old := h.killPrimary(t)
		time.Sleep(time.Second) // the broker spools meanwhile
		f.broker.kill()
		h.waitRole(t, "leader", old.Name, 2*time.Minute)
		f.broker.restart()
		return queuedAgain(t, f.load, time.Now())
	})
}

// TestFailoverAsyncLoss: TestFailoverPrimaryKilled with asynchronous replication. The
// acknowledged messages the new primary never received are counted, to document the
// window (docs/reliability.md), not judged.
func TestFailoverAsyncLoss(t *testing.T) {
	fullOnly(t)
	failoverScenario(t, "primary PostgreSQL kill -9, async", "async", true, killPrimary)
}

// serverErrors returns the broker's 5xx answers other than 503 (route and code: count),
// from queen_http_requests_total.
func serverErrors(t *testing.T, b *brokerProc) map[string]float64 {
	t.Helper()
	body, err := b.metrics(context.Background())
	if err != nil {
		t.Errorf("metrics of %s: %v", b.URL, err)
		return nil
	}
	bad := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		labels, ok := strings.CutPrefix(line, "queen_http_requests_total{")
		if !ok || !strings.Contains(labels, `code="5`) || strings.Contains(labels, `code="503"`) {
			continue
		}
		key, value, _ := strings.Cut(labels, "} ")
		n, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if n > 0 {
			bad[key] = n
		}
	}
	return bad
}
