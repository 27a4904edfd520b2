package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"
)

// The metrics history and its routes (docs/api.md §5.11a), black-box: real traffic on
// brokers flushing every anaFlushMs, then every route read back. Each route's test
// fails on a field docs/api.md lists that is missing, or that stays zero after the
// traffic (unless the test names it allowed-zero, with the reason).

const (
	// anaFlushMs is the brokers' METRICS_FLUSH_MS: counts reach the history within it.
	anaFlushMs = "100"
	// anaPatience bounds every wait for the history to show what the test did.
	anaPatience = 20 * time.Second
)

// anaEnv is the configuration of a broker of these tests: its id (QUEEN_SERVER_ID, the
// history's broker key), a short flush, and extra name, value pairs.
func anaEnv(id string, extra ...string) map[string]string {
	env := map[string]string{"QUEEN_SERVER_ID": id, "METRICS_FLUSH_MS": anaFlushMs}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// anaPath is route with the query of name, value pairs (empty values left out).
func anaPath(route string, params ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		if params[i+1] != "" {
			q.Set(params[i], params[i+1])
		}
	}
	if len(q) == 0 {
		return route
	}
	return route + "?" + q.Encode()
}

// anaTime is t as a range parameter.
func anaTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// anaWait polls cond until it holds, failing with what and cond's last report after
// anaPatience: the history shows a flush's counts within a few flush intervals.
func anaWait(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(anaPatience)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: still waiting for %s; last: %s", anaPatience, what, last)
		}
		<-tick.C
	}
}

// anaLog logs an answer, cut to about 1,500 characters (the answers quoted in the notes
// come from a -v run).
func anaLog(t testing.TB, path string, raw []byte) {
	t.Helper()
	s := string(raw)
	if len(s) > 1500 {
		s = s[:1500] + "…"
	}
	t.Logf("ANSWER GET %s\n%s", path, s)
}

// anaWantFields checks the JSON answer raw: each path of want ("a/b/c"; an array on the
// way stands for each of its elements) is present everywhere it leads and non-zero
// somewhere (a number other than 0, a non-empty string, array or object, true), unless
// zeroOK names it, with the reason it may stay zero after the test's traffic.
func anaWantFields(t testing.TB, raw []byte, want []string, zeroOK map[string]string) {
	t.Helper()
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	for _, p := range want {
		vals, missing := anaLeaves(root, strings.Split(p, "/"), "")
		if missing != "" {
			t.Errorf("field %s: %s", p, missing)
			continue
		}
		if _, ok := zeroOK[p]; ok {
			continue
		}
		nonzero := false
		for _, v := range vals {
			nonzero = nonzero || anaNonzero(v)
		}
		if !nonzero {
			t.Errorf("field %s is zero (or empty) everywhere after the traffic: %v", p, vals)
		}
	}
	for p := range zeroOK {
		if _, missing := anaLeaves(root, strings.Split(p, "/"), ""); missing != "" {
			t.Errorf("allowed-zero field %s: %s", p, missing)
		}
	}
}

// anaLeaves returns the values at path below v (at is v's own path, for messages), or
// why some are missing.
func anaLeaves(v any, path []string, at string) ([]any, string) {
	if len(path) == 0 {
		return []any{v}, ""
	}
	if arr, ok := v.([]any); ok {
		if len(arr) == 0 {
			return nil, at + " is an empty array"
		}
		var out []any
		for i, e := range arr {
			vals, missing := anaLeaves(e, path, fmt.Sprintf("%s[%d]", at, i))
			if missing != "" {
				return nil, missing
			}
			out = append(out, vals...)
		}
		return out, ""
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Sprintf("%s is %T, not an object", at, v)
	}
	next, ok := m[path[0]]
	if !ok {
		return nil, fmt.Sprintf("no key %q in %s", path[0], at)
	}
	return anaLeaves(next, path[1:], at+"/"+path[0])
}

func anaNonzero(v any) bool {
	switch x := v.(type) {
	case float64:
		return x != 0
	case string:
		return x != ""
	case bool:
		return x
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return false
}

// anaPrefixed is each of fields under prefix ("prefix/field").
func anaPrefixed(prefix string, fields ...string) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = prefix + "/" + f
	}
	return out
}

