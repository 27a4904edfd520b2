package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// anaQueue is the one queue of TestAnalyticsRoutes' traffic: its counters and the
// broker's are the same.
const anaQueue = "ana.main"

// anaTraffic runs the traffic of TestAnalyticsRoutes on b, through anaQueue only, and
// returns the counters it must leave in the history:
//
//   - pushes: 4 messages to p1, 2 to p2, 1 to p4 and 1 to p5 (p5's stays pending), and
//     one more to p1 while push maintenance spools it;
//   - pops and acks (retryLimit 1): 3 messages of p1 acked completed in one ack, the
//     fourth failed once (a retry) and again (dead-lettered, error "boom"), three empty
//     pops;
//   - a transaction: p2's first message acked and one message pushed to p3;
//   - group g holds p4's message (its lease stays live: the status' leases and the
//     overview's lag);
//   - a long poll parked on p1 until its timeout (an empty pop; the flushes meanwhile
//     sample it parked);
//   - a push rolled back in a transaction (counted nowhere but in PostgreSQL's rollbacks);
//   - pushes of one message each to "burst", without pause, until the pool is sampled
//     with a connection in use (anaBursts).
func anaTraffic(t *testing.T, b *broker) anaCounts {
	t.Helper()
	b.setOptions(t, anaQueue, map[string]any{"retryLimit": 1})
	pushed := time.Now()
	b.pushN(t, anaQueue, "p1", "a", 4)
	b.pushN(t, anaQueue, "p2", "b", 2)
	b.pushN(t, anaQueue, "p4", "held", 1)
	b.pushN(t, anaQueue, "p5", "pending", 1)
	// A push-to-pop lag of at least 50 ms, so that the lag figures are not 0 ms.
	elapse(t, pushed, 50*time.Millisecond)

	p1 := "/api/v1/pop/queue/" + anaQueue + "/partition/p1?wait=false&batch="
	first := b.popMust(t, p1+"3")
	wantTxns(t, first, "a-0", "a-1", "a-2")
	b.ackAll(t, first, "")
	retried := b.popMust(t, p1+"1")
	wantTxns(t, retried, "a-3")
	if r := b.ackAll(t, retried, "failed"); !r[0].Success || r[0].DLQ {
		t.Fatalf("first failure of a-3: %+v, want a retry", r[0])
	}
	again := b.popMust(t, p1+"1")
	wantTxns(t, again, "a-3")
	it := ackItemOf(again.Messages[0], "failed")
	it["error"] = "boom"
	if r := b.ackBatch(t, "", it); !r[0].Success || !r[0].DLQ {
		t.Fatalf("second failure of a-3: %+v, want a dead letter", r[0])
	}
	for range 3 {
		b.popEmpty(t, p1+"1")
	}
	anaTransactions(t, b)
	b.popMust(t, "/api/v1/pop/queue/"+anaQueue+"/partition/p4?wait=false&batch=1&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")
	// The long poll: parked for 1.5 s, then 204.
	poll := b.startPop(context.Background(), "/api/v1/pop/queue/"+anaQueue+"/partition/p1?wait=true&timeout=1500&batch=1")
	if ans := <-poll; ans.err != nil || ans.code != http.StatusNoContent {
		t.Fatalf("long poll: %d %s %v, want 204 at its timeout", ans.code, ans.body, ans.err)
	}
	anaSpool(t, b, pushed)
	bursts := anaBursts(t, b, pushed)

	return anaCounts{
		// 4 pushes, the transaction's, the spooled one, the bursts'
		PushRequests: 6 + bursts, PushMessages: 10 + bursts,
		PopRequests: 9, PopMessages: 7, PopEmpty: 4, // 5 pops with messages, 3 empty, the long poll
		AckRequests: 4, AckSuccess: 4, AckFailed: 2, DLQCount: 1, // 3 acks and the transaction's
		Transactions: 1, PartitionsCreated: 6, // p1 .. p5 and burst
		LagCount: 7, ParkedCount: 1,
	}
}

