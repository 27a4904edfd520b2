package metrics

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/push"
)

// queenFamilies are the families of Queen's docs/api.md §5.13 this exporter serves, with
// Queen's names and types: dashboards built for Queen must keep working. Some are not
// what Prometheus' conventions would name them (gauges without a unit); they stay.
var queenFamilies = map[string]string{
	"queen_uptime_seconds":                "gauge",
	"queen_process_resident_memory_bytes": "gauge",
	"queen_process_push_requests_total":   "counter",
	"queen_process_push_messages_total":   "counter",
	"queen_process_pop_requests_total":    "counter",
	"queen_process_pop_messages_total":    "counter",
	"queen_process_ack_requests_total":    "counter",
	"queen_process_ack_messages_total":    "counter",
	"queen_batches_fired_total":           "counter",
	"queen_batch_items_fired_total":       "counter",
	"queen_fusion_items_per_batch":        "gauge",
	"queen_admission_budget":              "gauge",
	"queen_db_pool_size":                  "gauge",
	"queen_db_pool_idle":                  "gauge",
	"queen_db_pool_active":                "gauge",
	"queen_maintenance_mode_enabled":      "gauge",
	"queen_file_buffer_pending":           "gauge",
	"queen_file_buffer_failed":            "gauge",
	"queen_file_buffer_db_healthy":        "gauge",
}

// ownFamilies are this broker's families beyond Queen's; bench/load, scripts/, e2e/ and
// deploy/grafana read several of them by name.
var ownFamilies = map[string]string{
	"queen_fusion_commits_total":               "counter",
	"queen_fusion_segments_total":              "counter",
	"queen_fusion_failed_bundles_total":        "counter",
	"queen_db_pool_constructing":               "gauge",
	"queen_db_pool_max_size":                   "gauge",
	"queen_db_pool_acquires_total":             "counter",
	"queen_db_pool_empty_acquires_total":       "counter",
	"queen_db_pool_canceled_acquires_total":    "counter",
	"queen_db_pool_acquire_seconds_total":      "counter",
	"queen_db_pool_acquire_wait_seconds_total": "counter",
	"queen_db_commits_total":                   "counter",
	"queen_pg_oldest_xact_age_seconds":         "gauge",
	"queen_pg_sync_replication":                "gauge",
	"queen_pg_replica_lag_seconds":             "gauge",
	"queen_shard_db_pool_active":               "gauge",
	"queen_shard_db_pool_size":                 "gauge",
	"queen_shard_fusion_commits_total":         "counter",
	"queen_shard_fusion_messages_total":        "counter",
	"queen_shard_file_buffer_pending":          "gauge",
	"queen_shard_db_healthy":                   "gauge",
	"queen_shard_push_concurrency_limit":       "gauge",
	"queen_pop_parked":                         "gauge",
	"queen_pop_maintenance_mode_enabled":       "gauge",
	"queen_file_buffer_failed_files":           "gauge",
	"queen_file_buffer_failed_bytes":           "gauge",
	"queen_file_buffer_write_failing":          "gauge",
	"queen_hotlist_queues":                     "gauge",
	"queen_hotlist_rings":                      "gauge",
	"queen_hotlist_ready":                      "gauge",
	"queen_hotlist_wheel":                      "gauge",
	"queen_hotlist_marks_total":                "counter",
	"queen_hotlist_checkouts_total":            "counter",
	"queen_hotlist_candidates_total":           "counter",
	"queen_hotlist_verdicts_total":             "counter",
	"queen_hotlist_promotes_total":             "counter",
	"queen_hotlist_reclaimed_total":            "counter",
	"queen_hotlist_reseeds_total":              "counter",
	"queen_hotlist_reseed_rows_total":          "counter",
	"queen_hotlist_reseed_errors_total":        "counter",
	"queen_hotlist_swept_total":                "counter",
	"queen_hotlist_wakes_total":                "counter",
	"queen_peer_hints_total":                   "counter",
	"queen_peer_hints_dropped_total":           "counter",
	"queen_peer_hints_publish_failures_total":  "counter",
	"queen_peer_queue_changes_total":           "counter",
	"queen_retention_removed_rows_total":       "counter",
	"queen_retention_removed_bytes_total":      "counter",
	"queen_retention_cycles_total":             "counter",
	"queen_retention_errors_total":             "counter",
	"queen_history_flushes_total":              "counter",
	"queen_history_flush_failures_total":       "counter",
	"queen_history_flushes_dropped_total":      "counter",
	"queen_history_flushes_pending":            "gauge",
	"queen_http_requests_total":                "counter",
	"queen_http_request_duration_seconds":      "histogram",
	"queen_push_stage_seconds":                 "histogram",
	"queen_pop_stage_seconds":                  "histogram",
	"queen_http_response_bytes_total":          "counter",
}