// anaJoin concatenates field lists.
func anaJoin(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// The field lists of docs/api.md §5.11a.
var (
	anaRangeFields = []string{"timeRange/from", "timeRange/to", "bucketMinutes"}
	// anaCounterFields are a queue's counters (queue-ops' series and queues).
	anaCounterFields = []string{"pushRequests", "pushMessages", "popRequests", "popMessages", "popEmpty",
		"ackRequests", "ackSuccess", "ackFailed", "dlqCount", "transactions", "partitionsCreated", "partitionsDeleted",
		"avgLagMs", "maxLagMs", "lagCount", "pushPerSecond", "popPerSecond", "ackPerSecond", "emptyPerSecond", "parkedCount"}
	// anaPointFields are a throughput point's (status' throughput, status/analytics').
	anaPointFields = []string{"ingested", "processed", "popMessages", "popEmpty", "ingestedPerSecond",
		"processedPerSecond", "popPerSecond", "avgLagMs", "maxLagMs", "dbErrors", "ackFailed", "dlqCount",
		"transactions", "queenCpuUserPct", "queenCpuSysPct", "queenRssMb", "dbPoolActive", "dbPoolIdle", "dbPoolSize",
		"requests", "avgRequestLatencyMs", "maxRequestLatencyMs"}
	// anaWorkerFields are a broker's in worker-metrics' and status' workers.
	anaWorkerFields = []string{"hostname", "workerId", "port", "freeSlots", "dbConnections", "messagesProcessed",
		"requests", "avgRequestLatencyMs", "maxRequestLatencyMs", "maxGoroutines", "lastSeen"}
	anaRetainedFields = []string{"retentionMsgs", "completedRetentionMsgs", "evictionMsgs", "totalMsgs",
		"rowsRemoved", "bytesRemoved", "eventCount"}
)

// anaLeafFields are the {avg, min, max, last} of each gauge named.
func anaLeafFields(prefix string, gauges ...string) []string {
	var out []string
	for _, g := range gauges {
		out = append(out, anaPrefixed(prefix+"/"+g, "avg", "min", "max", "last")...)
	}
	return out
}

// anaZeroWhy are the reasons a field may stay zero whatever the traffic.
const (
	whyDBErrors = "no statement of these tests fails on the database (nothing is counted unless one does)"
	// A partition is deleted once empty (its messages and their dedup hashes, kept at
	// least 900 s, gone) and idle PARTITION_CLEANUP_DAYS (a day at least): out of a
	// test's reach; core/retention's tests cover the report of the deletions.
	whyDeleted = "no partition is deleted in a test: one must be empty and idle a day"
	// An idle broker between requests: its last sample, and its fewest, hold none in use.
	whyActive = "0 on a broker sampled between requests"
	// The average of the connections in use at the samples, to 0.1: the test's light
	// traffic holds one at about one sample in twenty.
	whyPoolActive = "the average in use at the samples rounds to 0.0 under light traffic"
)

// anaCounts are the exact counters a test expects of a queue or of a broker.
type anaCounts struct {
	PushRequests, PushMessages           int64
	PopRequests, PopMessages, PopEmpty   int64
	AckRequests, AckSuccess, AckFailed   int64
	DLQCount, Transactions               int64
	PartitionsCreated, PartitionsDeleted int64
	LagCount, ParkedCount                int64
}

// anaQueueOps reads queue-ops' per-queue totals over the range from..now (queue "" =
// every queue): by queue name, with the raw answer.
func (b *broker) anaQueueOps(t testing.TB, from time.Time, queue string) (map[string]anaCounts, []byte) {
	t.Helper()
	raw := b.resGetOK(t, anaPath("/api/v1/analytics/queue-ops", "from", anaTime(from), "queue", queue))
	var ans struct {
		Queues []struct {
			QueueName string `json:"queueName"`
			anaCounts
		} `json:"queues"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatalf("queue-ops %s: %v", raw, err)
	}
	out := map[string]anaCounts{}
	for _, q := range ans.Queues {
		out[q.QueueName] = q.anaCounts
	}
	return out, raw
}

// anaSummary reads worker-metrics' summary over from..now of the brokers selected by
// workerId ("" = all).
type anaSummary struct {
	TotalPushMessages, TotalPopMessages, TotalAckMessages int64
	TotalPushRequests, TotalPopRequests, TotalAckRequests int64
	TotalDbErrors, TotalAckFailed, TotalDlq               int64
}

func (b *broker) anaWorkerSummary(t testing.TB, from time.Time, workerID string) (anaSummary, []byte) {
	t.Helper()
	raw := b.resGetOK(t, anaPath("/api/v1/analytics/worker-metrics", "from", anaTime(from), "workerId", workerID))
	var ans struct {
		Summary anaSummary `json:"summary"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatalf("worker-metrics %s: %v", raw, err)
	}
	return ans.Summary, raw
}