// anaTransactions acks p2's first message and pushes one to p3 in a transaction, then
// sends one that rolls back: it counts nothing, and PostgreSQL counts its rollback
// (postgres-stats' rollbacks).
func anaTransactions(t *testing.T, b *broker) {
	t.Helper()
	in := b.popMust(t, "/api/v1/pop/queue/"+anaQueue+"/partition/p2?wait=false&batch=1")
	code, r := b.txn(t, map[string]any{"operations": []any{
		map[string]any{"type": "ack", "transactionId": in.Messages[0].TransactionID,
			"partitionId": in.Messages[0].PartitionID, "leaseId": in.Messages[0].LeaseID},
		map[string]any{"type": "push", "items": []any{
			map[string]any{"queue": anaQueue, "partition": "p3", "transactionId": "t-0", "payload": map[string]any{"t": 0}}}},
	}})
	if code != http.StatusOK || !r.Success {
		t.Fatalf("transaction: %d %+v", code, r)
	}
	// A transaction id p1 holds.
	code, r = b.txn(t, map[string]any{"operations": []any{map[string]any{"type": "push", "items": []any{
		map[string]any{"queue": anaQueue, "partition": "p1", "transactionId": "a-0", "payload": 0}}}}})
	if code != http.StatusOK || r.Success {
		t.Fatalf("transaction of a held transaction id: %d %+v, want rolled back", code, r)
	}
}

// anaSpool pushes one message to p1 under push maintenance (spooled), waits for the
// history to sample it pending, and lets the spool drain.
func anaSpool(t *testing.T, b *broker, since time.Time) {
	t.Helper()
	if code, raw := b.post(t, "/api/v1/system/maintenance", `{"enabled":true}`); code != http.StatusOK {
		t.Fatalf("maintenance on: %d %s", code, raw)
	}
	if res := b.pushN(t, anaQueue, "p1", "spooled", 1); res[0].Status != "buffered" {
		t.Fatalf("push under maintenance: %+v, want buffered", res[0])
	}
	anaWait(t, "the history to see the spooled push pending", func() (bool, string) {
		raw := b.resGetOK(t, anaPath("/api/v1/analytics/worker-metrics", "from", anaTime(since)))
		var ans struct {
			TimeSeries []struct {
				MaxSpoolPending int64 `json:"maxSpoolPending"`
			} `json:"timeSeries"`
		}
		if err := json.Unmarshal(raw, &ans); err != nil {
			return false, err.Error()
		}
		for _, p := range ans.TimeSeries {
			if p.MaxSpoolPending > 0 {
				return true, ""
			}
		}
		return false, string(raw)
	})
	if code, raw := b.post(t, "/api/v1/system/maintenance", `{"enabled":false}`); code != http.StatusOK {
		t.Fatalf("maintenance off: %d %s", code, raw)
	}
	b.waitDrained(t, anaPatience)
}

// anaBursts pushes to anaQueue's partition "burst" from 8 goroutines at once, without
// pause, until a sample of the pool finds a connection in use (the light traffic before
// may slip between the samples), and returns how many pushes it sent, each of one
// message.
func anaBursts(t *testing.T, b *broker, since time.Time) int64 {
	t.Helper()
	var sent atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":"burst","payload":0}]}`, anaQueue)
				// Not under ctx: a push cut short would leave its outcome unknown.
				resp, raw, err := b.request(context.Background(), http.MethodPost, "/api/v1/push", strings.NewReader(body))
				if err != nil || resp.StatusCode != http.StatusCreated {
					t.Errorf("burst push: %v %s", err, raw)
					return
				}
				sent.Add(1)
			}
		})
	}
	stop := func() {
		cancel()
		wg.Wait()
	}
	defer stop()
	anaWait(t, "a sample of the pool with a connection in use", func() (bool, string) {
		raw := b.resGetOK(t, anaPath("/api/v1/analytics/system-metrics", "from", anaTime(since)))
		var ans struct {
			Replicas []struct {
				TimeSeries []struct {
					Metrics struct {
						Database struct {
							PoolActive struct{ Max float64 } `json:"pool_active"`
						}
					}
				}
			}
		}
		if err := json.Unmarshal(raw, &ans); err != nil {
			return false, err.Error()
		}
		for _, r := range ans.Replicas {
			for _, p := range r.TimeSeries {
				if p.Metrics.Database.PoolActive.Max > 0 {
					return true, ""
				}
			}
		}
		return false, string(raw)
	})
	stop()
	return sent.Load()
}