// TestFamilies: with every source set, the scrape serves Queen's families under their
// names and types, and ours; nothing else named queen_ (a new family is added to
// ownFamilies on purpose, after the conventions check below); every family has help.
func TestFamilies(t *testing.T) {
	t.Parallel()
	e := scrape(t, Handler(fullSources()))
	for _, set := range []map[string]string{queenFamilies, ownFamilies} {
		for name, typ := range set {
			if got := e.types[name]; got != typ {
				t.Errorf("%s: type %q, want %q", name, got, typ)
			}
		}
	}
	for name := range e.types {
		if e.help[name] == "" {
			t.Errorf("%s has no help", name)
		}
		if _, ok := queenFamilies[name]; !ok && strings.HasPrefix(name, "queen_") && ownFamilies[name] == "" {
			t.Errorf("%s is not listed in queenFamilies or ownFamilies", name)
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if _, ok := e.value(name, nil); !ok {
			t.Errorf("the runtime's %s is missing", name)
		}
	}
}

// TestOwnFamiliesFollowConventions holds our families to Prometheus' naming rules:
// counters end in _total, nothing else does, and a family measuring time or size says
// its base unit (seconds, bytes; never milliseconds). Queen's names are exempt.
func TestOwnFamiliesFollowConventions(t *testing.T) {
	t.Parallel()
	for name, typ := range ownFamilies {
		counter := strings.HasSuffix(name, "_total")
		switch {
		case typ == "counter" && !counter:
			t.Errorf("counter %s does not end in _total", name)
		case typ != "counter" && counter:
			t.Errorf("%s %s ends in _total", typ, name)
		case typ == "histogram" && !strings.HasSuffix(name, "_seconds") && !strings.HasSuffix(name, "_bytes"):
			t.Errorf("histogram %s names no base unit", name)
		}
		for _, unit := range []string{"_ms", "_milliseconds", "_microseconds", "_kb", "_mb"} {
			if strings.Contains(name, unit+"_") || strings.HasSuffix(name, unit) {
				t.Errorf("%s uses %s: Prometheus' base units are seconds and bytes", name, unit)
			}
		}
	}
}

// TestReadings: each family reports its source's reading, with its constant labels.
func TestReadings(t *testing.T) {
	t.Parallel()
	e := scrape(t, Handler(fullSources()))
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"queen_process_push_requests_total", nil, 7},
		{"queen_process_push_messages_total", nil, 90},
		{"queen_process_pop_requests_total", nil, 11},
		{"queen_process_pop_messages_total", nil, 80},
		{"queen_process_ack_requests_total", nil, 9},
		{"queen_process_ack_messages_total", nil, 75},
		{"queen_batches_fired_total", map[string]string{"op": "push"}, 5},
		{"queen_batch_items_fired_total", map[string]string{"op": "push"}, 90},
		{"queen_fusion_items_per_batch", map[string]string{"op": "push"}, 18},
		{"queen_fusion_commits_total", nil, 5},
		{"queen_fusion_segments_total", nil, 40},
		{"queen_fusion_failed_bundles_total", nil, 1},
		{"queen_admission_budget", map[string]string{"lane": "push"}, 32},
		{"queen_db_pool_size", nil, 10},
		{"queen_db_pool_idle", nil, 6},
		{"queen_db_pool_active", nil, 3},
		{"queen_db_pool_constructing", nil, 1},
		{"queen_db_pool_max_size", nil, 20},
		{"queen_db_pool_acquires_total", nil, 1000},
		{"queen_db_pool_empty_acquires_total", nil, 40},
		{"queen_db_pool_canceled_acquires_total", nil, 2},
		{"queen_db_pool_acquire_seconds_total", nil, 1.5},
		{"queen_db_pool_acquire_wait_seconds_total", nil, 0.25},
		{"queen_db_commits_total", nil, 1234},
		{"queen_pg_oldest_xact_age_seconds", nil, 90},
		{"queen_pg_sync_replication", nil, 1},
		{"queen_pg_replica_lag_seconds", nil, 1.5},
		{"queen_shard_fusion_messages_total", map[string]string{"shard": "1"}, 7},
		{"queen_shard_file_buffer_pending", map[string]string{"shard": "1"}, 9},
		{"queen_shard_db_healthy", map[string]string{"shard": "0"}, 1},
		{"queen_shard_db_healthy", map[string]string{"shard": "1"}, 0},
		{"queen_shard_push_concurrency_limit", map[string]string{"shard": "1"}, 8},
		{"queen_shard_db_pool_active", map[string]string{"shard": "0"}, 3},
		{"queen_pop_parked", nil, 4},
		{"queen_maintenance_mode_enabled", nil, 0},
		{"queen_pop_maintenance_mode_enabled", nil, 1},
		{"queen_file_buffer_pending", nil, 3},
		{"queen_file_buffer_failed", nil, 2},
		{"queen_file_buffer_db_healthy", nil, 1},
		{"queen_file_buffer_failed_files", nil, 1},
		{"queen_file_buffer_failed_bytes", nil, 4096},
		{"queen_file_buffer_write_failing", nil, 1},
		{"queen_hotlist_ready", nil, 5},
		{"queen_hotlist_wakes_total", map[string]string{"when": "now"}, 6},
		{"queen_hotlist_wakes_total", map[string]string{"when": "tick"}, 2},
		{"queen_peer_hints_total", map[string]string{"direction": "received"}, 6},
		{"queen_peer_queue_changes_total", map[string]string{"direction": "received"}, 2},
		{"queen_retention_removed_rows_total", map[string]string{"job": "segments"}, 4},
		{"queen_retention_removed_bytes_total", map[string]string{"job": "segments"}, 800},
		{"queen_retention_cycles_total", nil, 1},
		{"queen_history_flushes_total", nil, 12},
		{"queen_history_flush_failures_total", nil, 3},
		{"queen_history_flushes_dropped_total", nil, 1},
		{"queen_history_flushes_pending", nil, 2},
		{"queen_push_stage_seconds_count", map[string]string{"stage": "commit"}, 1},
		{"queen_push_stage_seconds_sum", map[string]string{"stage": "commit"}, 0.004},
		{"queen_push_stage_seconds_bucket", map[string]string{"stage": "commit", "le": "0.003"}, 0},
		{"queen_push_stage_seconds_bucket", map[string]string{"stage": "commit", "le": "0.005"}, 1},
		{"queen_push_stage_seconds_count", map[string]string{"stage": "wait"}, 0},
		{"queen_pop_stage_seconds_count", map[string]string{"stage": "ready"}, 1},
		{"queen_pop_stage_seconds_bucket", map[string]string{"stage": "ready", "le": "0.002"}, 1},
	} {
		got, ok := e.value(tc.name, tc.labels)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
}

