package load

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// soakPassing is a soak that meets every criterion: 13 samples 10 s apart, a 30 s
// warm-up, steady resources and a backlog that swings without a trend.
func soakPassing() SoakOutcome {
	o := SoakOutcome{Warmup: 30 * time.Second, PushP99: 20, PopAckP99: 50, SpoolPending: 0, Verifier: true}
	for i := range 13 {
		s := SoakSample{Elapsed: time.Duration(i) * 10 * time.Second, Accepted: int64(i) * 20000,
			Delivered: int64(i) * 40000, PushP50: 3, PushP99: 20, PopAckP99: 50, RSS: 100 << 20,
			Goroutines: 50, FDs: 40, Threads: 12, PGConns: 20, Backlog: 1000 + int64(i%2)*300, SpoolPending: 0}
		for j := range s.Tuples {
			s.Tuples[j] = Tuples{Dead: 10, Live: 1000}
		}
		o.Samples = append(o.Samples, s)
	}
	return o
}

func TestCheckSoak(t *testing.T) {
	t.Parallel()
	last := func(o *SoakOutcome) *SoakSample { return &o.Samples[len(o.Samples)-1] }
	tests := []struct {
		name   string
		change func(o *SoakOutcome)
		failed []string // the criteria that must fail; every other one passes (or is N/A)
		na     []string // the criteria not measured
	}{
		{name: "pass", change: func(*SoakOutcome) {}},
		{name: "RSS grows 15 %", change: func(o *SoakOutcome) { last(o).RSS = 115 << 20 }, failed: []string{"RSS growth"}},
		{name: "RSS before the warm-up is not checked", change: func(o *SoakOutcome) { o.Samples[0].RSS = 10 << 20 }},
		{name: "goroutines leak past the band", change: func(o *SoakOutcome) { last(o).Goroutines = 61 }, failed: []string{"goroutines"}},
		{name: "goroutines drop past the band", change: func(o *SoakOutcome) { o.Samples[6].Goroutines = 39 }, failed: []string{"goroutines"}},
		{name: "goroutine swing within the floor", change: func(o *SoakOutcome) { o.Samples[5].Goroutines = 59 }},
		{name: "FDs not flat", change: func(o *SoakOutcome) { o.Samples[8].FDs = 46 }, failed: []string{"open FDs"}},
		{name: "FDs within the floor of 5", change: func(o *SoakOutcome) { o.Samples[8].FDs = 45 }},
		{name: "PG connections over the pool", change: func(o *SoakOutcome) { o.Samples[7].PGConns = 162 }, failed: []string{"PG connections"}},
		{name: "push p99 over 100 ms", change: func(o *SoakOutcome) { o.PushP99 = 150 }, failed: []string{"push p99"}},
		{name: "pop-to-ack p99 over 500 ms", change: func(o *SoakOutcome) { o.PopAckP99 = 600 }, failed: []string{"pop-to-ack p99"}},
		{name: "backlog trends up", change: func(o *SoakOutcome) {
			for i := range o.Samples {
				o.Samples[i].Backlog = 1000 + int64(i)*300 // 30 msg/s; the limit is 1 % of 2,000
			}
		}, failed: []string{"backlog trend"}},
		{name: "backlog shrinking", change: func(o *SoakOutcome) {
			for i := range o.Samples {
				o.Samples[i].Backlog = 5000 - int64(i)*300
			}
		}},
		{name: "dead tuples at the end", change: func(o *SoakOutcome) { last(o).Tuples[0] = Tuples{Dead: 250, Live: 1000} },
			failed: []string{"dead/live tuples"}},
		{name: "dead tuples earlier do not count", change: func(o *SoakOutcome) { o.Samples[6].Tuples[2] = Tuples{Dead: 900, Live: 1000} }},
		{name: "spool not empty", change: func(o *SoakOutcome) { o.SpoolPending = 3 }, failed: []string{"spool empty"}},
		{name: "verifier FAIL", change: func(o *SoakOutcome) { o.Verifier = false }, failed: []string{"verifier"}},
		{name: "goroutines and PostgreSQL not measured", change: func(o *SoakOutcome) {
			for i := range o.Samples {
				o.Samples[i].Goroutines, o.Samples[i].PGConns = math.NaN(), math.NaN()
				o.Samples[i].Tuples = [len(HotTables)]Tuples{{math.NaN(), math.NaN(), math.NaN()}, {math.NaN(), math.NaN(), math.NaN()}, {math.NaN(), math.NaN(), math.NaN()}}
			}
		}, na: []string{"goroutines", "PG connections", "dead/live tuples"}},
		{name: "one sample after the warm-up", change: func(o *SoakOutcome) { o.Warmup = 2 * time.Minute },
			failed: []string{"RSS growth", "goroutines", "open FDs", "PG connections", "backlog trend", "dead/live tuples"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := soakPassing()
			tt.change(&o)
			cs := CheckSoak(o, DefaultSoakLimits(2000, 160))
			if len(cs) != 10 {
				t.Fatalf("%d criteria, want 10:\n%s", len(cs), SoakTable(cs))
			}
			for _, c := range cs {
				want := SoakPass
				switch {
				case slices.Contains(tt.failed, c.Name):
					want = SoakFail
				case slices.Contains(tt.na, c.Name):
					want = SoakNA
				}
				if c.Status != want {
					t.Errorf("%s: %s, want %s\n%s", c.Name, c.Status, want, SoakTable(cs))
				}
			}
			line, pass := SoakVerdict(cs)
			if pass != (len(tt.failed) == 0) || !strings.HasPrefix(line, "SOAK VERDICT: "+status(pass)) {
				t.Errorf("verdict %q, pass %v", line, pass)
			}
		})
	}
}