// TestAnalyticsRoutes: after anaTraffic on one broker, every route answers every field
// docs/api.md §5.11a lists for it, non-zero unless named allowed-zero, and the counts
// the traffic fixes exactly.
func TestAnalyticsRoutes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, anaEnv("ana-main"))
	start := time.Now()
	want := anaTraffic(t, b)
	anaWait(t, "the history to count the traffic exactly", func() (bool, string) {
		got, raw := b.anaQueueOps(t, start, "")
		return len(got) == 1 && got[anaQueue] == want, string(raw)
	})
	from := start.Add(-30 * time.Second)

	t.Run("queue-ops", func(t *testing.T) { anaCheckQueueOps(t, b, from, want) })
	t.Run("queue-lag", func(t *testing.T) { anaCheckQueueLag(t, b, from, want) })
	t.Run("queue-parked-replicas", func(t *testing.T) { anaCheckParked(t, b, from, want) })
	t.Run("system-metrics", func(t *testing.T) { anaCheckSystem(t, b, from, want) })
	t.Run("worker-metrics", func(t *testing.T) { anaCheckWorkers(t, b, from, want) })
	t.Run("status analytics", func(t *testing.T) { anaCheckStatusAnalytics(t, b, from, want) })
	t.Run("status", func(t *testing.T) { anaCheckStatus(t, b, from, want) })
	t.Run("postgres-stats", func(t *testing.T) { anaCheckPostgres(t, b, from, want) })
}

