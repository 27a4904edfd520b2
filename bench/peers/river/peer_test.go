package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/bench/load"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRun runs the peer twice on one throwaway database, as bench-latency.sh's rounds
// do: every inserted job is worked, the latency histogram holds exactly the jobs
// scheduled after the warm-up, the summary line comes last on stdout, and the second run
// starts on an empty river_job (its table holds its own jobs only).
func TestRun(t *testing.T) {
	db := pgtest.NewDatabase(t)
	pm := pgtest.PostmasterPID()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"first run migrates", nil},
		{"second run migrates again and starts empty", []string{"-producers", "8", "-workers", "4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-dsn", db, "-rate", "200", "-duration", "2s", "-warmup", "500ms"}
			if pm > 0 {
				args = append(args, "-pg-pid", strconv.Itoa(pm))
			}
			var stdout, stderr bytes.Buffer
			if code := runMain(append(args, tc.args...), &stdout, &stderr); code != 0 {
				t.Fatalf("peer-river exited %d: %s\n%s", code, stderr.String(), stdout.String())
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, `{"mode":"river-latency"`) {
				t.Fatalf("last line of stdout is not the summary: %q", last)
			}
			var s load.Summary
			if err := json.Unmarshal([]byte(last), &s); err != nil {
				t.Fatalf("summary line: %v", err)
			}
			ins, worked := s.Totals["inserted"], s.Totals["worked"]
			// 2 s at 200/s: about 400 jobs; the pacer may lag on a loaded machine.
			if ins < 200 || worked != ins || s.Totals["errors"] != 0 {
				t.Errorf("inserted %d, worked %d, errors %d: want every one of at least 200 worked, no error",
					ins, worked, s.Totals["errors"])
			}
			measured, _ := s.Extra["measured"].(float64)
			count, _ := s.Extra["latency_count"].(float64)
			if measured == 0 || measured >= float64(ins) || count != measured {
				t.Errorf("measured %v of %d inserted, latency_count %v: want the jobs after the warm-up, each counted once",
					measured, ins, count)
			}
			if s.P50ms <= 0 || s.P999ms < s.P99ms || s.MaxMs < s.P999ms {
				t.Errorf("latency p50 %v, p99 %v, p999 %v, max %v ms: want positive and ordered", s.P50ms, s.P99ms, s.P999ms, s.MaxMs)
			}
			if _, ok := s.Extra["bench_us_per_msg"]; !ok {
				t.Errorf("no bench_us_per_msg in %v", s.Extra)
			}
			if _, ok := s.Extra["pg_us_per_msg"]; pm > 0 && !ok {
				t.Errorf("no pg_us_per_msg with -pg-pid %d in %v", pm, s.Extra)
			}
			if rows := jobRows(t, db); rows != ins {
				t.Errorf("river_job holds %d jobs after a run that inserted %d", rows, ins)
			}
		})
	}
}

// TestFlags: bad flags exit 2 before touching a database.
func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"-dsn", "postgres://127.0.0.1:1/x", "-rate", "0"},
		{"-dsn", "postgres://127.0.0.1:1/x", "-workers", "0"},
		{"-no-such-flag"},
	} {
		var out, errs bytes.Buffer
		if code := runMain(args, &out, &errs); code != 2 {
			t.Errorf("runMain(%q) = %d, want 2 (stderr %q)", args, code, errs.String())
		}
	}
}

// jobRows counts river_job's rows, whatever their state.
func jobRows(t *testing.T, db string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM river_job").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
