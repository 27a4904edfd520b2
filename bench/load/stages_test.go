package load

import (
	"math"
	"testing"
)

func TestStagesBreaksDownADelta(t *testing.T) {
	before := ParseSamples([]byte(`
queen_push_stage_seconds_bucket{stage="commit",le="0.001"} 10
queen_push_stage_seconds_bucket{stage="commit",le="0.002"} 10
queen_push_stage_seconds_bucket{stage="commit",le="+Inf"} 10
queen_push_stage_seconds_sum{stage="commit"} 0.005
queen_push_stage_seconds_count{stage="commit"} 10
`))
	after := ParseSamples([]byte(`
queen_push_stage_seconds_bucket{stage="commit",le="0.001"} 60
queen_push_stage_seconds_bucket{stage="commit",le="0.002"} 110
queen_push_stage_seconds_bucket{stage="commit",le="+Inf"} 110
queen_push_stage_seconds_sum{stage="commit"} 0.155
queen_push_stage_seconds_count{stage="commit"} 110
queen_push_stage_seconds_bucket{stage="read",le="0.001"} 4
queen_push_stage_seconds_bucket{stage="read",le="0.002"} 4
queen_push_stage_seconds_bucket{stage="read",le="+Inf"} 4
queen_push_stage_seconds_sum{stage="read"} 0.0004
queen_push_stage_seconds_count{stage="read"} 4
queen_pop_stage_seconds_count{stage="ready"} 7
`))
	got := Stages(before, after, FamilyPushStages, "read", "wait", "commit")
	if len(got) != 2 || got[0].Stage != "read" || got[1].Stage != "commit" {
		t.Fatalf("stages %+v, want read then commit", got)
	}
	c := got[1]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// 100 new commits: 50 at or below 1 ms, 50 in (1, 2] ms; 150 ms in all.
	if c.Count != 100 || !near(c.Mean, 1.5) || !near(c.P50, 1) || !near(c.P99, 1.98) {
		t.Fatalf("commit %+v, want n 100, mean 1.5, p50 1, p99 1.98", c)
	}
	if r := got[0]; r.Count != 4 || !near(r.Mean, 0.1) {
		t.Fatalf("read %+v, want n 4, mean 0.1", r)
	}
	if none := Stages(nil, ParseSamples([]byte("other 1\n")), FamilyPushStages); len(none) != 0 {
		t.Fatalf("a broker without the family gave %+v", none)
	}
}

func TestBucketQuantileInTheInfBucketIsTheHighestBound(t *testing.T) {
	b := map[float64]float64{0.001: 1, 0.01: 1, math.Inf(1): 10}
	if got := bucketQuantile(b, 10, 0.99); got != 0.01 {
		t.Fatalf("p99 %v, want 0.01", got)
	}
}

func TestWALFigures(t *testing.T) {
	tests := []struct {
		name    string
		a, b    WAL
		syncs   int64
		mean    float64
		hasMean bool
	}{
		{"timed", WAL{Syncs: 10, SyncMs: 5, Timed: true}, WAL{Syncs: 110, SyncMs: 55, Timed: true}, 100, 0.5, true},
		{"untimed: the count only", WAL{Syncs: 10}, WAL{Syncs: 30}, 20, 0, false},
		{"no flush: no mean", WAL{Syncs: 7, Timed: true}, WAL{Syncs: 7, Timed: true}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := map[string]any{}
			walFigures(tt.a, tt.b, extra)
			if extra["wal_syncs"] != tt.syncs {
				t.Fatalf("wal_syncs %v, want %d", extra["wal_syncs"], tt.syncs)
			}
			m, ok := extra["wal_sync_mean_ms"]
			if ok != tt.hasMean || ok && m != tt.mean {
				t.Fatalf("wal_sync_mean_ms %v (present %v), want %v (present %v)", m, ok, tt.mean, tt.hasMean)
			}
		})
	}
}
