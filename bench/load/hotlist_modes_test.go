package load

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseSamples(t *testing.T) {
	t.Parallel()
	body := strings.Join([]string{
		"# HELP queen_hotlist_rings Live (queue, consumer group) rings.",
		"# TYPE queen_hotlist_rings gauge",
		"queen_hotlist_rings 3",
		"",
		`queen_admission_budget{lane="push"} 1`,
		`odd{path="a}b",q="say \"hi\" {x}"} 2.5e+06`,
		"process_cpu_seconds_total 12.34 1700000000000",
		"inf_sample +Inf",
		`unclosed{a="b" 7`,
		"novalue",
		"bad_value abc",
		"  spaced_sample   9  ",
	}, "\n")
	got := ParseSamples([]byte(body))
	want := Samples{
		"queen_hotlist_rings":                 3,
		`queen_admission_budget{lane="push"}`: 1,
		`odd{path="a}b",q="say \"hi\" {x}"}`:  2.5e6,
		"process_cpu_seconds_total":           12.34,
		"inf_sample":                          math.Inf(1),
		"spaced_sample":                       9,
	}
	if len(got) != len(want) {
		t.Errorf("got %d samples %v, want %d", len(got), got, len(want))
	}
	for k, v := range want {
		if g, ok := got.Get(k); !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	tail := " S 100 200 200 0 -1 4194560 500 0 0 0 1234 567 89 10 20 0 1 0 300 1000000 250 18446744073709551615"
	tests := []struct {
		name, line string
		want       procStat
		err        bool
	}{
		{"postgres backend", "4242 (postgres)" + tail, procStat{comm: "postgres", ppid: 100, utime: 1234, stime: 567, cutime: 89, cstime: 10}, false},
		{"name with spaces and parentheses", "7 (a (b) c)" + tail, procStat{comm: "a (b) c", ppid: 100, utime: 1234, stime: 567, cutime: 89, cstime: 10}, false},
		{"no name", "7 postgres S 1", procStat{}, true},
		{"too short", "7 (x) S 1 2 3", procStat{}, true},
		{"not a number", "7 (x) S 1 2 3 4 5 6 7 8 9 10 x 12 13 14 15", procStat{}, true},
	}
	for _, tt := range tests {
		got, err := parseProcStat([]byte(tt.line))
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v (error %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestAuxvValue(t *testing.T) {
	t.Parallel()
	vec := func(word int, pairs ...uint64) []byte {
		var b bytes.Buffer
		for _, p := range pairs {
			if word == 4 {
				_ = binary.Write(&b, binary.NativeEndian, uint32(p))
			} else {
				_ = binary.Write(&b, binary.NativeEndian, p)
			}
		}
		return b.Bytes()
	}
	tests := []struct {
		name string
		b    []byte
		word int
		want uint64
		ok   bool
	}{
		{"64-bit", vec(8, 6, 4096, 17, 250, 0, 0), 8, 250, true},
		{"32-bit", vec(4, 6, 4096, 17, 100, 0, 0), 4, 100, true},
		{"absent", vec(8, 6, 4096, 0, 0), 8, 0, false},
		{"after AT_NULL", vec(8, 0, 0, 17, 100), 8, 0, false},
		{"truncated", vec(8, 6, 4096, 17)[:20], 8, 0, false},
	}
	for _, tt := range tests {
		if got, ok := auxvValue(tt.b, tt.word, 17); got != tt.want || ok != tt.ok {
			t.Errorf("%s: %d %v, want %d %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestProcReadingsOfThisProcess(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("/proc readings are Linux only")
	}
	if _, err := ProcessCPU(os.Getpid()); err != nil {
		t.Errorf("ProcessCPU: %v", err)
	}
	if rss, err := ProcessRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("ProcessRSS: %v, %v", rss, err)
	}
	// The test binary is no postmaster: the reading refuses rather than measure it.
	if _, err := ClusterCPU(os.Getpid()); err == nil || !strings.Contains(err.Error(), "not a PostgreSQL postmaster") {
		t.Errorf("ClusterCPU of a non-postgres process: %v", err)
	}
}

func TestPrefillChunkCoversEveryPartitionEvenly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		batch, partitions int
		total             int64
	}{
		{"two per partition", 1000, 10000, 20000},
		{"batch wider than the partitions", 1000, 300, 1000},
		{"remainder", 7, 10, 23},
		{"one message", 100, 5, 1},
		{"nothing", 100, 5, 0},
	}
	for _, tt := range tests {
		perPart := make([]int64, tt.partitions)
		var seen int64
		for k := int64(0); ; k++ {
			first, n := prefillChunk(k, tt.batch, tt.total)
			if n == 0 {
				break
			}
			if first != seen || n > int64(tt.batch) {
				t.Fatalf("%s: chunk %d is [%d, +%d), want it to start at %d with at most %d", tt.name, k, first, n, seen, tt.batch)
			}
			distinct := map[int64]bool{}
			for j := first; j < first+n; j++ {
				perPart[j%int64(tt.partitions)]++
				distinct[j%int64(tt.partitions)] = true
			}
			if want := min(n, int64(tt.partitions)); int64(len(distinct)) != want {
				t.Errorf("%s: chunk %d names %d partitions, want %d", tt.name, k, len(distinct), want)
			}
			seen += n
		}
		if seen != tt.total {
			t.Errorf("%s: %d messages in the chunks, want %d", tt.name, seen, tt.total)
		}
		for p, n := range perPart {
			if want := tt.total / int64(tt.partitions); n != want && n != want+1 {
				t.Errorf("%s: partition %d holds %d, want %d or %d", tt.name, p, n, want, want+1)
			}
		}
	}
}

func TestIdleFigures(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	full := func(at time.Time, cpu, commits, pg float64, xacts int64) idleReading {
		return idleReading{at: at, brokerCPU: cpu, dbCommits: commits, pgCPU: pg, pgXacts: xacts, parked: 50,
			okCPU: true, okCommits: true, okPG: true, okXacts: true}
	}
	tests := []struct {
		name string
		a, b idleReading
		want map[string]any
	}{
		{"every reading", full(t0, 10, 1000, 5, 2000), full(t0.Add(60*time.Second), 13, 1603, 35, 2601),
			// (1603-1000-3 own)/60, (2601-2000-1 own)/60, 3 s of CPU in a minute, 30 s
			map[string]any{"measured_s": 60.0, "sql_calls_per_s": 10.0, "pg_xacts_per_s": 10.0,
				"broker_cpu_s_per_min": 3.0, "broker_cpu_source": "metrics", "pg_cpu_s_per_min": 30.0,
				"parked_start": 50.0, "parked_end": 50.0}},
		{"scrapes only", idleReading{at: t0, dbCommits: 100, okCommits: true, parked: -1},
			idleReading{at: t0.Add(10 * time.Second), dbCommits: 201, okCommits: true, parked: -1},
			map[string]any{"measured_s": 10.0, "sql_calls_per_s": 10.0}},
		{"unreadable commit counter", idleReading{at: t0, dbCommits: -1, okCommits: true, parked: -1},
			idleReading{at: t0.Add(10 * time.Second), dbCommits: 50, okCommits: true, parked: -1},
			map[string]any{"measured_s": 10.0}},
		{"CPU from /proc", idleReading{at: t0, brokerCPU: 1, okCPU: true, cpuFromProc: true, parked: -1},
			idleReading{at: t0.Add(30 * time.Second), brokerCPU: 2, okCPU: true, cpuFromProc: true, parked: -1},
			map[string]any{"measured_s": 30.0, "broker_cpu_s_per_min": 2.0, "broker_cpu_source": "proc"}},
		{"no time", full(t0, 1, 1, 1, 1), full(t0, 2, 2, 2, 2), map[string]any{"measured_s": 0.0}},
		{"parked only at one end", idleReading{at: t0, parked: 50}, idleReading{at: t0.Add(time.Second), parked: -1},
			map[string]any{"measured_s": 1.0}},
	}
	for _, tt := range tests {
		got := idleFigures(tt.a, tt.b)
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			continue
		}
		for k, w := range tt.want {
			g := got[k]
			if wf, ok := w.(float64); ok {
				if gf, ok := g.(float64); !ok || math.Abs(gf-wf) > 1e-9 {
					t.Errorf("%s: %s = %v, want %v", tt.name, k, g, w)
				}
			} else if g != w {
				t.Errorf("%s: %s = %v, want %v", tt.name, k, g, w)
			}
		}
	}
}

func TestReport(t *testing.T) {
	t.Parallel()
	lines := strings.Join([]string{
		`{"scenario":"pop10k","step":"consume","round":1,"hotlist":1,"summary":{"mode":"consume","rates":{"msgs":900},"p50_ms":4.2,"p99_ms":21.5,"extra":{"msgs_per_s_to_count":1000}}}`,
		`{"scenario":"pop10k","step":"consume","round":1,"hotlist":0,"summary":{"mode":"consume","rates":{"msgs":240},"p50_ms":48,"p99_ms":110,"extra":{"msgs_per_s_to_count":250}}}`,
		``,
		`{"scenario":"pop10k","step":"consume","round":2,"hotlist":0,"summary":{"mode":"consume","rates":{"msgs":200},"p50_ms":50,"p99_ms":120}}`,
		`{"scenario":"pop10k","step":"consume","round":2,"hotlist":1,"summary":{"mode":"consume","rates":{"msgs":1200},"p50_ms":5,"p99_ms":24}}`,
		`{"scenario":"idle","step":"idle","round":1,"hotlist":1,"summary":{"mode":"idle","extra":{"sql_calls_per_s":0,"pg_cpu_s_per_min":0.36}}}`,
		`{"scenario":"idle","step":"idle","round":1,"hotlist":0,"summary":{"mode":"idle","extra":{"sql_calls_per_s":0,"pg_cpu_s_per_min":30.4}}}`,
		`{"scenario":"latency","step":"latency","round":1,"hotlist":1,"summary":{"mode":"latency","p50_ms":10.8}}`,
		// A figure only the second run has still takes its place in the figure table.
		`{"scenario":"rss","step":"rss","round":1,"hotlist":1,"summary":{"mode":"rss","extra":{"rss_seeded_mb":52.75}}}`,
		`{"scenario":"rss","step":"rss","round":1,"hotlist":0,"summary":{"mode":"rss","extra":{"rss_base_mb":19.6,"rss_seeded_mb":48.4}}}`,
	}, "\n")
	res, err := ReadResults(strings.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := Report(&out, res); err != nil {
		t.Fatal(err)
	}
	want := `| scenario | figure | round | hot-list on | hot-list off | on/off |
|---|---|---:|---:|---:|---:|
| pop10k (consume) | pop+ack msgs/s | 1 | 1000 | 250 | 4.00 |
| pop10k (consume) | pop+ack msgs/s | 2 | 1200 | 200 | 6.00 |
| pop10k (consume) | pop+ack msgs/s | median | | | 5.00 |
| pop10k (consume) | pop p50 ms | 1 | 4.20 | 48.0 | 0.09 |
| pop10k (consume) | pop p50 ms | 2 | 5.00 | 50.0 | 0.10 |
| pop10k (consume) | pop p50 ms | median | | | 0.09 |
| pop10k (consume) | pop p99 ms | 1 | 21.5 | 110 | 0.20 |
| pop10k (consume) | pop p99 ms | 2 | 24.0 | 120 | 0.20 |
| pop10k (consume) | pop p99 ms | median | | | 0.20 |
| idle | SQL calls/s (queen_db_commits_total) | 1 | 0.00 | 0.00 | = |
| idle | PostgreSQL CPU s/min | 1 | 0.360 | 30.4 | 0.01 |
| latency | push-to-pop p50 ms | 1 | 10.8 | - | - |
| rss | RSS before MiB | 1 | - | 19.6 | - |
| rss | RSS seeded MiB | 1 | 52.8 | 48.4 | 1.09 |
`
	if out.String() != want {
		t.Errorf("report:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestReadResultsNamesTheBadLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, err string }{
		{"not JSON", "{\"scenario\":\"a\",\"summary\":{}}\nnot json\n", "line 2"},
		{"no summary", `{"scenario":"a","round":1}`, "line 1: no scenario or summary"},
	}
	for _, tt := range tests {
		if _, err := ReadResults(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.err)
		}
	}
}
