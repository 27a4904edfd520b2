package main

import (
	"os"
	"strconv"
	"testing"

	"github.com/queen-go/queen/internal/syncbuf"
)

// TestLatencyModeAgainstABroker runs the latency mode, scaled down, against a real
// broker: every message is consumed, and the summary carries the percentiles to p999,
// the CPU per message, the run's WAL flushes and the broker's stage breakdown, with
// every stage of both paths counted.
func TestLatencyModeAgainstABroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker on a PostgreSQL cluster")
	}
	url, db := startBroker(t, nil)
	pm := postmasterOf(t, db)
	var out, errb syncbuf.Buffer
	args := []string{"latency", "-url", url, "-queue", "lat-smoke", "-rate", "100", "-duration", "3s", "-warmup", "500ms",
		"-partitions", "10", "-consumers", "4", "-producers", "4", "-timeout", "500", "-progress", "off",
		"-pg-url", db, "-pg-pid", strconv.Itoa(pm), "-broker-pid", strconv.Itoa(os.Getpid())}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	s := summaryOf(t, out.String())
	totals, _ := s["totals"].(map[string]any)
	if pushed, consumed := totals["pushed"], totals["consumed"]; pushed == nil || pushed != consumed || pushed.(float64) < 250 {
		t.Fatalf("pushed %v, consumed %v: want about 300, all consumed", pushed, consumed)
	}
	if _, ok := s["p999_ms"]; !ok {
		t.Errorf("no p999_ms in %v", s)
	}
	extra, _ := s["extra"].(map[string]any)
	for _, k := range []string{"pg_us_per_msg", "broker_us_per_msg", "wal_syncs", "push_p999_ms"} {
		if _, ok := extra[k]; !ok {
			t.Errorf("no %s in %v", k, extra)
		}
	}
	for family, want := range map[string][]string{
		"push_stages": {"read", "wait", "commit", "route", "answer"},
		"pop_stages":  {"ready", "claim", "answer"},
	} {
		list, _ := extra[family].([]any)
		if len(list) != len(want) {
			t.Fatalf("%s: %v, want the stages %v", family, list, want)
		}
		for i, f := range list {
			st, _ := f.(map[string]any)
			if st["stage"] != want[i] {
				t.Errorf("%s[%d] is %v, want %s", family, i, st["stage"], want[i])
			}
			if n, _ := st["n"].(float64); n <= 0 {
				t.Errorf("%s %s counted nothing: %v", family, want[i], st)
			}
		}
	}
}
