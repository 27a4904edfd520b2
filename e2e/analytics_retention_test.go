package e2e

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// anaRetained are the retention route's figures (totals, a bucket or a group's).
type anaRetained struct {
	RetentionMsgs, CompletedRetentionMsgs, EvictionMsgs, TotalMsgs int64
	RowsRemoved, BytesRemoved, EventCount                          int64
}

// anaRetentionAnswer is GET /api/v1/analytics/retention's answer.
type anaRetentionAnswer struct {
	Totals anaRetained
	Rows   []struct {
		Key    string
		Totals anaRetained
	}
}

func (b *broker) anaRetention(t testing.TB, params ...string) (anaRetentionAnswer, []byte) {
	t.Helper()
	raw := b.resGetOK(t, anaPath("/api/v1/analytics/retention", params...))
	var ans anaRetentionAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatalf("retention %s: %v", raw, err)
	}
	return ans, raw
}

// TestAnalyticsRetention: the history's purge and the record of what retention removed.
// A minute of history two days old and one two hours old (inserted directly: no broker
// writes a minute in the past) show in the routes; a broker with METRICS_RETENTION_DAYS=1
// purges the old one (6 rows: its queue row and rollups, broker and flush rows and its retention run) at
// its first cycle and keeps the recent one. Its cycles then remove messages by each rule
// (retentionSeconds, completedRetentionSeconds, maxWaitTimeSeconds: 2 each), which the
// retention route reports with the purge's run.
func TestAnalyticsRetention(t *testing.T) {
	t.Parallel()
	// The first broker runs no retention cycle in the test (one an hour). It reads the
	// history afterwards too: the purger's ranges are a day at most (its
	// METRICS_RETENTION_DAYS bounds them).
	keeper := startBroker(t, anaEnv("ret-keeper", "RETENTION_INTERVAL", "3600000"))
	now := time.Now()
	pgtest.InsertHistory(t, keeper.DB, now.Add(-49*time.Hour), "old.q", "old-broker", 5)
	pgtest.InsertHistory(t, keeper.DB, now.Add(-2*time.Hour), "recent.q", "recent-broker", 7)
	before := keeper.anaReadInserted(t, now)
	if before.queues["old.q"] != 5 || before.queues["recent.q"] != 7 || before.brokers["old-broker"] != 2 ||
		before.brokers["recent-broker"] != 2 || before.runs["old.q"] != 5 || before.runs["recent.q"] != 7 {
		t.Fatalf("before the purge: %+v", before)
	}

	purger := startBrokerOn(t, keeper.DB, anaEnv("ret-purger", "RETENTION_INTERVAL", "100", "METRICS_RETENTION_DAYS", "1"))
	started := time.Now()
	anaWait(t, "the purge of the minute two days old", func() (bool, string) {
		h := keeper.anaReadInserted(t, now)
		_, oldQ := h.queues["old.q"]
		_, oldB := h.brokers["old-broker"]
		_, oldR := h.runs["old.q"]
		return !oldQ && !oldB && !oldR, h.raw
	})
	if h := keeper.anaReadInserted(t, now); h.queues["recent.q"] != 7 || h.brokers["recent-broker"] != 2 || h.runs["recent.q"] != 7 {
		t.Fatalf("after the purge, the recent minute: %+v", h)
	}
	if n := purger.metric(t, `queen_retention_removed_rows_total{job="metrics_history"}`); n != 6 {
		t.Errorf("history rows purged: %v, want 6 (a queue row and its 5- and 60-minute rollups, a broker row, a flush, a retention run)", n)
	}
	anaRetentionRules(t, purger, started.Add(-time.Second))
}

// anaInserted is what a broker reads of the minutes pgtest.InsertHistory wrote: pushed
// messages by queue, requests by broker, retention runs' messages by queue.
type anaInserted struct {
	queues, brokers, runs map[string]int64
	raw                   string // the answers read
}

// anaReadInserted reads the inserted minutes of old.q, recent.q, old-broker and
// recent-broker over the three days before now.
func (b *broker) anaReadInserted(t testing.TB, now time.Time) anaInserted {
	t.Helper()
	from := now.Add(-72 * time.Hour)
	out := anaInserted{queues: map[string]int64{}, brokers: map[string]int64{}, runs: map[string]int64{}}
	ops, rawOps := b.anaQueueOps(t, from, "")
	for _, q := range []string{"old.q", "recent.q"} {
		if c, ok := ops[q]; ok {
			out.queues[q] = c.PushMessages
		}
	}
	var sys struct {
		Replicas []struct {
			WorkerID   string
			TimeSeries []struct {
				Metrics struct{ Requests struct{ Count int64 } }
			}
		}
	}
	rawSys := b.resGetOK(t, anaPath("/api/v1/analytics/system-metrics", "from", anaTime(from)))
	if err := json.Unmarshal(rawSys, &sys); err != nil {
		t.Fatal(err)
	}
	for _, r := range sys.Replicas {
		if r.WorkerID == "old-broker" || r.WorkerID == "recent-broker" {
			for _, p := range r.TimeSeries {
				out.brokers[r.WorkerID] += p.Metrics.Requests.Count
			}
		}
	}
	ret, rawRet := b.anaRetention(t, "from", anaTime(from), "groupBy", "queue")
	for _, row := range ret.Rows {
		if row.Key == "old.q" || row.Key == "recent.q" {
			out.runs[row.Key] = row.Totals.RetentionMsgs
		}
	}
	out.raw = string(rawOps) + "\n" + string(rawSys) + "\n" + string(rawRet)
	return out
}

