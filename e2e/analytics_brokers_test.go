package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// TestAnalyticsOverview: GET /api/v1/resources/overview's throughput covers the last five
// whole minutes (a minute of 600 messages pushed and acknowledged three minutes ago:
// 2 per second each, the current minute's traffic left out) and its lag covers every
// (group, partition) position: group g holds p1's one message and has not read p2's two.
func TestAnalyticsOverview(t *testing.T) {
	t.Parallel()
	b := startBroker(t, anaEnv("ana-overview"))
	pgtest.InsertHistory(t, b.DB, time.Now().Add(-3*time.Minute), "ov.q", "ana-earlier", 600)
	pushed := time.Now()
	b.pushN(t, "ov.q", "p1", "a", 1)
	b.pushN(t, "ov.q", "p2", "b", 2)
	b.popMust(t, "/api/v1/pop/queue/ov.q/partition/p1?batch=1&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")
	elapse(t, pushed, 100*time.Millisecond) // time lag in seconds, rounded to 0.01: not 0

	raw := b.resGetOK(t, "/api/v1/resources/overview")
	anaLog(t, "/api/v1/resources/overview", raw)
	resWantKeys(t, raw, map[string][]string{"": resOverviewKeys, "throughput": {"ingestedPerSecond", "processedPerSecond"},
		"lag": {"time", "offset", "positions"}, "lag/time": {"avg", "median", "max"}, "lag/offset": {"avg", "median", "max"}})
	anaWantFields(t, raw, anaJoin(anaPrefixed("throughput", "ingestedPerSecond", "processedPerSecond"),
		anaPrefixed("lag/time", "avg", "median", "max"), anaPrefixed("lag/offset", "avg", "median", "max"),
		[]string{"lag/positions"}), nil)
	var o struct {
		Throughput struct{ IngestedPerSecond, ProcessedPerSecond float64 }
		Lag        struct {
			Offset    struct{ Avg, Median, Max float64 }
			Positions int64
		}
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	// This test's pushes (3 messages) may land in a minute that closes before the read:
	// 603 / 300 s still rounds to 2.01 at most.
	if ip := o.Throughput.IngestedPerSecond; ip != 2 && ip != 2.01 {
		t.Errorf("ingestedPerSecond %v, want 2 (600 messages over 300 s)", ip)
	}
	if o.Throughput.ProcessedPerSecond != 2 {
		t.Errorf("processedPerSecond %v, want 2", o.Throughput.ProcessedPerSecond)
	}
	if l := o.Lag; l.Positions != 2 || l.Offset.Avg != 1.5 || l.Offset.Median != 1.5 || l.Offset.Max != 2 {
		t.Errorf("lag %+v, want 2 positions lagging 1 and 2 messages", l)
	}
}

// anaSameMinute waits, when the minute is about to end, for the next one: what follows
// (a few seconds at most) then happens within one minute. Not in its first 2 s either:
// each broker swaps its counters out when its flush timer fires, a little after the
// boundary, and counts what came before that to the minute that ended.
func anaSameMinute(t testing.TB) time.Time {
	t.Helper()
	eventually(t, time.Minute, "a minute with 15 s left and past its first 2 s", func() bool {
		s := time.Now().Second()
		return s >= 2 && s < 45
	})
	return time.Now().Truncate(time.Minute)
}

// TestAnalyticsBrokersShareMinutes: three brokers on one database push, pop and ack in
// the same minute (broker i: i messages to its own partition), and two of them park a
// long poll at once: the queue's minute row is the sum of the three brokers' flushes,
// its parkedCount the sum of their parked polls, while system-metrics and worker-metrics
// list each broker apart.
func TestAnalyticsBrokersShareMinutes(t *testing.T) {
	t.Parallel()
	ids := []string{"mb-1", "mb-2", "mb-3"}
	first := startBroker(t, anaEnv(ids[0]))
	brokers := []*broker{first, startBrokerOn(t, first.DB, anaEnv(ids[1])), startBrokerOn(t, first.DB, anaEnv(ids[2]))}
	start := time.Now()
	minute := anaSameMinute(t)
	for i, b := range brokers {
		part := "p" + strconv.Itoa(i+1)
		b.pushN(t, "mb.q", part, part, i+1)
		p := b.popMust(t, "/api/v1/pop/queue/mb.q/partition/"+part+"?wait=false&batch=10")
		if len(p.Messages) != i+1 {
			t.Fatalf("%s popped %d messages, want %d", ids[i], len(p.Messages), i+1)
		}
		b.ackAll(t, p, "")
	}
	// Two long polls at once, on two brokers, until their timeout.
	polls := []<-chan popAnswer{}
	for _, b := range brokers[:2] {
		polls = append(polls, b.startPop(context.Background(), "/api/v1/pop/queue/mb.q/partition/idle?wait=true&timeout=1500"))
	}
	for _, p := range polls {
		if ans := <-p; ans.err != nil || ans.code != http.StatusNoContent {
			t.Fatalf("long poll: %d %s %v", ans.code, ans.body, ans.err)
		}
	}
	if now := time.Now().Truncate(time.Minute); !now.Equal(minute) {
		t.Fatalf("the traffic began in minute %s and ended in %s: it was to take a few seconds", minute, now)
	}
	m := anaShared{brokers: brokers, ids: ids, start: start, minute: minute, want: anaCounts{PushRequests: 3,
		PushMessages: 6, PopRequests: 5, PopMessages: 6, PopEmpty: 2, AckRequests: 3, AckSuccess: 6,
		PartitionsCreated: 3, LagCount: 6, ParkedCount: 2}}
	anaWait(t, "the three brokers' counts summed", func() (bool, string) {
		got, raw := first.anaQueueOps(t, start, "mb.q")
		return got["mb.q"] == m.want, string(raw)
	})
	t.Run("one minute row", m.row)
	t.Run("parked replicas", m.parked)
	t.Run("system-metrics", m.system)
	t.Run("worker-metrics", m.workers)
}

// anaShared is what TestAnalyticsBrokersShareMinutes did: its brokers and their ids, when
// it began, the minute of its traffic and the queue's counts.
type anaShared struct {
	brokers       []*broker
	ids           []string
	start, minute time.Time
	want          anaCounts
}

// row checks that the queue's minute row holds the three brokers' counts, and no other
// bucket anything.
func (m anaShared) row(t *testing.T) {
	raw := m.brokers[1].resGetOK(t, anaPath("/api/v1/analytics/queue-ops", "from", anaTime(m.start), "queue", "mb.q"))
	var ans struct {
		Series []struct {
			Bucket string
			anaCounts
		}
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	for _, p := range ans.Series {
		at := resMillis(t, p.Bucket)
		if at.Equal(m.minute) && p.anaCounts != m.want || !at.Equal(m.minute) && p.anaCounts != (anaCounts{}) {
			t.Errorf("bucket %s: %+v; want everything in %s: %+v", p.Bucket, p.anaCounts, m.minute, m.want)
		}
	}
}

// parked checks that each broker that parked a poll is a replica with its own parked
// count.
func (m anaShared) parked(t *testing.T) {
	raw := m.brokers[2].resGetOK(t, anaPath("/api/v1/analytics/queue-parked-replicas", "from", anaTime(m.start)))
	var ans struct {
		Series []struct {
			WorkerID    string
			ParkedCount int64
		}
		Replicas []struct{ WorkerID string }
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	parked := map[string]int64{}
	for _, p := range ans.Series {
		parked[p.WorkerID] = max(parked[p.WorkerID], p.ParkedCount)
	}
	replicas := resNames(ans.Replicas, func(r struct{ WorkerID string }) string { return r.WorkerID })
	if !slices.Equal(replicas, m.ids[:2]) || parked[m.ids[0]] != 1 || parked[m.ids[1]] != 1 || len(parked) != 2 {
		t.Errorf("replicas %v, most parked per broker %v; want mb-1 and mb-2 with 1 each", replicas, parked)
	}
}

// system checks that system-metrics lists each broker apart, each with its requests.
func (m anaShared) system(t *testing.T) {
	raw := m.brokers[0].resGetOK(t, anaPath("/api/v1/analytics/system-metrics", "from", anaTime(m.start)))
	var ans struct {
		ReplicaCount int
		Replicas     []struct {
			WorkerID   string
			TimeSeries []struct {
				Minutes int64
				Metrics struct{ Requests struct{ Count int64 } }
			}
		}
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ans.Replicas {
		got = append(got, r.WorkerID)
		var requests int64
		for _, p := range r.TimeSeries {
			requests += p.Metrics.Requests.Count
		}
		if requests == 0 {
			t.Errorf("replica %s answered no request: %s", r.WorkerID, raw)
		}
	}
	slices.Sort(got)
	if ans.ReplicaCount != 3 || !slices.Equal(got, m.ids) {
		t.Errorf("replicas %v (replicaCount %d), want %v", got, ans.ReplicaCount, m.ids)
	}
}

// workers checks that worker-metrics lists each broker, and selects each one's summary
// by workerId.
func (m anaShared) workers(t *testing.T) {
	_, raw := m.brokers[0].anaWorkerSummary(t, m.start, "")
	var ans struct {
		Workers []struct{ WorkerID string }
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatal(err)
	}
	workers := resNames(ans.Workers, func(w struct{ WorkerID string }) string { return w.WorkerID })
	if !slices.Equal(workers, m.ids) {
		t.Errorf("workers %v, want %v", workers, m.ids)
	}
	for i, id := range m.ids {
		n := int64(i + 1)
		got, _ := m.brokers[0].anaWorkerSummary(t, m.start, id)
		pops := int64(1)
		if i < 2 {
			pops = 2 // and its long poll
		}
		want := anaSummary{TotalPushMessages: n, TotalPopMessages: n, TotalAckMessages: n, TotalPushRequests: 1,
			TotalPopRequests: pops, TotalAckRequests: 1}
		if got != want {
			t.Errorf("summary of %s %+v, want %+v", id, got, want)
		}
	}
}

// TestAnalyticsRestart: a broker that flushes once a minute pushes, pops and acks, and
// stops: its final flush writes what it counted. A new broker with the same id on the
// same database adds its own traffic: the totals hold both, each once, and the history
// keeps one broker.
func TestAnalyticsRestart(t *testing.T) {
	t.Parallel()
	before := startBroker(t, anaEnv("rs", "METRICS_FLUSH_MS", "60000"))
	start := time.Now()
	roundTrip := func(b *broker, prefix string, n int) {
		b.pushN(t, "rs.q", "p", prefix, n)
		p := b.popMust(t, "/api/v1/pop/queue/rs.q/partition/p?wait=false&batch=10")
		if len(p.Messages) != n {
			t.Fatalf("popped %d, want %d", len(p.Messages), n)
		}
		b.ackAll(t, p, "")
	}
	roundTrip(before, "a", 3)
	if err := before.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	after := startBrokerOn(t, before.DB, anaEnv("rs"))
	first := anaCounts{PushRequests: 1, PushMessages: 3, PopRequests: 1, PopMessages: 3, AckRequests: 1, AckSuccess: 3,
		PartitionsCreated: 1, LagCount: 3}
	if got, raw := after.anaQueueOps(t, start, "rs.q"); got["rs.q"] != first {
		t.Fatalf("after the stop: %s; want the stopped broker's final flush: %+v", raw, first)
	}
	roundTrip(after, "b", 4)
	both := anaCounts{PushRequests: 2, PushMessages: 7, PopRequests: 2, PopMessages: 7, AckRequests: 2, AckSuccess: 7,
		PartitionsCreated: 1, LagCount: 7}
	anaWait(t, "both brokers' counts", func() (bool, string) {
		got, raw := after.anaQueueOps(t, start, "rs.q")
		return got["rs.q"] == both, string(raw)
	})
	// Several flushes later, still once each.
	elapse(t, time.Now(), 500*time.Millisecond)
	if got, raw := after.anaQueueOps(t, start, "rs.q"); got["rs.q"] != both {
		t.Errorf("later: %s, want %+v", raw, both)
	}
	got, raw := after.anaWorkerSummary(t, start, "rs")
	if got.TotalPushMessages != 7 || got.TotalPopMessages != 7 || got.TotalAckMessages != 7 || got.TotalPushRequests != 2 {
		t.Errorf("worker-metrics of rs: %s", raw)
	}
	var sys struct{ ReplicaCount int }
	raw = after.resGetOK(t, anaPath("/api/v1/analytics/system-metrics", "from", anaTime(start)))
	if json.Unmarshal(raw, &sys) != nil || sys.ReplicaCount != 1 {
		t.Errorf("system-metrics: %s, want the one broker rs", raw)
	}
}