// anaCheckQueueOps checks queue-ops: every counter, summed over the buckets and per
// queue, and one series per queue with perQueue.
func anaCheckQueueOps(t *testing.T, b *broker, from time.Time, want anaCounts) {
	since := anaTime(from)
	path := anaPath("/api/v1/analytics/queue-ops", "from", since)
	raw := b.resGetOK(t, path)
	anaLog(t, path, raw)
	anaWantFields(t, raw, anaJoin(anaRangeFields, []string{"pointCount", "series/bucket", "series/queueName",
		"queues/queueName", "queues/partitionCount"}, anaPrefixed("series", anaCounterFields...),
		anaPrefixed("queues", anaCounterFields...)),
		map[string]string{"series/queueName": "summed over the selection: no one queue's name",
			"series/partitionsDeleted": whyDeleted, "queues/partitionsDeleted": whyDeleted})
	var ans struct {
		Series []anaCounts `json:"series"`
		Queues []struct {
			PartitionCount int64 `json:"partitionCount"`
		} `json:"queues"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	var sum anaCounts
	for _, p := range ans.Series {
		sum = anaAdd(sum, p)
	}
	sum.ParkedCount = min(sum.ParkedCount, 1) // a maximum per bucket: two buckets may both hold the poll
	if sum != want {
		t.Errorf("series summed %+v, want %+v", sum, want)
	}
	if len(ans.Queues) != 1 || ans.Queues[0].PartitionCount != want.PartitionsCreated {
		t.Errorf("queues %+v, want %s with its %d partitions", ans.Queues, anaQueue, want.PartitionsCreated)
	}
	perQueue := anaPath("/api/v1/analytics/queue-ops", "from", since, "perQueue", "true", "queue", anaQueue)
	anaWantFields(t, b.resGetOK(t, perQueue), []string{"series/queueName"}, nil)
}

// anaCheckQueueLag checks queue-lag: the pops' lag per bucket, the messages popped summed.
func anaCheckQueueLag(t *testing.T, b *broker, from time.Time, want anaCounts) {
	since := anaTime(from)
	path := anaPath("/api/v1/analytics/queue-lag", "from", since)
	raw := b.resGetOK(t, path)
	anaLog(t, path, raw)
	anaWantFields(t, raw, []string{"queueName", "popCount", "avgLagMs", "maxLagMs", "lagCount", "bucketTime",
		"bucketMinutes"}, nil)
	var points []struct {
		QueueName          string
		PopCount, LagCount int64
	}
	if err := json.Unmarshal(raw, &points); err != nil {
		t.Fatal(err)
	}
	var popped, measured int64
	for _, p := range points {
		if p.QueueName != anaQueue {
			t.Errorf("a point of queue %q", p.QueueName)
		}
		popped, measured = popped+p.PopCount, measured+p.LagCount
	}
	if popped != want.PopMessages || measured != want.LagCount {
		t.Errorf("popCount %d, lagCount %d summed, want %d and %d", popped, measured, want.PopMessages, want.LagCount)
	}
}

// anaCheckParked checks queue-parked-replicas: the long poll parked on the one broker.
func anaCheckParked(t *testing.T, b *broker, from time.Time, want anaCounts) {
	since := anaTime(from)
	path := anaPath("/api/v1/analytics/queue-parked-replicas", "from", since)
	raw := b.resGetOK(t, path)
	anaLog(t, path, raw)
	anaWantFields(t, raw, anaJoin(anaRangeFields, anaPrefixed("series", "bucket", "queueName", "hostname", "workerId",
		"parkedCount"), anaPrefixed("replicas", "hostname", "workerId")), nil)
	var ans struct {
		Series []struct {
			QueueName, WorkerID string
			ParkedCount         int64
		}
		Replicas []struct{ Hostname, WorkerID string }
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	most := int64(0)
	for _, p := range ans.Series {
		if p.QueueName != anaQueue || p.WorkerID != "ana-main" {
			t.Errorf("a point of %q on %q", p.QueueName, p.WorkerID)
		}
		most = max(most, p.ParkedCount)
	}
	if most != 1 || len(ans.Replicas) != 1 || ans.Replicas[0].WorkerID != "ana-main" {
		t.Errorf("most parked %d, replicas %+v; want 1 on ana-main", most, ans.Replicas)
	}
}

// anaCheckSystem checks system-metrics: the one broker's process figures; workerId selects.
func anaCheckSystem(t *testing.T, b *broker, from time.Time, want anaCounts) {
	since := anaTime(from)
	const whySpool = "pending at a minute's last sample: 0 once the spool drained"
	path := anaPath("/api/v1/analytics/system-metrics", "from", since)
	raw := b.resGetOK(t, path)
	anaLog(t, path, raw)
	m := "replicas/timeSeries/metrics"
	anaWantFields(t, raw, anaJoin(anaRangeFields, []string{"replicaCount", "pointCount"},
		anaPrefixed("replicas", "hostname", "port", "workerId"),
		anaPrefixed("replicas/timeSeries", "timestamp", "sampleCount", "minutes"),
		anaLeafFields(m+"/cpu", "user_us", "system_us"), anaLeafFields(m+"/memory", "rss_bytes", "virtual_bytes"),
		anaLeafFields(m+"/database", "pool_size", "pool_idle", "pool_active"),
		anaLeafFields(m+"/runtime", "goroutines"), anaLeafFields(m+"/spool", "pending"),
		anaPrefixed(m+"/requests", "count", "avgLatencyMs", "maxLatencyMs")),
		map[string]string{
			// Per minute, the spool's pending at the minute's last sample: 0 once
			// drained (max keeps the spooled push).
			m + "/spool/pending/avg": whySpool, m + "/spool/pending/min": whySpool, m + "/spool/pending/last": whySpool,
			m + "/database/pool_active/min": whyActive, m + "/database/pool_active/last": whyActive})
	var ans struct {
		ReplicaCount int
		Replicas     []struct{ WorkerID string }
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.ReplicaCount != 1 || len(ans.Replicas) != 1 || ans.Replicas[0].WorkerID != "ana-main" {
		t.Errorf("replicas %+v, want ana-main alone", ans)
	}
	other := b.resGetOK(t, anaPath("/api/v1/analytics/system-metrics", "from", since, "workerId", "nobody"))
	if err := json.Unmarshal(other, &ans); err != nil || ans.ReplicaCount != 0 {
		t.Errorf("workerId=nobody: %s", other)
	}
}

// anaCheckWorkers checks worker-metrics: the brokers' activity, the one broker, the
// queue's lag and the range's summary.
func anaCheckWorkers(t *testing.T, b *broker, from time.Time, want anaCounts) {
	since := anaTime(from)
	path := anaPath("/api/v1/analytics/worker-metrics", "from", since)
	raw := b.resGetOK(t, path)
	anaLog(t, path, raw)
	anaWantFields(t, raw, anaJoin(anaRangeFields, []string{"pointCount"},
		anaPrefixed("timeSeries", "timestamp", "pushMessages", "popMessages", "ackMessages", "pushRequests",
			"popRequests", "ackRequests", "pushPerSecond", "popPerSecond", "ackPerSecond", "avgLagMs", "maxLagMs",
			"lagCount", "dbErrors", "ackSuccess", "ackFailed", "dlqCount", "avgFreeSlots", "minFreeSlots",
			"dbConnections", "requests", "avgRequestLatencyMs", "maxRequestLatencyMs", "maxGoroutines",
			"maxSpoolPending"),
		anaPrefixed("workers", anaWorkerFields...), anaPrefixed("queues", "queueName", "popCount", "avgLagMs", "maxLagMs"),
		anaPrefixed("summary", "totalPushMessages", "totalPopMessages", "totalAckMessages", "totalPushRequests",
			"totalPopRequests", "totalAckRequests", "totalDbErrors", "totalAckFailed", "totalDlq")),
		map[string]string{"timeSeries/dbErrors": whyDBErrors, "summary/totalDbErrors": whyDBErrors})
	got, _ := b.anaWorkerSummary(t, from, "")
	wantSum := anaSummary{TotalPushMessages: want.PushMessages, TotalPopMessages: want.PopMessages,
		TotalAckMessages: want.AckSuccess + want.AckFailed, TotalPushRequests: want.PushRequests,
		TotalPopRequests: want.PopRequests, TotalAckRequests: want.AckRequests, TotalAckFailed: want.AckFailed,
		TotalDlq: want.DLQCount}
	if got != wantSum {
		t.Errorf("summary %+v, want %+v", got, wantSum)
	}
}

// anaCheckStatusAnalytics checks status/analytics: the throughput points and their
// totals, of every queue or of the ones selected.
func anaCheckStatusAnalytics(t *testing.T, b *broker, from time.Time, want anaCounts) {
	since := anaTime(from)
	path := anaPath("/api/v1/status/analytics", "from", since)
	raw := b.resGetOK(t, path)
	anaLog(t, path, raw)
	anaWantFields(t, raw, anaJoin(anaRangeFields, []string{"pointCount", "byQueues", "dataPoints/timestamp"},
		anaPrefixed("dataPoints", anaPointFields...), anaPrefixed("totals", anaPointFields...)),
		map[string]string{"byQueues": "false without a queue, namespace or task (checked true below)",
			"dataPoints/dbErrors": whyDBErrors, "totals/dbErrors": whyDBErrors,
			"dataPoints/dbPoolActive": whyPoolActive, "totals/dbPoolActive": whyPoolActive})
	for _, filter := range []string{"", "queue", "namespace"} {
		value := map[string]string{"queue": anaQueue, "namespace": "ana"}[filter]
		raw := b.resGetOK(t, anaPath("/api/v1/status/analytics", "from", since, filter, value))
		var ans struct {
			ByQueues bool
			Totals   anaPointCounts
		}
		if err := json.Unmarshal(raw, &ans); err != nil {
			t.Fatal(err)
		}
		if ans.ByQueues != (filter != "") || ans.Totals != anaPointCountsOf(want) {
			t.Errorf("filter %q: byQueues %v, totals %+v, want %v and %+v", filter, ans.ByQueues, ans.Totals,
				filter != "", anaPointCountsOf(want))
		}
	}
}

// anaCheckStatus checks GET /api/v1/status: the history's parts beside the current counts.
func anaCheckStatus(t *testing.T, b *broker, from time.Time, want anaCounts) {
	raw := b.resGetOK(t, "/api/v1/status")
	anaLog(t, "/api/v1/status", raw)
	anaWantFields(t, raw, anaJoin([]string{"timeRange/from", "timeRange/to", "queues/name", "queueCount",
		"partitionCount", "statsAge", "bucketMinutes", "pointCount", "byQueues", "throughput/timestamp"},
		anaPrefixed("throughput", anaPointFields...), anaPrefixed("workers", anaWorkerFields...),
		anaPrefixed("messages", "total", "pending", "processing", "completed", "failed", "deadLetter",
			"requests/push", "requests/pop", "requests/ack", "batchEfficiency/push", "batchEfficiency/pop",
			"batchEfficiency/ack"),
		anaPrefixed("leases", "active", "partitionsWithLeases", "totalBatchSize", "totalAcked"),
		anaPrefixed("deadLetterQueue", "totalMessages", "currentMessages", "affectedPartitions", "topErrors/error",
			"topErrors/count"),
		anaPrefixed("errors", "dbErrors", "ackFailed", "dlqMessages")),
		map[string]string{"statsAge": "always 0: computed at the request", "byQueues": "false without a filter",
			"messages/failed": "always null, as Queen's", "leases/totalAcked": "always 0, as Queen's",
			"throughput/dbErrors": whyDBErrors, "errors/dbErrors": whyDBErrors,
			"throughput/dbPoolActive": whyPoolActive})
	var st struct {
		Messages struct {
			Requests        struct{ Push, Pop, Ack int64 }
			BatchEfficiency struct{ Push, Pop, Ack float64 }
		}
		DeadLetterQueue struct {
			TotalMessages int64
			TopErrors     []struct {
				Error string
				Count int64
			}
		}
		Errors struct {
			DBErrors, AckFailed, DLQMessages int64
		}
		Workers []struct{ WorkerID string }
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	m := st.Messages
	if m.Requests.Push != want.PushRequests || m.Requests.Pop != want.PopRequests || m.Requests.Ack != want.AckRequests {
		t.Errorf("requests %+v", m.Requests)
	}
	// Messages per request, rounded to 0.01 (pops 7 / 9, acks 6 / 4).
	ratio := func(n, d int64) float64 { return math.Round(float64(n)/float64(d)*100) / 100 }
	if e := m.BatchEfficiency; e.Push != ratio(want.PushMessages, want.PushRequests) || e.Pop != 0.78 || e.Ack != 1.5 {
		t.Errorf("batchEfficiency %+v, want %v, 0.78, 1.5", e, ratio(want.PushMessages, want.PushRequests))
	}
	dlq := st.DeadLetterQueue
	if dlq.TotalMessages != 1 || len(dlq.TopErrors) != 1 || dlq.TopErrors[0].Error != "boom" || dlq.TopErrors[0].Count != 1 {
		t.Errorf("deadLetterQueue %+v, want boom once", dlq)
	}
	if st.Errors.AckFailed != want.AckFailed || st.Errors.DLQMessages != want.DLQCount {
		t.Errorf("errors %+v", st.Errors)
	}
	if len(st.Workers) != 1 || st.Workers[0].WorkerID != "ana-main" {
		t.Errorf("workers %+v, want ana-main", st.Workers)
	}
}

// anaCheckPostgres checks postgres-stats: PostgreSQL's statistics views.
func anaCheckPostgres(t *testing.T, b *broker, from time.Time, want anaCounts) {
	path := "/api/v1/analytics/postgres-stats"
	var raw []byte
	// The statistics views see a backend's work once it reports it (within about
	// 10 s of going idle).
	anaWait(t, "PostgreSQL's statistics to show dead tuples, updates and the rollback", func() (bool, string) {
		raw = b.resGetOK(t, path)
		var ans struct {
			DeadTuples, HotUpdates []json.RawMessage
			DatabaseCache          struct{ Rollbacks int64 }
		}
		return json.Unmarshal(raw, &ans) == nil && len(ans.DeadTuples) > 0 && len(ans.HotUpdates) > 0 &&
			ans.DatabaseCache.Rollbacks > 0, string(raw)
	})
	anaLog(t, path, raw)
	anaWantFields(t, raw, anaJoin([]string{"database", "timestamp", "activeQueries", "autovacuumStatus"},
		anaPrefixed("databaseCache", "database", "cacheHits", "diskReads", "cacheHitRatio", "commits", "rollbacks",
			"deadlocks", "conflicts", "tempFiles", "tempBytes", "sizeBytes", "size", "backends"),
		anaPrefixed("tableCache", "table", "cacheHits", "diskReads", "cacheHitRatio"),
		anaPrefixed("indexCache", "index", "table", "cacheHits", "diskReads", "cacheHitRatio"),
		anaPrefixed("cacheSummary/tables", "cacheHits", "diskReads", "hitRatio"),
		anaPrefixed("cacheSummary/indexes", "cacheHits", "diskReads", "hitRatio"),
		anaPrefixed("bufferConfig", "sharedBuffersSize", "sharedBuffersBytes", "effectiveCacheSize", "workMem",
			"maintenanceWorkMem", "settings/name", "settings/value", "settings/bytes"),
		anaPrefixed("tableSizes", "table", "totalSize", "tableSize", "indexSize", "totalBytes", "tableBytes", "indexBytes"),
		anaPrefixed("deadTuples", "table", "deadTuples", "liveTuples", "deadPercentage", "lastVacuum", "lastAutovacuum"),
		anaPrefixed("hotUpdates", "table", "totalUpdates", "hotUpdates", "hotUpdatePercentage")),
		map[string]string{
			"activeQueries": "no statement of another session runs 1 s or more during the test",
			"autovacuumStatus": "no table gathers autovacuum's 50 dead tuples: HOT pruning reclaims the history's " +
				"updates as they come",
			"databaseCache/deadlocks": "no deadlock happens",
			"databaseCache/conflicts": "recovery conflicts happen only on a standby",
			"databaseCache/tempFiles": "no query spills past work_mem", "databaseCache/tempBytes": "the same",
			"deadTuples/lastVacuum": "null until a VACUUM runs", "deadTuples/lastAutovacuum": "null until autovacuum runs",
		})
}

// anaAdd adds the sums of two counters (ParkedCount too: the caller clamps it).
func anaAdd(a, b anaCounts) anaCounts {
	return anaCounts{PushRequests: a.PushRequests + b.PushRequests, PushMessages: a.PushMessages + b.PushMessages,
		PopRequests: a.PopRequests + b.PopRequests, PopMessages: a.PopMessages + b.PopMessages,
		PopEmpty: a.PopEmpty + b.PopEmpty, AckRequests: a.AckRequests + b.AckRequests,
		AckSuccess: a.AckSuccess + b.AckSuccess, AckFailed: a.AckFailed + b.AckFailed, DLQCount: a.DLQCount + b.DLQCount,
		Transactions: a.Transactions + b.Transactions, PartitionsCreated: a.PartitionsCreated + b.PartitionsCreated,
		PartitionsDeleted: a.PartitionsDeleted + b.PartitionsDeleted, LagCount: a.LagCount + b.LagCount,
		ParkedCount: a.ParkedCount + b.ParkedCount}
}

// anaPointCounts are the counts of a throughput point (status' throughput, status/
// analytics' dataPoints and totals).
type anaPointCounts struct {
	Ingested, Processed, PopMessages, PopEmpty, AckFailed, DLQCount, Transactions int64
}

func anaPointCountsOf(c anaCounts) anaPointCounts {
	return anaPointCounts{Ingested: c.PushMessages, Processed: c.AckSuccess + c.AckFailed, PopMessages: c.PopMessages,
		PopEmpty: c.PopEmpty, AckFailed: c.AckFailed, DLQCount: c.DLQCount, Transactions: c.Transactions}
}
