package e2e

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// Shapes of the status routes (docs/api.md §5.11; GET /api/v1/status is ours, README).
var (
	statusKeys = []string{"timeRange", "queues", "queueCount", "partitionCount", "messages", "leases", "deadLetterQueue", "statsAge",
		"bucketMinutes", "pointCount", "byQueues", "throughput", "workers", "errors"} // the last six: the history's
	statusMessagesKeys    = append(slices.Clone(resStatsKeys), "requests", "batchEfficiency")
	statusActiveQueueKeys = []string{"id", "name", "namespace", "task", "partitions", "totalConsumed"}
	statusLeasesKeys      = []string{"active", "partitionsWithLeases", "totalBatchSize", "totalAcked"}
	statusDLQKeys         = []string{"totalMessages", "currentMessages", "affectedPartitions", "topErrors"}
	statusQueueKeys       = []string{"id", "name", "namespace", "task", "createdAt", "partitions", "messages"}
	statusQueueMsgKeys    = []string{"total", "pending", "processing", "completed", "deadLetter"}
	statusDetailKeys      = []string{"queue", "partitions", "totals"}
	statusDetailQueueKeys = []string{"id", "name", "namespace", "task", "priority", "createdAt", "config"}
	statusConfigKeys      = []string{"leaseTime", "retryLimit", "retryDelay", "ttl", "maxQueueSize", "deadLetterQueue"}
	statusPartitionKeys   = []string{"id", "name", "createdAt", "messages", "stats", "cursor", "lastActivity", "oldestMessage", "newestMessage"}
	sharedStateKeys       = []string{"enabled", "reason", "maintenance_mode", "pop_maintenance_mode", "hotlist", "peerHints"}
)