// anaRetentionRules has retention remove two messages by each rule, once they are a
// second old, and checks the retention route over from..now: its fields, its totals
// with the purge's 4 rows, and its groups by queue, namespace and task.
func anaRetentionRules(t *testing.T, b *broker, from time.Time) {
	t.Helper()
	b.setOptions(t, "ret.age", map[string]any{"retentionEnabled": true, "retentionSeconds": 1})
	b.setOptions(t, "ret.done", map[string]any{"retentionEnabled": true, "completedRetentionSeconds": 1})
	b.setOptions(t, "ret.evict", map[string]any{"maxWaitTimeSeconds": 1})
	for _, q := range []string{"ret.age", "ret.done", "ret.evict"} {
		b.pushN(t, q, "p", q, 2)
	}
	b.ackAll(t, b.popMust(t, "/api/v1/pop/queue/ret.done/partition/p?wait=false&batch=10"), "")
	since := anaTime(from)
	want := anaRetained{RetentionMsgs: 2, CompletedRetentionMsgs: 2, EvictionMsgs: 2, TotalMsgs: 6,
		RowsRemoved: 12} // the 6 messages, the purge's 6 rows
	anaWait(t, "retention to remove the messages by each rule", func() (bool, string) {
		ans, raw := b.anaRetention(t, "from", since)
		got := ans.Totals
		got.BytesRemoved, got.EventCount = 0, 0
		return got == want, string(raw)
	})

	path := anaPath("/api/v1/analytics/retention", "from", since)
	raw := b.resGetOK(t, path)
	anaLog(t, path, raw)
	anaWantFields(t, raw, anaJoin(anaRangeFields, []string{"series/bucket"}, anaPrefixed("series", anaRetainedFields...),
		anaPrefixed("totals", anaRetainedFields...)), nil)
	var ans struct{ Totals anaRetained }
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	// At least a run of each rule and the purge's; a rule's messages may go in several.
	if ans.Totals.EventCount < 4 || ans.Totals.BytesRemoved == 0 {
		t.Errorf("totals %+v: want at least 4 runs and some bytes", ans.Totals)
	}
	for _, tt := range []struct {
		groupBy string
		want    map[string]anaRetained
	}{
		{"queue", map[string]anaRetained{"ret.age": {RetentionMsgs: 2, TotalMsgs: 2, RowsRemoved: 2},
			"ret.done":  {CompletedRetentionMsgs: 2, TotalMsgs: 2, RowsRemoved: 2},
			"ret.evict": {EvictionMsgs: 2, TotalMsgs: 2, RowsRemoved: 2}}},
		{"namespace", map[string]anaRetained{"ret": {RetentionMsgs: 2, CompletedRetentionMsgs: 2, EvictionMsgs: 2,
			TotalMsgs: 6, RowsRemoved: 6}}},
		{"task", map[string]anaRetained{"age": {RetentionMsgs: 2, TotalMsgs: 2, RowsRemoved: 2},
			"done":  {CompletedRetentionMsgs: 2, TotalMsgs: 2, RowsRemoved: 2},
			"evict": {EvictionMsgs: 2, TotalMsgs: 2, RowsRemoved: 2}}},
	} {
		t.Run("groupBy "+tt.groupBy, func(t *testing.T) { anaRetentionGroups(t, b, since, tt.groupBy, tt.want) })
	}
}

// anaRetentionGroups checks the retention route's rows by groupBy: their fields, and
// each key's figures (bytes and runs only non-zero).
func anaRetentionGroups(t *testing.T, b *broker, since, groupBy string, want map[string]anaRetained) {
	raw := b.resGetOK(t, anaPath("/api/v1/analytics/retention", "from", since, "groupBy", groupBy))
	anaWantFields(t, raw, anaJoin([]string{"groupBy", "rows/key"}, anaPrefixed("rows/totals", anaRetainedFields...)), nil)
	var ans anaRetentionAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	got := map[string]anaRetained{}
	for _, r := range ans.Rows {
		if r.Totals.BytesRemoved == 0 || r.Totals.EventCount == 0 {
			t.Errorf("row %s without bytes or runs: %+v", r.Key, r.Totals)
		}
		r.Totals.BytesRemoved, r.Totals.EventCount = 0, 0
		got[r.Key] = r.Totals
	}
	if len(got) != len(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("row %s: %+v, want %+v", k, got[k], w)
		}
	}
}
