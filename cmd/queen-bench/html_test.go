package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/syncbuf"
)

// wellFormed fails the test unless page parses as XML (the report writes XHTML-style
// markup, so a strict parser finds any tag left open) without an <img> or <script>.
func wellFormed(t *testing.T, page string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = true
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("report not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && (se.Name.Local == "img" || se.Name.Local == "script") {
			t.Fatalf("report holds <%s>", se.Name.Local)
		}
	}
}

func readPage(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, string(b))
	return string(b)
}

// A saved pipeline run: its printed output, summary and verifier lines included.
const savedPipeline = `pipeline: run directory /tmp/x, queues cm-1-*
[pipeline   1s] events=500/s
== pipeline: 65.0 s
{"mode":"pipeline","seconds":65,"totals":{"events":30000,"ackErr":0},"rates":{"events":461.5},"p50_ms":12,"p90_ms":20,"p99_ms":45,"p100_ms":90,"extra":{"pass":false,"msg_ops_per_s":5000}}
stage(queue_group)               msgs
VERDICT: FAIL  (3 gaps below frontier, 0 order-violations, 0 dups, 0 in-flight at cutoff)
{"stages":[{"stage":"cm-avail_cm-db","msgs":10,"unique":10,"dups":0,"gaps":3,"viols":0,"inflight":0,"unproduced":0,"pass":false}],"total":{"msgs":10,"unique":10,"dups":0,"gaps":3,"viols":0,"inflight":0,"unproduced":0},"ack_errors":0,"pass":false}
`

// Two lines of scripts/bench-hotlist.sh's results, one with a hostile scenario name.
const savedResults = `{"scenario":"idle","step":"idle","round":1,"hotlist":0,"summary":{"mode":"idle","seconds":60,"totals":{"pops":40},"rates":{"pops":0.7},"p50_ms":0,"p90_ms":0,"p99_ms":0,"p100_ms":0,"extra":{"pg_cpu_s_per_min":30}}}
{"scenario":"idle","step":"idle","round":1,"hotlist":1,"summary":{"mode":"idle","seconds":60,"totals":{"pops":40},"rates":{"pops":0.7},"p50_ms":0,"p90_ms":0,"p99_ms":0,"p100_ms":0,"extra":{"pg_cpu_s_per_min":15}}}
{"scenario":"</script><img src=x onerror=alert(1)>","step":"s","round":1,"hotlist":1,"summary":{"mode":"push","seconds":1,"totals":{"msgs":1},"rates":{"msgs":1},"p50_ms":0,"p90_ms":0,"p99_ms":0,"p100_ms":0}}
`

func TestReportModeWritesHTMLFromSavedResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		content  string
		code     int
		out      string   // in stdout + stderr
		page     []string // in the HTML page
		noPage   bool
		notInOut string
	}{
		{"hot-list results", savedResults, 0, "| idle | PostgreSQL CPU s/min | 1 | 15.0 | 30.0 | 0.50 |", []string{
			"idle, round 1, hot-list on", "idle, round 1, hot-list off", "time series is not available",
			"Hot-list on and off, side by side", "pg_cpu_s_per_min", "&lt;/script&gt;&lt;img",
		}, false, ""},
		{"a pipeline run's saved output", savedPipeline, 0, "report: 1 runs written", []string{
			"pipeline (line 4)", "badge fail", "VERDICT: FAIL", "lost (gaps below the frontier)", "cm-avail_cm-db",
			"5 other lines of the file", "msg_ops_per_s",
		}, false, "| scenario |"},
		{"no run in the file", "just text\n", 2, "no JSON summary or result line", nil, true, ""},
		{"a broken JSON line", "text\n{oops\n", 2, "line 2", nil, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			in, html := filepath.Join(dir, "results.jsonl"), filepath.Join(dir, "out.html")
			if err := os.WriteFile(in, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run([]string{"report", "-file", in, "-report", html}, &out, &errb)
			all := out.String() + errb.String()
			if code != tt.code || !strings.Contains(all, tt.out) || tt.notInOut != "" && strings.Contains(all, tt.notInOut) {
				t.Fatalf("exit %d (want %d), output:\n%s", code, tt.code, all)
			}
			if tt.noPage {
				if _, err := os.Stat(html); err == nil {
					t.Fatal("a page was written for a failed report")
				}
				return
			}
			page := readPage(t, html)
			for _, w := range tt.page {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

// fakeBroker answers every push after a short pause (which keeps a test's load small):
// with code 201 as queued, else with that status; and nothing else.
func fakeBroker(t *testing.T, code int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/api/v1/push" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(5 * time.Millisecond)
		if code != http.StatusCreated {
			http.Error(w, "boom", code)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`[{"status":"queued"}]`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestLoadModeWritesHTMLAndLiveLine runs push end to end against a fake broker: the
// summary and JSON line as before, the live line only when asked for, and the report.
func TestLoadModeWritesHTMLAndLiveLine(t *testing.T) {
	t.Parallel()
	url := fakeBroker(t, http.StatusCreated)
	tests := []struct {
		name     string
		progress string
		live     bool
	}{
		{"progress on", "on", true},
		{"progress auto, not a terminal", "auto", false},
		{"progress off", "off", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			html := filepath.Join(t.TempDir(), "push.html")
			var out, errb syncbuf.Buffer
			code := run([]string{"push", "-url", url, "-conns", "1", "-partitions", "3", "-duration", "1200ms",
				"-progress", tt.progress, "-report", html}, &out, &errb)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
			}
			s := summaryOf(t, out.String())
			if s["mode"] != "push" || strings.Contains(out.String(), "\r") {
				t.Fatalf("stdout changed: %q", out.String())
			}
			stderr := errb.String()
			if got := strings.Contains(stderr, "\rpush 0s  msgs "); got != tt.live {
				t.Fatalf("live line drawn %v, want %v: %q", got, tt.live, stderr)
			}
			if tt.live && !strings.Contains(stderr, " \r") {
				t.Fatalf("live line not erased: %q", stderr)
			}
			if !strings.Contains(stderr, "report written to "+html) {
				t.Fatalf("stderr %q", stderr)
			}
			page := readPage(t, html)
			for _, w := range []string{"queen-bench push", url, "Throughput per interval", "<polyline", "Latency per interval",
				"Latency distribution", `<tr class="set"><td>-conns</td><td>1</td>`, "queen-bench (bench_us_per_msg)", "GOMAXPROCS",
				"push request round trip", `{&#34;mode&#34;:&#34;push&#34;`} {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

func TestReportFlagsOfOtherModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args func(t *testing.T, html string) []string
		code int
		out  string
		page []string // nil: no page expected
	}{
		{"bad -progress", func(_ *testing.T, html string) []string {
			return []string{"push", "-progress", "sometimes", "-report", html}
		}, 2, "not auto, on or off", nil},
		{"verify writes its verdict", func(t *testing.T, html string) []string {
			return []string{"verify", "-dir", writeRun(t, "A.e0 0\nA.e0 1\nA.e0 2\n"), "-report", html}
		}, 0, "VERDICT: PASS", []string{"badge pass", "Verifier", "order violations"}},
		{"a run that failed before measuring", func(_ *testing.T, html string) []string {
			return []string{"prefill", "-url", "http://127.0.0.1:1", "-batch", "0", "-report", html}
		}, 2, "report written", []string{"badge fail\">ERROR", "prefill: partitions", "ended before it measured anything"}},
		{"broker errors are counted and charted", func(t *testing.T, html string) []string {
			return []string{"push", "-url", fakeBroker(t, http.StatusInternalServerError), "-duration", "300ms", "-conns", "1",
				"-report", html}
		}, 0, "status 500: boom", []string{"Errors per interval", `<tr class="err"><td>errors</td>`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			html := filepath.Join(t.TempDir(), "r.html")
			var out, errb syncbuf.Buffer
			code := run(tt.args(t, html), &out, &errb)
			all := out.String() + errb.String()
			if code != tt.code || !strings.Contains(all, tt.out) {
				t.Fatalf("exit %d (want %d), output:\n%s", code, tt.code, all)
			}
			if tt.page == nil {
				return
			}
			page := readPage(t, html)
			for _, w := range tt.page {
				if !strings.Contains(page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

func TestFlagsAndCommandLineAreRedacted(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	pg := fs.String("pg-url", "", "database")
	fs.Int("conns", 64, "connections")
	args := []string{"-pg-url", "postgres://queen:s3cret@db/queen", "-conns", "4"}
	if err := fs.Parse(args); err != nil || *pg == "" {
		t.Fatal(err)
	}
	flags := flagsOf(fs)
	if len(flags) != 2 {
		t.Fatalf("flags %+v", flags)
	}
	for _, f := range flags {
		if strings.Contains(f.Value, "s3cret") || !f.Set {
			t.Errorf("flag %+v", f)
		}
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"plain", []string{"-conns", "4"}, "queen-bench push -conns 4"},
		{"quoted", []string{"-queue", "a b", "-x", ""}, `queen-bench push -queue "a b" -x ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := commandLine("push", tt.args); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