type statusReport struct {
	TimeRange struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"timeRange"`
	Queues []struct {
		ID            string `json:"id"`
		Name          string `json:"name"`
		Namespace     string `json:"namespace"`
		Task          string `json:"task"`
		Partitions    int64  `json:"partitions"`
		TotalConsumed int64  `json:"totalConsumed"`
	} `json:"queues"`
	QueueCount     int64 `json:"queueCount"`
	PartitionCount int64 `json:"partitionCount"`
	Messages       struct {
		resStats
		// The history's (docs/api.md §5.11a; TestAnalyticsRoutes checks them).
		Requests        struct{ Push, Pop, Ack int64 }   `json:"requests"`
		BatchEfficiency struct{ Push, Pop, Ack float64 } `json:"batchEfficiency"`
	} `json:"messages"`
	Leases struct {
		Active               int64 `json:"active"`
		PartitionsWithLeases int64 `json:"partitionsWithLeases"`
		TotalBatchSize       int64 `json:"totalBatchSize"`
		TotalAcked           int64 `json:"totalAcked"`
	} `json:"leases"`
	DeadLetterQueue struct {
		TotalMessages      int64 `json:"totalMessages"`
		CurrentMessages    int64 `json:"currentMessages"`
		AffectedPartitions int64 `json:"affectedPartitions"`
		TopErrors          []struct {
			Error string `json:"error"`
			Count int64  `json:"count"`
		} `json:"topErrors"`
	} `json:"deadLetterQueue"`
	StatsAge int `json:"statsAge"`
	// The history's parts (docs/api.md §5.11a; TestAnalyticsRoutes checks them).
	BucketMinutes int               `json:"bucketMinutes"`
	PointCount    int               `json:"pointCount"`
	ByQueues      bool              `json:"byQueues"`
	Throughput    []json.RawMessage `json:"throughput"`
	Workers       []json.RawMessage `json:"workers"`
	Errors        struct {
		DBErrors    int64 `json:"dbErrors"`
		AckFailed   int64 `json:"ackFailed"`
		DLQMessages int64 `json:"dlqMessages"`
	} `json:"errors"`
}

type statusQueueMessages struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	DeadLetter int64 `json:"deadLetter"`
}

type statusQueuesAnswer struct {
	Queues []struct {
		ID         string              `json:"id"`
		Name       string              `json:"name"`
		Namespace  string              `json:"namespace"`
		Task       string              `json:"task"`
		CreatedAt  string              `json:"createdAt"`
		Partitions int64               `json:"partitions"`
		Messages   statusQueueMessages `json:"messages"`
	} `json:"queues"`
	Pagination struct {
		Limit  int   `json:"limit"`
		Offset int   `json:"offset"`
		Total  int64 `json:"total"`
	} `json:"pagination"`
}

type statusQueueAnswer struct {
	Queue struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Task      string `json:"task"`
		Priority  int    `json:"priority"`
		CreatedAt string `json:"createdAt"`
		Config    struct {
			LeaseTime       int  `json:"leaseTime"`
			RetryLimit      int  `json:"retryLimit"`
			RetryDelay      int  `json:"retryDelay"`
			TTL             int  `json:"ttl"`
			MaxQueueSize    int  `json:"maxQueueSize"`
			DeadLetterQueue bool `json:"deadLetterQueue"`
		} `json:"config"`
	} `json:"queue"`
	Partitions []struct {
		ID        string   `json:"id"`
		Name      string   `json:"name"`
		CreatedAt string   `json:"createdAt"`
		Messages  resStats `json:"messages"`
		Stats     resStats `json:"stats"`
		Cursor    struct {
			TotalConsumed   int64 `json:"totalConsumed"`
			BatchesConsumed int64 `json:"batchesConsumed"`
		} `json:"cursor"`
		LastActivity  *string `json:"lastActivity"`
		OldestMessage *string `json:"oldestMessage"`
		NewestMessage *string `json:"newestMessage"`
	} `json:"partitions"`
	Totals struct {
		Messages resStats `json:"messages"`
	} `json:"totals"`
}

type sharedStateAnswer struct {
	Enabled            bool   `json:"enabled"`
	Reason             string `json:"reason"`
	MaintenanceMode    bool   `json:"maintenance_mode"`
	PopMaintenanceMode bool   `json:"pop_maintenance_mode"`
	Hotlist            struct {
		Enabled     bool   `json:"enabled"`
		Queues      int    `json:"queues"`
		Rings       int    `json:"rings"`
		Ready       int    `json:"ready"`
		Wheel       int    `json:"wheel"`
		MarksLocal  uint64 `json:"marksLocal"`
		MarksRemote uint64 `json:"marksRemote"`
		Reseeds     uint64 `json:"reseeds"`
	} `json:"hotlist"`
	PeerHints struct {
		Enabled  bool   `json:"enabled"`
		Sent     uint64 `json:"sent"`
		Received uint64 `json:"received"`
		Dropped  uint64 `json:"dropped"`
		Batches  uint64 `json:"batches"`
		Failures uint64 `json:"failures"`
	} `json:"peerHints"`
}

func TestStatusRoutes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.configure(t, `{"queue":"st.a","options":{"leaseTime":90,"retryLimit":4,"maxSize":7,"priority":2}}`)
	b.pushN(t, "st.a", "p1", "a1", 2)
	b.pushN(t, "st.a", "p2", "a2", 1)
	b.pushN(t, "st.b", "p1", "b1", 1)
	// g leases the first message of st.a/p1, then dead-letters st.a/p2's.
	b.popMust(t, "/api/v1/pop/queue/st.a/partition/p1?batch=1&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")
	d := b.popMust(t, "/api/v1/pop/queue/st.a/partition/p2?batch=1&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")
	if r := b.ackAll(t, d, "dlq"); !r[0].DLQ {
		t.Fatalf("ack dlq: %+v", r[0])
	}
	// The subtests run one after the other, not in parallel: a parallel subtest waits for
	// a free slot once its parent returns, and the counts rely on g's lease being live.

	t.Run("status", func(t *testing.T) {
		var st statusReport
		before := time.Now().Add(-time.Second)
		raw := b.resDecode(t, "/api/v1/status", &st)
		resWantKeys(t, raw, map[string][]string{"": statusKeys, "timeRange": {"from", "to"}, "queues/0": statusActiveQueueKeys,
			"messages": statusMessagesKeys, "leases": statusLeasesKeys, "deadLetterQueue": statusDLQKeys})
		from, to := resMillis(t, st.TimeRange.From), resMillis(t, st.TimeRange.To)
		if to.Before(before) || time.Since(to) > time.Minute || to.Sub(from) != time.Hour {
			t.Errorf("default range %s - %s, want the last hour", st.TimeRange.From, st.TimeRange.To)
		}
		if st.QueueCount != 2 || st.PartitionCount != 3 ||
			st.Messages.resStats != (resStats{Total: 4, Pending: 3, Processing: 1, Completed: 0, DeadLetter: 1}) ||
			st.Leases.Active != 1 || st.Leases.PartitionsWithLeases != 1 || st.Leases.TotalBatchSize != 1 ||
			st.DeadLetterQueue.CurrentMessages != 1 || st.DeadLetterQueue.AffectedPartitions != 1 || st.StatsAge != 0 {
			t.Errorf("status %s", raw)
		}
		if len(st.Queues) != 2 || st.Queues[0].Name != "st.a" || st.Queues[0].Partitions != 2 || st.Queues[1].Name != "st.b" {
			t.Errorf("queues %+v", st.Queues)
		}
	})
	t.Run("status filters and range", func(t *testing.T) {
		var st statusReport
		b.resDecode(t, "/api/v1/status?queue=st.b&from=2026-05-01T10:00:00Z&to=2026-05-01T12:30:00.5%2B02:00", &st)
		if st.QueueCount != 1 || st.Messages.Total != 1 || len(st.Queues) != 1 || st.Queues[0].Name != "st.b" {
			t.Errorf("queue=st.b: %+v", st)
		}
		if st.TimeRange.From != "2026-05-01T10:00:00.000Z" || st.TimeRange.To != "2026-05-01T10:30:00.500Z" {
			t.Errorf("range echoed as %+v", st.TimeRange)
		}
		b.resDecode(t, "/api/v1/status?namespace=st&task=a", &st)
		if st.QueueCount != 1 || st.Messages.Total != 3 {
			t.Errorf("namespace=st&task=a: %+v", st)
		}
		for _, tt := range []struct{ query, param string }{
			{"?from=yesterday", "from"},
			{"?to=2026-13-01T00:00:00Z", "to"},
			{"?from=2026-05-02T00:00:00Z&to=2026-05-01T00:00:00Z", "from"},
		} {
			b.resBadRequest(t, "/api/v1/status"+tt.query, tt.param)
		}
	})
	t.Run("status queues", func(t *testing.T) {
		var a statusQueuesAnswer
		raw := b.resDecode(t, "/api/v1/status/queues", &a)
		resWantKeys(t, raw, map[string][]string{"": {"queues", "pagination"}, "queues/0": statusQueueKeys,
			"queues/0/messages": statusQueueMsgKeys, "pagination": {"limit", "offset", "total"}})
		if a.Pagination.Limit != 100 || a.Pagination.Offset != 0 || a.Pagination.Total != 2 || len(a.Queues) != 2 {
			t.Fatalf("default page %s", raw)
		}
		q := a.Queues[0]
		if q.Name != "st.a" || q.Namespace != "st" || q.Task != "a" || q.Partitions != 2 ||
			q.Messages != (statusQueueMessages{Total: 3, Pending: 2, Processing: 1, DeadLetter: 1}) {
			t.Errorf("st.a %+v", q)
		}
		resMillis(t, q.CreatedAt)
		b.resDecode(t, "/api/v1/status/queues?limit=1&offset=1", &a)
		if len(a.Queues) != 1 || a.Queues[0].Name != "st.b" || a.Pagination.Total != 2 || a.Pagination.Limit != 1 {
			t.Errorf("second page of one %+v", a)
		}
		b.resDecode(t, "/api/v1/status/queues?task=b", &a)
		if len(a.Queues) != 1 || a.Queues[0].Name != "st.b" || a.Pagination.Total != 1 {
			t.Errorf("task=b %+v", a)
		}
		b.resDecode(t, "/api/v1/status/queues?offset=5", &a)
		if len(a.Queues) != 0 || a.Pagination.Total != 2 {
			t.Errorf("past the end %+v", a)
		}
		for _, tt := range []struct{ query, param string }{
			{"?limit=-1", "limit"}, {"?limit=1.5", "limit"}, {"?offset=-1", "offset"}, {"?from=x", "from"},
		} {
			b.resBadRequest(t, "/api/v1/status/queues"+tt.query, tt.param)
		}
	})
	t.Run("status queue", func(t *testing.T) {
		var a statusQueueAnswer
		raw := b.resDecode(t, "/api/v1/status/queues/st.a?includePartitions=true", &a)
		resWantKeys(t, raw, map[string][]string{"": statusDetailKeys, "queue": statusDetailQueueKeys,
			"queue/config": statusConfigKeys, "partitions/0": statusPartitionKeys, "partitions/0/messages": resStatsKeys,
			"partitions/0/stats": resStatsKeys, "partitions/0/cursor": {"totalConsumed", "batchesConsumed"},
			"totals": {"messages"}, "totals/messages": resStatsKeys})
		c := a.Queue.Config
		if a.Queue.Name != "st.a" || a.Queue.Priority != 2 || c.LeaseTime != 90 || c.RetryLimit != 4 || c.MaxQueueSize != 7 ||
			c.RetryDelay != 1000 || c.TTL != 3600 || !c.DeadLetterQueue {
			t.Errorf("queue %+v", a.Queue)
		}
		if len(a.Partitions) != 2 {
			t.Fatalf("partitions %+v", a.Partitions)
		}
		p1, p2 := a.Partitions[0], a.Partitions[1]
		if p1.Name != "p1" || p1.Stats != (resStats{Total: 2, Pending: 2, Processing: 1}) || p1.Messages != p1.Stats ||
			p1.Cursor.TotalConsumed != 0 || p1.LastActivity == nil || p1.OldestMessage == nil {
			t.Errorf("p1 %+v", p1)
		}
		// p2's one message went to the dead-letter queue: g's cursor is past it.
		if p2.Stats != (resStats{Total: 1, DeadLetter: 1}) || p2.Cursor.TotalConsumed != 1 || p2.Cursor.BatchesConsumed != 0 {
			t.Errorf("p2 %+v", p2)
		}
		if a.Totals.Messages != (resStats{Total: 3, Pending: 2, Processing: 1, DeadLetter: 1}) {
			t.Errorf("totals %+v", a.Totals.Messages)
		}
		b.resNotFound(t, "/api/v1/status/queues/nope")
		b.resBadRequest(t, "/api/v1/status/queues/st.a?includePartitions=maybe", "includePartitions")
		b.resDecode(t, "/api/v1/status/queues/"+url.PathEscape("st.a")+"?includePartitions=false&limit=1", &a)
		if len(a.Partitions) != 1 || a.Totals.Messages.Total != 3 {
			t.Errorf("one partition %+v", a)
		}
	})
	t.Run("GET /status", func(t *testing.T) {
		resp, raw := b.do(t, http.MethodGet, "/status", nil)
		if resp.StatusCode != http.StatusOK || string(raw) != `{"status":"ok","engine":"segments-go"}` {
			t.Fatalf("GET /status: %d %s", resp.StatusCode, raw)
		}
		wantJSONContentType(t, resp)
	})
}

// The shared state reports the peer hints, this broker's hot-list and the maintenance
// flags as stored in the database: a broker sees the flags another one set.
func TestSharedState(t *testing.T) {
	t.Parallel()
	a := startBroker(t, nil)
	other := startBrokerOn(t, a.DB, map[string]string{"QUEEN_PEER_HINTS": "false", "QUEEN_HOTLIST": "0"})
	state := func(t *testing.T, b *broker) sharedStateAnswer {
		t.Helper()
		var s sharedStateAnswer
		raw := b.resDecode(t, "/api/v1/system/shared-state", &s)
		if got := jsonKeys(t, raw); !slices.Equal(got, sharedStateKeys) {
			t.Fatalf("keys %v, want %v", got, sharedStateKeys)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatal(err)
		}
		if got := jsonKeys(t, top["peerHints"]); !slices.Equal(got, []string{"enabled", "sent", "received", "dropped", "batches", "failures"}) {
			t.Errorf("peerHints keys %v", got)
		}
		return s
	}

	s := state(t, a)
	if !s.Enabled || s.Reason != "peer_hints_listen_notify" || !s.PeerHints.Enabled || !s.Hotlist.Enabled ||
		s.MaintenanceMode || s.PopMaintenanceMode {
		t.Errorf("broker with hints: %+v", s)
	}
	o := state(t, other)
	if o.Enabled || o.Reason != "peer_hints_disabled" || o.PeerHints.Enabled || o.Hotlist.Enabled {
		t.Errorf("broker without hints: %+v", o)
	}

	setMaintenance(t, a, true)
	if code, body := a.post(t, "/api/v1/system/maintenance/pop", `{"enabled":true}`); code != http.StatusOK {
		t.Fatalf("pop maintenance: %d %s", code, body)
	}
	for _, b := range []*broker{a, other} {
		if s := state(t, b); !s.MaintenanceMode || !s.PopMaintenanceMode {
			t.Errorf("%s after both flags were set on %s: %+v", b.URL, a.URL, s)
		}
	}
	setMaintenance(t, a, false)
	if code, body := a.post(t, "/api/v1/system/maintenance/pop", `{"enabled":false}`); code != http.StatusOK {
		t.Fatalf("pop maintenance off: %d %s", code, body)
	}
	if s := state(t, other); s.MaintenanceMode || s.PopMaintenanceMode {
		t.Errorf("after both flags were cleared: %+v", s)
	}
}