func TestSlope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		xs, ys []float64
		want   float64
	}{
		{"flat", []float64{0, 1, 2}, []float64{5, 5, 5}, 0},
		{"line", []float64{0, 10, 20, 30}, []float64{1, 21, 41, 61}, 2},
		{"noise around a fall", []float64{0, 1, 2, 3}, []float64{10, 8, 7, 4}, -1.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Slope(tt.xs, tt.ys); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("slope %v, want %v", got, tt.want)
			}
		})
	}
	if got := Slope([]float64{3, 3}, []float64{1, 2}); !math.IsNaN(got) {
		t.Fatalf("slope over one instant %v, want NaN", got)
	}
}

func TestSoakCSV(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w, err := NewSoakCSV(&b)
	if err != nil {
		t.Fatal(err)
	}
	s := SoakSample{Elapsed: 10500 * time.Millisecond, Accepted: 21000, Delivered: 42010, PushP50: 2.5, PushP99: 17.25,
		PopAckP99: math.NaN(), RSS: 104857600, Goroutines: math.NaN(), FDs: 41, Threads: 12, PGConns: 19, Backlog: 840,
		Tuples: [len(HotTables)]Tuples{{12, 1000, 90112}, {3, 2000, 8192}, {math.NaN(), math.NaN(), math.NaN()}}, SpoolPending: 0}
	if err := w.Write(s); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"elapsed_s", "accepted_msgs", "delivered_msgs", "push_p50_ms", "push_p99_ms", "pop_ack_p99_ms", "rss_bytes",
			"goroutines", "open_fds", "threads", "pg_conns", "backlog_msgs", "log_partitions_dead_tup", "log_partitions_live_tup",
			"log_partitions_bytes", "log_consumers_dead_tup", "log_consumers_live_tup", "log_consumers_bytes",
			"log_segments_dead_tup", "log_segments_live_tup", "log_segments_bytes", "spool_pending_records"},
		{"10.5", "21000", "42010", "2.50", "17.25", "", "104857600", "", "41", "12", "19", "840", "12", "1000", "90112", "3", "2000", "8192", "", "", "", "0"},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d: %q", len(rows), len(want), rows)
	}
	for i := range want {
		if !slices.Equal(rows[i], want[i]) {
			t.Errorf("row %d:\n got %q\nwant %q", i, rows[i], want[i])
		}
	}
}

func TestProcessFDsAndThreadsOfThisProcess(t *testing.T) {
	t.Parallel()
	pid := os.Getpid()
	fds, err := ProcessFDs(pid)
	if err != nil || fds < 3 {
		t.Fatalf("fds %v, %v: want stdin, stdout and stderr at least", fds, err)
	}
	threads, err := ProcessThreads(pid)
	if err != nil || threads < 1 {
		t.Fatalf("threads %v, %v", threads, err)
	}
	if _, err := ProcessFDs(-1); err == nil {
		t.Fatal("fds of pid -1: no error")
	}
}
