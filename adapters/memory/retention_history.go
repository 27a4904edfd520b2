package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queen-go/queen/ports"
)

// The tables of the metrics history the retention cycle purges (schema/016_metrics.sql),
// in the order PurgeHistory visits them, as log_purge_history_v1 does.
const (
	HistoryQueueMinutes  = "metrics_queue_minutes"
	HistoryQueueRollups  = "metrics_queue_rollups" // hourly buckets, dated by their start
	HistoryBrokerMinutes = "metrics_broker_minutes"
	HistoryFlushes       = "metrics_flushes"
	HistoryRuns          = "retention_runs"
)

var historyTables = []string{HistoryQueueMinutes, HistoryQueueRollups, HistoryBrokerMinutes, HistoryFlushes, HistoryRuns}

// rollupWidth is the width of the rollups AddHistory stores: a rollup expires once its
// last minute is before the cutoff (log_purge_history_v1).
const rollupWidth = time.Hour

// retainedHistory is the metrics history as retention sees it: the date of every row (the
// minute, applied_at, ran_at) and the runs RecordRuns stored. The counters themselves
// live in Metrics (history.go), which retention does not read.
type retainedHistory struct {
	dates map[string][]time.Time // table -> its rows' dates (the metrics tables; a rollup's last minute)
	runs  []RecordedRun          // retention_runs' rows, in the order recorded
}

// RecordedRun is a row of retention_runs: a run and when it ran.
type RecordedRun struct {
	RanAt time.Time
	ports.RetentionRun
}

// historyOf returns the store's history, created on first use. Callers hold s.mu.
func (s *Store) historyOf() *retainedHistory {
	if s.retained == nil {
		s.retained = &retainedHistory{dates: make(map[string][]time.Time)}
	}
	return s.retained
}

// AddHistory stores n rows dated at in table, one of the Metrics tables but
// retention_runs (whose rows RecordRuns stores). Tests use it to age the history.
func (s *Store) AddHistory(table string, at time.Time, n int) {
	if !slices.Contains(historyTables[:4], table) {
		panic(fmt.Sprintf("memory: AddHistory: no history table %q", table))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.historyOf()
	if table == HistoryQueueRollups {
		at = at.Add(rollupWidth - time.Minute)
	}
	for range n {
		h.dates[table] = append(h.dates[table], at)
	}
}

// HistoryRows counts the rows of a history table (retention_runs included).
func (s *Store) HistoryRows(table string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retained == nil {
		return 0
	}
	if table == HistoryRuns {
		return len(s.retained.runs)
	}
	return len(s.retained.dates[table])
}

// RetentionRuns returns the rows of retention_runs, in the order recorded.
func (s *Store) RetentionRuns() []RecordedRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retained == nil {
		return nil
	}
	return slices.Clone(s.retained.runs)
}

// RecordRuns implements ports.RetentionStore: the runs, dated ranAt, at once.
func (r *RetentionStore) RecordRuns(ctx context.Context, ranAt time.Time, runs []ports.RetentionRun) error {
	s := r.s
	if err := s.begin(ctx, "Retention.RecordRuns"); err != nil {
		return err
	}
	if len(runs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.historyOf()
	for _, run := range runs {
		h.runs = append(h.runs, RecordedRun{RanAt: ranAt, RetentionRun: run})
	}
	return nil
}

// PurgeHistory implements ports.RetentionStore (log_purge_history_v1): at most rows rows
// dated before before, table after table. Bytes are not measured (0).
func (r *RetentionStore) PurgeHistory(ctx context.Context, before time.Time, rows int) (ports.Removed, error) {
	s := r.s
	if err := s.begin(ctx, "Retention.PurgeHistory"); err != nil {
		return ports.Removed{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.historyOf()
	left := max(rows, 1)
	var out ports.Removed
	gone := func(at time.Time) bool {
		if left > 0 && at.Before(before) {
			left--
			out.Rows++
			return true
		}
		return false
	}
	for _, table := range historyTables[:4] {
		h.dates[table] = slices.DeleteFunc(h.dates[table], gone)
	}
	h.runs = slices.DeleteFunc(h.runs, func(run RecordedRun) bool { return gone(run.RanAt) })
	return out, nil
}