// TestOptionalSources: the required sources alone make a valid scrape without the
// optional families; an unreadable database leaves queen_db_commits_total and the
// oldest transaction's age out rather than report a value they cannot take.
func TestOptionalSources(t *testing.T) {
	t.Parallel()
	src := Sources{
		Fusion:     func() fusion.Stats { return fusion.Stats{} },
		Push:       func() push.Stats { return push.Stats{} },
		PushLimit:  func() int { return 1 },
		DBCommits:  func(context.Context) (int64, error) { return 0, errors.New("connection refused") },
		OldestXact: func(context.Context) (time.Duration, error) { return 0, errors.New("connection refused") },
		ReplicaLag: func() (time.Duration, bool) { return 0, false },
	}
	e := scrape(t, Handler(src))
	for _, name := range []string{"queen_process_push_requests_total", "queen_fusion_commits_total", "queen_admission_budget"} {
		if _, ok := e.value(name, nil); !ok {
			t.Errorf("required family %s is missing", name)
		}
	}
	for _, name := range []string{"queen_db_commits_total", "queen_pg_oldest_xact_age_seconds", "queen_pg_replica_lag_seconds", "queen_db_pool_size", "queen_process_pop_requests_total",
		"queen_file_buffer_pending", "queen_pop_parked", "queen_hotlist_rings", "queen_retention_cycles_total",
		"queen_history_flushes_total", "queen_http_requests_total", "queen_shard_db_healthy"} {
		if _, ok := e.value(name, nil); ok {
			t.Errorf("%s is served without its source", name)
		}
	}
}

// TestSnapshotReadsEachSourceOncePerScrape: the spool's and the pool's readings walk
// structures under locks; a scrape takes one reading of each whatever its family count.
func TestSnapshotReadsEachSourceOncePerScrape(t *testing.T) {
	t.Parallel()
	src := fullSources()
	var spoolReads, poolReads int
	src.Spool = func() drain.Status { spoolReads++; return drain.Status{} }
	src.Pool = func() PoolStat { poolReads++; return poolStat{} }
	h := Handler(src)
	for i := 1; i <= 2; i++ {
		scrape(t, h)
		if spoolReads != i || poolReads != i {
			t.Fatalf("after %d scrapes: %d spool and %d pool readings", i, spoolReads, poolReads)
		}
	}
}

// TestFullSourcesSetsEverySource keeps the test sources honest: every field of Sources
// is set (as providers.go sets them), so the dashboard check sees every family the
// broker serves; a new source must be added to fullSources.
func TestFullSourcesSetsEverySource(t *testing.T) {
	t.Parallel()
	v := reflect.ValueOf(fullSources())
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("fullSources leaves %s unset", v.Type().Field(i).Name)
		}
	}
}
