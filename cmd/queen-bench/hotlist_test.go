package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/internal/brokertest"
	"github.com/queen-go/queen/internal/syncbuf"
)

// TestMain stops the throwaway PostgreSQL cluster of the smoke test and fails the run when
// a goroutine is left behind.
func TestMain(m *testing.M) { pgtest.Main(m) }

// startBroker starts a broker in this process on a fresh database, as queen-server does,
// and stops it at the test's cleanup. It returns the broker's URL and its database.
func startBroker(t *testing.T, env map[string]string) (string, string) {
	t.Helper()
	db := pgtest.NewDatabase(t)
	vars := map[string]string{"QUEEN_PG_URL": db, "PORT": "0", "QUEEN_BIND_ADDR": "127.0.0.1",
		"DB_POOL_SIZE": "20", "LOG_LEVEL": "warn", "FILE_BUFFER_DIR": filepath.Join(t.TempDir(), "spool")}
	for k, v := range env {
		vars[k] = v
	}
	srv, err := brokertest.Start(vars, nil, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(time.Minute); err != nil {
			t.Errorf("stop the broker: %v", err)
		}
	})
	return srv.URL, db
}

// postmasterOf returns the pid of the postmaster serving db: the parent of a backend.
func postmasterOf(t *testing.T, db string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", backend))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])) // state, ppid, ...
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// summaryOf returns the JSON line of a mode's output.
func summaryOf(t *testing.T, out string) map[string]any {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, `{"mode":`) {
			var s map[string]any
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("no JSON line in:\n%s", out)
	return nil
}

// TestHotlistModesAgainstABroker runs the hot-list benchmark's steps, scaled down, against
// a real broker: prefill, consume to a count, idle with every reading, rss with a short
// sweep, and the report of their JSON lines.
func TestHotlistModesAgainstABroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker on a PostgreSQL cluster")
	}
	url, db := startBroker(t, map[string]string{"QUEEN_HOTLIST_IDLE_SWEEP_MS": "300"})
	pm := postmasterOf(t, db)
	var results bytes.Buffer
	steps := []struct {
		name  string
		args  []string
		extra []string // figures the JSON line must carry
	}{
		{"prefill", []string{"prefill", "-queue", "smoke", "-partitions", "300", "-messages", "600", "-batch", "200"}, nil},
		{"consume", []string{"consume", "-queue", "smoke", "-count", "600", "-consumers", "4", "-partitions", "10",
			"-timeout", "200", "-duration", "60s"}, []string{"msgs_per_s_to_count"}},
		{"idle", []string{"idle", "-queue", "smoke", "-consumers", "5", "-timeout", "500", "-warmup", "200ms", "-duration", "1s",
			"-pg-pid", strconv.Itoa(pm), "-pg-url", db, "-broker-pid", strconv.Itoa(os.Getpid())},
			[]string{"sql_calls_per_s", "pg_xacts_per_s", "broker_cpu_s_per_min", "pg_cpu_s_per_min"}},
		{"rss", []string{"rss", "-queue", "smoke-rss", "-partitions", "200", "-push-batch", "100", "-consumers", "2",
			"-batch", "100", "-pop-partitions", "100", "-sweep-wait", "1s", "-gc-wait", "0", "-broker-pid", strconv.Itoa(os.Getpid())},
			[]string{"rss_base_mb", "rss_seeded_mb", "rss_drained_mb", "rss_swept_mb", "swept_after_s", "hotlist_ready_stale_max"}},
	}
	for _, st := range steps {
		var out, errb syncbuf.Buffer
		args := append(st.args, "-url", url)
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", st.name, code, out.String(), errb.String())
		}
		s := summaryOf(t, out.String())
		extra, _ := s["extra"].(map[string]any)
		for _, k := range st.extra {
			if _, ok := extra[k]; !ok {
				t.Errorf("%s: no %s in %v", st.name, k, extra)
			}
		}
		if errs := s["totals"].(map[string]any)["errors"]; errs != 0.0 {
			t.Errorf("%s: %v errors\n%s", st.name, errs, out.String())
		}
		line, _ := json.Marshal(s)
		fmt.Fprintf(&results, `{"scenario":"smoke","step":%q,"round":1,"hotlist":1,"summary":%s}`+"\n", st.name, line)
	}
	file := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(file, results.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"report", "-file", file}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "| smoke (idle) | SQL calls/s (pg_stat_database) | 1 |") {
		t.Fatalf("report: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
