package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/queen-go/queen/bench/verify"
)

// writeRun writes a one-stage run directory whose log holds lines.
func writeRun(t *testing.T, lines string) string {
	t.Helper()
	dir := t.TempDir()
	if err := verify.WriteProduced(filepath.Join(dir, verify.ProducedFile),
		map[string]verify.Produced{"A.e0": {Max: 3}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "q_g.log"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args func(t *testing.T) []string
		code int
		out  string
	}{
		{"no mode", func(*testing.T) []string { return nil }, 2, "usage"},
		{"help", func(*testing.T) []string { return []string{"-h"} }, 0, "usage"},
		{"unknown mode", func(*testing.T) []string { return []string{"bogus"} }, 2, "unknown mode"},
		{"bad flag", func(*testing.T) []string { return []string{"push", "-conns", "x"} }, 2, "invalid value"},
		{"verify without dir", func(*testing.T) []string { return []string{"verify"} }, 2, "-dir is required"},
		{"verify pass", func(t *testing.T) []string {
			return []string{"verify", "-dir", writeRun(t, "A.e0 0\nA.e0 1\nA.e0 1\nA.e0 2\n")}
		}, 0, "VERDICT: PASS"},
		{"verify gap fails", func(t *testing.T) []string {
			return []string{"verify", "-dir", writeRun(t, "A.e0 0\nA.e0 2\n")}
		}, 1, "VERDICT: FAIL"},
		{"verify order violation fails", func(t *testing.T) []string {
			return []string{"verify", "-dir", writeRun(t, "A.e0 1\nA.e0 0\n")}
		}, 1, "VERDICT: FAIL"},
		{"order violation with ack errors passes", func(t *testing.T) []string {
			return []string{"verify", "-ack-errors", "1", "-dir", writeRun(t, "A.e0 1\nA.e0 0\n")}
		}, 0, "VERDICT: PASS"},
		{"unreachable broker", func(*testing.T) []string {
			return []string{"push", "-url", "http://127.0.0.1:1", "-ready-timeout", "1ms"}
		}, 2, "not ready"},
		{"report without file", func(*testing.T) []string { return []string{"report"} }, 2, "-file is required"},
		{"report of a missing file", func(t *testing.T) []string {
			return []string{"report", "-file", filepath.Join(t.TempDir(), "none.jsonl")}
		}, 2, "no such file"},
		{"report of a bad line", func(t *testing.T) []string {
			f := filepath.Join(t.TempDir(), "r.jsonl")
			if err := os.WriteFile(f, []byte("{oops\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"report", "-file", f}
		}, 2, "line 1"},
		{"report", func(t *testing.T) []string {
			f := filepath.Join(t.TempDir(), "r.jsonl")
			line := `{"scenario":"idle","step":"idle","round":1,"hotlist":0,"summary":{"mode":"idle","extra":{"pg_cpu_s_per_min":30}}}`
			if err := os.WriteFile(f, []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"report", "-file", f}
		}, 0, "| idle | PostgreSQL CPU s/min | 1 | - | 30.0 | - |"},
		{"idle refuses a pid that is no postmaster", func(*testing.T) []string {
			return []string{"idle", "-url", "http://127.0.0.1:1", "-pg-pid", strconv.Itoa(os.Getpid())}
		}, 2, "not a PostgreSQL postmaster"},
		{"floor serves until its duration ends", func(*testing.T) []string {
			return []string{"floor", "-addr", "127.0.0.1:0", "-duration", "100ms"}
		}, 0, "floor: 0 push requests"},
		{"floor bad address", func(*testing.T) []string {
			return []string{"floor", "-addr", "256.0.0.1:0"}
		}, 2, "floor"},
		{"rtt serves until its duration ends", func(*testing.T) []string {
			return []string{"rtt", "-serve", "127.0.0.1:0", "-duration", "100ms"}
		}, 0, "rtt: serving 127.0.0.1:"},
		{"rtt needs a role", func(*testing.T) []string { return []string{"rtt"} }, 2, "either -serve"},
		{"rtt with nobody listening", func(*testing.T) []string {
			return []string{"rtt", "-addr", "127.0.0.1:1", "-n", "10"}
		}, 2, "rtt:"},
		{"soak shorter than its warm-up", func(t *testing.T) []string {
			return []string{"soak", "-url", "http://127.0.0.1:1", "-duration", "1m", "-warmup", "5m",
				"-csv", filepath.Join(t.TempDir(), "soak.csv")}
		}, 2, "must hold the warm-up"},
		{"soak help names its flags", func(*testing.T) []string { return []string{"soak", "-h"} }, 0, "-backlog-slope"},
		{"prefill bad batch", func(*testing.T) []string {
			return []string{"prefill", "-url", "http://127.0.0.1:1", "-batch", "0"}
		}, 2, "batch 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			code := run(tt.args(t), &out, &errb)
			all := out.String() + errb.String()
			if code != tt.code || !strings.Contains(all, tt.out) {
				t.Fatalf("exit %d (want %d), output:\n%s", code, tt.code, all)
			}
		})
	}
}
