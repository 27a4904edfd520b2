package load

import (
	"os"
	"testing"
	"time"
)

func TestCPUPerMessage(t *testing.T) {
	t.Parallel()
	a := cpuReading{pg: time.Second, broker: 2 * time.Second, self: 3 * time.Second, okPG: true, okBroker: true, okSelf: true}
	tests := []struct {
		name string
		b    cpuReading
		msgs int64
		want map[string]float64
	}{
		{"every process", cpuReading{pg: 2 * time.Second, broker: 2500 * time.Millisecond, self: 3 * time.Second,
			okPG: true, okBroker: true, okSelf: true}, 10_000,
			map[string]float64{"pg_us_per_msg": 100, "pg_cpu_s": 1, "broker_us_per_msg": 50, "broker_cpu_s": 0.5,
				"bench_us_per_msg": 0, "bench_cpu_s": 0}},
		{"a process unread at one end is left out", cpuReading{pg: 2 * time.Second, self: 4 * time.Second,
			okPG: true, okSelf: true}, 1000,
			map[string]float64{"pg_us_per_msg": 1000, "pg_cpu_s": 1, "bench_us_per_msg": 1000, "bench_cpu_s": 1}},
		{"no message: nothing", cpuReading{pg: 2 * time.Second, okPG: true}, 0, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := map[string]any{}
			cpuPerMessage(a, tt.b, tt.msgs, got)
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if g, ok := got[k].(float64); !ok || g != v {
					t.Fatalf("%s = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestWithCPUReadsThisProcess(t *testing.T) {
	t.Parallel()
	s, err := WithCPU(CPUPids{Broker: os.Getpid()}, nil, "msgs", func() (Summary, error) {
		deadline := time.Now().Add(20 * time.Millisecond) // spend some CPU
		for time.Now().Before(deadline) {
		}
		return Summary{Totals: map[string]int64{"msgs": 100}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"broker_us_per_msg", "bench_us_per_msg", "bench_cpu_s"} {
		if _, ok := s.Extra[k]; !ok {
			t.Fatalf("no %s in %v", k, s.Extra)
		}
	}
	if _, ok := s.Extra["pg_us_per_msg"]; ok {
		t.Fatalf("pg_us_per_msg without a postmaster: %v", s.Extra)
	}
}
