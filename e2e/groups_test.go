package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The consumer-group admin routes (docs/api.md §5.9): shapes, paging, errors, and cursor
// moves (seek, deletion, subscription update) under concurrent pops and acks.

// cgMilliTime is the wire form of the admin API's timestamps.
var cgMilliTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// The documented keys, in order.
var (
	cgSummaryKeys = []string{"name", "topics", "queueName", "members", "partitionCursors", "partitionsWithLag",
		"totalLag", "maxTimeLag", "state", "storage", "subscriptionMode", "subscriptionTimestamp",
		"subscriptionCreatedAt", "conflation"}
	cgLaggingKeys = []string{"consumer_group", "queue_name", "partition_name", "partition_id", "worker_id",
		"offset_lag", "time_lag_seconds", "lag_hours", "oldest_unconsumed_at", "last_consumed_at"}
	cgPartitionKeys = []string{"partition", "workerId", "lastConsumedAt", "totalConsumed", "offsetLag",
		"timeLagSeconds", "leaseActive"}
)

type cgSummary struct {
	Name                  string   `json:"name"`
	Topics                []string `json:"topics"`
	QueueName             string   `json:"queueName"`
	Members               int      `json:"members"`
	PartitionCursors      int      `json:"partitionCursors"`
	PartitionsWithLag     int      `json:"partitionsWithLag"`
	TotalLag              int64    `json:"totalLag"`
	MaxTimeLag            int64    `json:"maxTimeLag"`
	State                 string   `json:"state"`
	Storage               string   `json:"storage"`
	SubscriptionMode      *string  `json:"subscriptionMode"`
	SubscriptionTimestamp *string  `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt *string  `json:"subscriptionCreatedAt"`
	Conflation            bool     `json:"conflation"`
}

type cgLagging struct {
	ConsumerGroup      string  `json:"consumer_group"`
	QueueName          string  `json:"queue_name"`
	PartitionName      string  `json:"partition_name"`
	PartitionID        string  `json:"partition_id"`
	WorkerID           *string `json:"worker_id"`
	OffsetLag          int64   `json:"offset_lag"`
	TimeLagSeconds     int64   `json:"time_lag_seconds"`
	LagHours           float64 `json:"lag_hours"`
	OldestUnconsumedAt string  `json:"oldest_unconsumed_at"`
	LastConsumedAt     *string `json:"last_consumed_at"`
}

type cgPartition struct {
	Partition      string  `json:"partition"`
	WorkerID       *string `json:"workerId"`
	LastConsumedAt *string `json:"lastConsumedAt"`
	TotalConsumed  int64   `json:"totalConsumed"`
	OffsetLag      int64   `json:"offsetLag"`
	TimeLagSeconds int64   `json:"timeLagSeconds"`
	LeaseActive    bool    `json:"leaseActive"`
}

type cgQueue struct {
	Conflation bool          `json:"conflation"`
	Partitions []cgPartition `json:"partitions"`
}

// cgArray decodes a 200 JSON array strictly into out, checking each element's keys
// against keys (in order).
func cgArray[T any](t testing.TB, b *broker, path string, keys []string) []T {
	t.Helper()
	code, raw := b.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %s", path, code, raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
		t.Fatalf("GET %s: %s is not a JSON array (%v)", path, raw, err)
	}
	out := make([]T, len(elems))
	for i, e := range elems {
		if got := jsonKeys(t, e); !slices.Equal(got, keys) {
			t.Fatalf("GET %s: element %d keys %v, want %v", path, i, got, keys)
		}
		if err := decodeStrict(e, &out[i]); err != nil {
			t.Fatalf("GET %s: element %s: %v", path, e, err)
		}
	}
	return out
}

// cgGroups is GET /api/v1/consumer-groups[query].
func (b *broker) cgGroups(t testing.TB, query string) []cgSummary {
	t.Helper()
	return cgArray[cgSummary](t, b, "/api/v1/consumer-groups"+query, cgSummaryKeys)
}

// cgGroup is GET /api/v1/consumer-groups/{group}[query]: queue name -> its partitions.
func (b *broker) cgGroup(t testing.TB, group, query string) map[string]cgQueue {
	t.Helper()
	path := "/api/v1/consumer-groups/" + url.PathEscape(group) + query
	code, raw := b.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %s", path, code, raw)
	}
	var queues map[string]json.RawMessage
	if err := json.Unmarshal(raw, &queues); err != nil || queues == nil {
		t.Fatalf("GET %s: %s is not a JSON object (%v)", path, raw, err)
	}
	out := map[string]cgQueue{}
	for name, q := range queues {
		if got := jsonKeys(t, q); !slices.Equal(got, []string{"conflation", "partitions"}) {
			t.Fatalf("GET %s: queue %s keys %v", path, name, got)
		}
		var parts struct {
			Partitions []json.RawMessage `json:"partitions"`
		}
		if err := json.Unmarshal(q, &parts); err != nil {
			t.Fatal(err)
		}
		for _, p := range parts.Partitions {
			if got := jsonKeys(t, p); !slices.Equal(got, cgPartitionKeys) {
				t.Fatalf("GET %s: partition keys %v, want %v", path, got, cgPartitionKeys)
			}
		}
		var cq cgQueue
		if err := decodeStrict(q, &cq); err != nil {
			t.Fatalf("GET %s: queue %s: %v", path, q, err)
		}
		out[name] = cq
	}
	return out
}

// cgCall sends a request and checks its status and answer keys (in order); it returns
// the answer.
func (b *broker) cgCall(t testing.TB, method, path, body string, wantCode int, wantKeys ...string) map[string]any {
	t.Helper()
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	do := b.do
	if wantCode == http.StatusBadRequest {
		do = b.doBad // a refusal the test provokes: only its answer is checked
	}
	var resp *http.Response
	var raw []byte
	if rd == nil {
		resp, raw = do(t, method, path, nil)
	} else {
		resp, raw = do(t, method, path, rd)
	}
	if resp.StatusCode != wantCode {
		t.Fatalf("%s %s %s: status %d, want %d; body %s", method, path, body, resp.StatusCode, wantCode, raw)
	}
	if got := jsonKeys(t, raw); !slices.Equal(got, wantKeys) {
		t.Fatalf("%s %s: keys %v, want %v (%s)", method, path, got, wantKeys, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// cgBadRequest sends a request that must answer 400 with an error naming want.
func (b *broker) cgBadRequest(t testing.TB, method, path, body, want string) {
	t.Helper()
	out := b.cgCall(t, method, path, body, http.StatusBadRequest, "error")
	if msg, _ := out["error"].(string); !strings.Contains(msg, want) {
		t.Fatalf("%s %s %s: error %q does not name %q", method, path, body, msg, want)
	}
}

func cgSummaryOf(t testing.TB, gs []cgSummary, group, queue string) cgSummary {
	t.Helper()
	for _, g := range gs {
		if g.Name == group && g.QueueName == queue {
			return g
		}
	}
	t.Fatalf("no entry for group %s on queue %s in %+v", group, queue, gs)
	return cgSummary{}
}

func TestConsumerGroupRoutes(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	const q = "cg.shapes"
	b.pushN(t, q, "p1", "a", 3)
	b.pushN(t, q, "p2", "b", 2)
	// billing reads both partitions, acks p1, keeps its lease on p2.
	first := b.popMust(t, "/api/v1/pop/queue/"+q+"/partition/p1?batch=10&consumerGroup=billing&subscriptionMode=all")
	b.ackAll(t, first, "")
	held := b.popMust(t, "/api/v1/pop/queue/"+q+"/partition/p2?batch=10&consumerGroup=billing")
	// Queue mode consumed p1 (autoAck) and never popped p2.
	b.popMust(t, "/api/v1/pop/queue/"+q+"/partition/p1?batch=10&autoAck=true")

	t.Run("list", func(t *testing.T) {
		gs := b.cgGroups(t, "")
		if len(gs) != 2 {
			t.Fatalf("%d entries, want 2 (billing and queue mode): %+v", len(gs), gs)
		}
		// Queue mode sorts first ('_' < 'b') and has no subscription.
		qm, bill := gs[0], gs[1]
		wantQM := cgSummary{Name: "__QUEUE_MODE__", Topics: []string{q}, QueueName: q, Members: 1, PartitionCursors: 1,
			PartitionsWithLag: 1, TotalLag: 2, MaxTimeLag: qm.MaxTimeLag, State: "Stable", Storage: "segments"}
		if !cgEqual(qm, wantQM) {
			t.Fatalf("queue mode %+v, want %+v", qm, wantQM)
		}
		if bill.SubscriptionMode == nil || *bill.SubscriptionMode != "all" || bill.SubscriptionTimestamp != nil ||
			bill.SubscriptionCreatedAt == nil || !cgMilliTime.MatchString(*bill.SubscriptionCreatedAt) {
			t.Fatalf("billing's subscription %+v", bill)
		}
		wantBill := bill
		wantBill.Name, wantBill.Topics, wantBill.QueueName, wantBill.Members, wantBill.PartitionCursors = "billing", []string{q}, q, 2, 2
		wantBill.PartitionsWithLag, wantBill.TotalLag, wantBill.State, wantBill.Storage, wantBill.Conflation = 1, 2, "Stable", "segments", false
		if !cgEqual(bill, wantBill) || bill.MaxTimeLag < 0 || bill.MaxTimeLag > 60 {
			t.Fatalf("billing %+v", bill)
		}
		// Pages.
		if gs := b.cgGroups(t, "?limit=1"); len(gs) != 1 || gs[0].Name != "__QUEUE_MODE__" {
			t.Fatalf("limit=1: %+v", gs)
		}
		if gs := b.cgGroups(t, "?limit=1&offset=1"); len(gs) != 1 || gs[0].Name != "billing" {
			t.Fatalf("limit=1&offset=1: %+v", gs)
		}
		if gs := b.cgGroups(t, "?offset=2"); len(gs) != 0 {
			t.Fatalf("offset=2: %+v", gs)
		}
		for query, param := range map[string]string{"?limit=abc": "limit", "?limit=-1": "limit",
			"?offset=x": "offset", "?offset=-1": "offset"} {
			b.cgBadRequest(t, http.MethodGet, "/api/v1/consumer-groups"+query, "", param)
		}
	})

	t.Run("describe", func(t *testing.T) {
		got := b.cgGroup(t, "billing", "")
		if len(got) != 1 || len(got[q].Partitions) != 2 || got[q].Conflation {
			t.Fatalf("billing: %+v", got)
		}
		p1, p2 := got[q].Partitions[0], got[q].Partitions[1]
		if p1.Partition != "p1" || p1.WorkerID != nil || p1.LeaseActive || p1.TotalConsumed != 3 || p1.OffsetLag != 0 ||
			p1.TimeLagSeconds != 0 || p1.LastConsumedAt == nil || !cgMilliTime.MatchString(*p1.LastConsumedAt) {
			t.Fatalf("p1 %+v", p1)
		}
		if p2.Partition != "p2" || p2.WorkerID == nil || *p2.WorkerID != held.LeaseID || !p2.LeaseActive ||
			p2.TotalConsumed != 0 || p2.OffsetLag != 2 || p2.TimeLagSeconds < 0 || p2.TimeLagSeconds > 60 {
			t.Fatalf("p2 %+v (lease %s)", p2, held.LeaseID)
		}
		// Queue mode's partition without a cursor is listed with its backlog.
		qm := b.cgGroup(t, "__QUEUE_MODE__", "")[q].Partitions
		if len(qm) != 2 || qm[1].Partition != "p2" || qm[1].OffsetLag != 2 || qm[1].TotalConsumed != 0 {
			t.Fatalf("queue mode %+v", qm)
		}
		if got := b.cgGroup(t, "billing", "?limit=1&offset=1"); len(got[q].Partitions) != 1 || got[q].Partitions[0].Partition != "p2" {
			t.Fatalf("second page %+v", got)
		}
		if got := b.cgGroup(t, "nobody", ""); len(got) != 0 {
			t.Fatalf("unknown group: %+v, want {}", got)
		}
		if code, raw := b.get(t, "/api/v1/consumer-groups/nobody"); code != http.StatusOK || string(raw) != "{}" {
			t.Fatalf("unknown group: %d %s", code, raw)
		}
		b.cgBadRequest(t, http.MethodGet, "/api/v1/consumer-groups/billing?limit=x", "", "limit")
		b.cgBadRequest(t, http.MethodGet, "/api/v1/consumer-groups/billing?limit=-1", "", "limit")
	})

	t.Run("lagging", func(t *testing.T) {
		// Nothing is an hour old (the default threshold).
		if got := cgArray[cgLagging](t, b, "/api/v1/consumer-groups/lagging", cgLaggingKeys); len(got) != 0 {
			t.Fatalf("default threshold: %+v", got)
		}
		got := cgArray[cgLagging](t, b, "/api/v1/consumer-groups/lagging?minLagSeconds=0", cgLaggingKeys)
		if len(got) != 2 {
			t.Fatalf("minLagSeconds=0: %+v, want billing and queue mode on p2", got)
		}
		for _, l := range got {
			if l.QueueName != q || l.PartitionName != "p2" || l.PartitionID != held.PartitionID || l.OffsetLag != 2 ||
				l.TimeLagSeconds < 0 || l.LagHours != 0 || !cgMilliTime.MatchString(l.OldestUnconsumedAt) {
				t.Fatalf("lagging row %+v", l)
			}
			switch l.ConsumerGroup {
			case "billing":
				if l.WorkerID == nil || *l.WorkerID != held.LeaseID || l.LastConsumedAt == nil {
					t.Fatalf("billing's row %+v", l)
				}
			case "__QUEUE_MODE__":
				if l.WorkerID != nil || l.LastConsumedAt != nil {
					t.Fatalf("queue mode's row %+v", l)
				}
			default:
				t.Fatalf("row of %s", l.ConsumerGroup)
			}
		}
		if got := cgArray[cgLagging](t, b, "/api/v1/consumer-groups/lagging?minLagSeconds=0&limit=1", cgLaggingKeys); len(got) != 1 {
			t.Fatalf("limit=1: %+v", got)
		}
		for query, param := range map[string]string{"minLagSeconds=abc": "minLagSeconds", "minLagSeconds=-1": "minLagSeconds",
			"limit=-1": "limit", "limit=1.5": "limit"} {
			b.cgBadRequest(t, http.MethodGet, "/api/v1/consumer-groups/lagging?"+query, "", param)
		}
	})

	t.Run("subscription", func(t *testing.T) {
		path := "/api/v1/consumer-groups/billing/subscription"
		out := b.cgCall(t, http.MethodPost, path, `{"subscriptionTimestamp":"2026-01-02T03:04:05.678+01:00"}`, http.StatusOK,
			"success", "consumerGroup", "newTimestamp", "rowsUpdated")
		if out["success"] != true || out["consumerGroup"] != "billing" || out["newTimestamp"] != "2026-01-02T02:04:05.678Z" ||
			out["rowsUpdated"] != 1.0 {
			t.Fatalf("answer %v", out)
		}
		bill := cgSummaryOf(t, b.cgGroups(t, ""), "billing", q)
		if *bill.SubscriptionMode != "timestamp" || bill.SubscriptionTimestamp == nil || *bill.SubscriptionTimestamp != "2026-01-02T02:04:05.678Z" {
			t.Fatalf("recorded subscription %+v", bill)
		}
		out = b.cgCall(t, http.MethodPost, "/api/v1/consumer-groups/nobody/subscription", `{"subscriptionTimestamp":"2026-01-02T00:00:00Z"}`,
			http.StatusOK, "success", "consumerGroup", "newTimestamp", "rowsUpdated")
		if out["rowsUpdated"] != 0.0 {
			t.Fatalf("unknown group: %v", out)
		}
		for body, param := range map[string]string{``: "subscriptionTimestamp", `{}`: "subscriptionTimestamp",
			`{"subscriptionTimestamp":null}`: "subscriptionTimestamp", `{"subscriptionTimestamp":"yesterday"}`: "subscriptionTimestamp",
			`{"subscriptionTimestamp":12}`: "subscriptionTimestamp", `[1]`: "bad body", `{`: "bad body"} {
			b.cgBadRequest(t, http.MethodPost, path, body, param)
		}
	})

	t.Run("seek errors", func(t *testing.T) {
		path := "/api/v1/consumer-groups/billing/queues/" + q + "/seek"
		for body, want := range map[string]string{``: "Must specify toEnd=true or a timestamp", `{}`: "Must specify toEnd=true or a timestamp",
			`{"toEnd":false}`: "Must specify toEnd=true or a timestamp", `{"toEnd":"yes"}`: "toEnd",
			`{"timestamp":"soon"}`: "timestamp", `{"toEnd":true,"timestamp":"2026-01-01T00:00:00Z"}`: "timestamp"} {
			b.cgBadRequest(t, http.MethodPost, path, body, want)
		}
		out := b.cgCall(t, http.MethodPost, "/api/v1/consumer-groups/billing/queues/nope/seek", `{"toEnd":true}`,
			http.StatusNotFound, "error")
		if out["error"] != "Queue not found" {
			t.Fatalf("unknown queue: %v", out)
		}
		for _, p := range []string{"/api/v1/consumer-groups/billing/queues/" + q + "/partitions/nope/seek",
			"/api/v1/consumer-groups/billing/queues/nope/partitions/p1/seek"} {
			out := b.cgCall(t, http.MethodPost, p, "", http.StatusNotFound, "success", "error")
			if out["success"] != false || out["error"] != "Partition not found" {
				t.Fatalf("unknown partition: %v", out)
			}
		}
		b.cgBadRequest(t, http.MethodPost, "/api/v1/consumer-groups/billing/queues/"+q+"/partitions/p1/seek", `{}`,
			"Must specify toEnd=true or a timestamp")
	})

	t.Run("seek", func(t *testing.T) {
		// One partition, empty body: to the end. billing's lease on p2 is cleared.
		out := b.cgCall(t, http.MethodPost, "/api/v1/consumer-groups/billing/queues/"+q+"/partitions/p2/seek", "", http.StatusOK,
			"success", "consumerGroup", "queueName", "partitionName", "seekToEnd", "targetTimestamp", "updated")
		if out["success"] != true || out["partitionName"] != "p2" || out["seekToEnd"] != true || out["targetTimestamp"] != nil ||
			out["updated"] != true {
			t.Fatalf("partition seek %v", out)
		}
		if p2 := b.cgGroup(t, "billing", "")[q].Partitions[1]; p2.LeaseActive || p2.WorkerID != nil || p2.OffsetLag != 0 || p2.TotalConsumed != 2 {
			t.Fatalf("p2 after the seek to its end: %+v", p2)
		}
		for _, r := range b.ackAll(t, held, "") {
			if r.Success || r.Error == nil || *r.Error != "invalid or expired lease" {
				t.Fatalf("ack of the lease the seek cleared: %+v", r)
			}
		}
		// The whole queue, back to the beginning: both partitions are read again.
		out = b.cgCall(t, http.MethodPost, "/api/v1/consumer-groups/billing/queues/"+q+"/seek", `{"timestamp":"2001-01-01T00:00:00Z"}`,
			http.StatusOK, "success", "consumerGroup", "queueName", "partitionsUpdated")
		if out["success"] != true || out["consumerGroup"] != "billing" || out["queueName"] != q || out["partitionsUpdated"] != 2.0 {
			t.Fatalf("queue seek %v", out)
		}
		p := b.popMust(t, "/api/v1/pop/queue/"+q+"?batch=10&partitions=2&consumerGroup=billing")
		got := txnsOf(p)
		slices.Sort(got)
		if want := []string{"a-0", "a-1", "a-2", "b-0", "b-1"}; !slices.Equal(got, want) {
			t.Fatalf("after the seek to the beginning: %v, want %v", got, want)
		}
		// A partition seek to a timestamp names it, in milliseconds.
		out = b.cgCall(t, http.MethodPost, "/api/v1/consumer-groups/billing/queues/"+q+"/partitions/p1/seek",
			`{"timestamp":"2001-01-01T00:00:00.5Z"}`, http.StatusOK,
			"success", "consumerGroup", "queueName", "partitionName", "seekToEnd", "targetTimestamp", "updated")
		if out["seekToEnd"] != false || out["targetTimestamp"] != "2001-01-01T00:00:00.500Z" {
			t.Fatalf("partition seek to a timestamp %v", out)
		}
	})

	t.Run("delete", func(t *testing.T) {
		base := "/api/v1/consumer-groups/billing"
		for _, v := range []string{"maybe", "TRUE", ""} {
			b.cgBadRequest(t, http.MethodDelete, base+"?deleteMetadata="+v, "", "deleteMetadata")
		}
		out := b.cgCall(t, http.MethodDelete, base+"/queues/nope", "", http.StatusNotFound, "error")
		if out["error"] != "Queue not found" {
			t.Fatalf("unknown queue: %v", out)
		}
		out = b.cgCall(t, http.MethodDelete, base+"/queues/"+q+"?deleteMetadata=no", "", http.StatusOK,
			"success", "consumerGroup", "queueName", "deletedPartitions", "metadataDeleted")
		if out["success"] != true || out["queueName"] != q || out["deletedPartitions"] != 2.0 || out["metadataDeleted"] != false {
			t.Fatalf("delete on one queue: %v", out)
		}
		// The subscription stayed: billing is still listed on the queue, without cursors.
		if bill := cgSummaryOf(t, b.cgGroups(t, ""), "billing", q); bill.PartitionCursors != 0 || bill.SubscriptionMode == nil {
			t.Fatalf("billing after deleting its cursors: %+v", bill)
		}
		for _, v := range []string{"1", "yes", "true"} {
			out = b.cgCall(t, http.MethodDelete, base+"?deleteMetadata="+v, "", http.StatusOK,
				"success", "consumerGroup", "deletedPartitions", "metadataDeleted")
			if out["success"] != true || out["consumerGroup"] != "billing" || out["deletedPartitions"] != 0.0 || out["metadataDeleted"] != true {
				t.Fatalf("delete everywhere: %v", out)
			}
		}
		if gs := b.cgGroups(t, ""); len(gs) != 1 || gs[0].Name != "__QUEUE_MODE__" {
			t.Fatalf("after deleting billing: %+v", gs)
		}
	})

	t.Run("unknown routes and methods", func(t *testing.T) {
		for _, tc := range []struct {
			method, path string
			code         int
		}{
			{http.MethodPut, "/api/v1/consumer-groups/billing", http.StatusMethodNotAllowed},
			{http.MethodPost, "/api/v1/consumer-groups", http.StatusMethodNotAllowed},
			{http.MethodGet, "/api/v1/consumer-groups/billing/queues/" + q + "/seek", http.StatusMethodNotAllowed},
			{http.MethodGet, "/api/v1/consumer-groups/billing/bogus", http.StatusNotFound},
			{http.MethodPost, "/api/v1/consumer-groups/billing/queues/" + q + "/partitions/p1/seek/now", http.StatusNotFound},
		} {
			resp, raw := b.doBad(t, tc.method, tc.path, nil)
			if resp.StatusCode != tc.code || !json.Valid(raw) {
				t.Errorf("%s %s: %d %s, want %d with a JSON body", tc.method, tc.path, resp.StatusCode, raw, tc.code)
			}
		}
	})

	t.Run("names with slashes", func(t *testing.T) {
		// Every name is one path segment: '/' travels as %2F.
		const queue, part, group = "ns/orders", "eu/west", "team/a"
		b.push(t, map[string]any{"queue": queue, "partition": part, "payload": map[string]any{"x": 1}})
		seek := "/api/v1/consumer-groups/" + url.PathEscape(group) + "/queues/" + url.PathEscape(queue) +
			"/partitions/" + url.PathEscape(part) + "/seek"
		out := b.cgCall(t, http.MethodPost, seek, `{"timestamp":"2001-01-01T00:00:00Z"}`, http.StatusOK,
			"success", "consumerGroup", "queueName", "partitionName", "seekToEnd", "targetTimestamp", "updated")
		if out["consumerGroup"] != group || out["queueName"] != queue || out["partitionName"] != part {
			t.Fatalf("seek %v", out)
		}
		got := b.cgGroup(t, group, "")
		if len(got) != 1 || len(got[queue].Partitions) != 1 || got[queue].Partitions[0].Partition != part ||
			got[queue].Partitions[0].OffsetLag != 1 {
			t.Fatalf("describe %+v", got)
		}
		out = b.cgCall(t, http.MethodDelete, "/api/v1/consumer-groups/"+url.PathEscape(group)+"/queues/"+url.PathEscape(queue),
			"", http.StatusOK, "success", "consumerGroup", "queueName", "deletedPartitions", "metadataDeleted")
		if out["consumerGroup"] != group || out["queueName"] != queue || out["deletedPartitions"] != 1.0 {
			t.Fatalf("delete %v", out)
		}
	})
}

// cgEqual compares summaries field by field.
func cgEqual(a, b cgSummary) bool {
	return cgJSON(a) == cgJSON(b)
}

// cgJSON is v as JSON (v is always encodable here).
func cgJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// cgConsumers are consumer goroutines of one group: each pops path in a loop and acks
// every message it receives (completed, under its lease), recording what it saw.
type cgConsumers struct {
	b     *broker
	group string
	path  string

	mu          sync.Mutex
	delivered   map[string]int       // transaction id -> deliveries
	committed   map[string]time.Time // transaction id -> createdAt (its commit time)
	ackFailures []string             // transaction id: error
	last        time.Time            // the latest delivery
	errs        []error

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// startCGConsumers starts n consumers popping path (a pop route with its query) as
// group; stop ends them.
func startCGConsumers(b *broker, group, path string, n int) *cgConsumers {
	ctx, cancel := context.WithCancel(context.Background())
	c := &cgConsumers{b: b, group: group, path: path, delivered: map[string]int{}, committed: map[string]time.Time{},
		cancel: cancel}
	for range n {
		c.wg.Go(func() { c.run(ctx) })
	}
	return c
}

func (c *cgConsumers) fail(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func (c *cgConsumers) run(ctx context.Context) {
	for ctx.Err() == nil {
		resp, raw, err := c.b.request(ctx, http.MethodGet, c.path, nil)
		if err != nil {
			if ctx.Err() == nil {
				c.fail(err)
			}
			return
		}
		p, err := decodePop(resp.StatusCode, raw)
		if err != nil {
			c.fail(err)
			return
		}
		if p == nil {
			continue
		}
		now := time.Now()
		items := make([]map[string]any, len(p.Messages))
		c.mu.Lock()
		c.last = now
		for i, m := range p.Messages {
			c.delivered[m.TransactionID]++
			if at, err := time.Parse(time.RFC3339Nano, m.CreatedAt); err == nil {
				c.committed[m.TransactionID] = at
			} else {
				c.errs = append(c.errs, fmt.Errorf("createdAt of %s: %v", m.TransactionID, err))
			}
			items[i] = ackItemOf(m, "completed")
		}
		c.mu.Unlock()
		body := cgJSON(map[string]any{"consumerGroup": c.group, "acknowledgments": items})
		// The ack is not cancelled with the consumers: a delivered batch is always acked.
		resp, raw, err = c.b.request(context.WithoutCancel(ctx), http.MethodPost, "/api/v1/ack/batch", strings.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusOK {
			c.fail(fmt.Errorf("ack: %v %s", err, raw))
			return
		}
		var res []ackResp
		if err := json.Unmarshal(raw, &res); err != nil {
			c.fail(err)
			return
		}
		c.mu.Lock()
		for i, r := range res {
			if !r.Success {
				msg := "?"
				if r.Error != nil {
					msg = *r.Error
				}
				c.ackFailures = append(c.ackFailures, p.Messages[i].TransactionID+": "+msg)
			}
		}
		c.mu.Unlock()
	}
}

// stop ends the consumers and fails the test on any error they met; later calls do
// nothing.
func (c *cgConsumers) stop(t testing.TB) {
	t.Helper()
	c.stopOnce.Do(func() {
		c.cancel()
		c.wg.Wait()
		for _, err := range c.errs {
			t.Errorf("consumer of %s: %v", c.group, err)
		}
	})
}

// seen returns a copy of the deliveries so far.
func (c *cgConsumers) seen() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.delivered)
}

// committedAt is the createdAt of a delivered message (zero when never delivered).
func (c *cgConsumers) committedAt(id string) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.committed[id]
}

// waitFor waits until every transaction id of want was delivered.
func (c *cgConsumers) waitFor(t testing.TB, within time.Duration, want []string) {
	t.Helper()
	eventually(t, within, fmt.Sprintf("%s to receive %d messages", c.group, len(want)), func() bool {
		seen := c.seen()
		for _, id := range want {
			if seen[id] == 0 {
				return false
			}
		}
		return true
	})
}

// cgCheckDeliveries fails unless the deliveries are exactly want (each once) plus, at
// most once each, messages of maybe.
func cgCheckDeliveries(t testing.TB, what string, seen map[string]int, want, maybe []string) {
	t.Helper()
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("%s: %s delivered %d times, want once", what, id, seen[id])
		}
	}
	for id, n := range seen {
		switch {
		case slices.Contains(want, id):
		case slices.Contains(maybe, id):
			if n > 1 {
				t.Errorf("%s: %s delivered %d times, want at most once", what, id, n)
			}
		default:
			t.Errorf("%s: %s delivered %d times, want never", what, id, n)
		}
	}
}

// cgIDs is prefix-from .. prefix-to for every partition name of parts ("<part>-<prefix>-k").
func cgIDs(parts []string, prefix string, from, to int) []string {
	var out []string
	for _, p := range parts {
		out = append(out, txnRange(p+"-"+prefix, from, to)...)
	}
	return out
}

// cgPush pushes n messages to each partition of parts, with transaction ids
// <part>-<prefix>-0 .. n-1, one request per partition.
func (b *broker) cgPush(t testing.TB, queue string, parts []string, prefix string, n int) {
	t.Helper()
	for _, p := range parts {
		b.pushN(t, queue, p, p+"-"+prefix, n)
	}
}

// A seek to the end while a consumer holds a lease, with other consumers of the group
// popping and acking: the backlog, the held span included, is skipped and never
// delivered; the holder's ack is refused; what is pushed after the seek reaches the
// group exactly once.
func TestConsumerGroupSeekToEndWhileLeased(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	const q, g = "cg.seek", "workers"
	parts := []string{"p0", "p1", "p2", "p3"}
	b.cgPush(t, q, parts, "old", 20)

	// The holder leases p0's first five messages and sits on them.
	held := b.popMust(t, "/api/v1/pop/queue/"+q+"/partition/p0?batch=5&leaseSeconds=120&consumerGroup="+g)
	wantTxns(t, held, txnRange("p0-old", 0, 4)...)

	// Three consumers drain everything else; p0 is leased, so they skip it.
	c := startCGConsumers(b, g, "/api/v1/pop/queue/"+q+"?batch=7&partitions=2&wait=true&timeout=500&consumerGroup="+g, 3)
	defer c.stop(t)
	c.waitFor(t, time.Minute, cgIDs(parts[1:], "old", 0, 19))
	eventually(t, time.Minute, "the consumers' acks", func() bool {
		for _, p := range b.cgGroup(t, g, "")[q].Partitions {
			if p.Partition != "p0" && (p.OffsetLag != 0 || p.LeaseActive) {
				return false
			}
		}
		return true
	})

	out := b.cgCall(t, http.MethodPost, "/api/v1/consumer-groups/"+g+"/queues/"+q+"/seek", `{"toEnd":true}`, http.StatusOK,
		"success", "consumerGroup", "queueName", "partitionsUpdated")
	if out["partitionsUpdated"] != 4.0 {
		t.Fatalf("seek: %v", out)
	}
	// The lease went with the seek: the holder's ack and extension are refused.
	for _, r := range b.ackAll(t, held, "") {
		if r.Success || r.Error == nil || *r.Error != "invalid or expired lease" {
			t.Fatalf("the holder's ack after the seek: %+v", r)
		}
	}
	if r := b.extend(t, held.LeaseID, ""); r.Renewed != 0 {
		t.Fatalf("the holder's lease was renewed after the seek: %+v", r)
	}
	got := b.cgGroup(t, g, "")[q].Partitions
	for _, p := range got {
		if p.OffsetLag != 0 || p.LeaseActive || p.WorkerID != nil || p.TotalConsumed != 20 {
			t.Fatalf("after the seek to the end: %+v", got)
		}
	}

	// What comes after the seek is delivered, once.
	b.cgPush(t, q, parts, "new", 5)
	c.waitFor(t, time.Minute, cgIDs(parts, "new", 0, 4))
	c.stop(t)
	// p0's backlog beyond the held span was never delivered; the held span only to its
	// holder (not counted here); everything else exactly once.
	want := append(cgIDs(parts[1:], "old", 0, 19), cgIDs(parts, "new", 0, 4)...)
	cgCheckDeliveries(t, "after the seek", c.seen(), want, nil)
	if len(c.ackFailures) != 0 {
		t.Fatalf("acks refused: %v", c.ackFailures)
	}
	if s := cgSummaryOf(t, b.cgGroups(t, ""), g, q); s.TotalLag != 0 || s.PartitionsWithLag != 0 || s.State != "Stable" {
		t.Fatalf("summary after the drain: %+v", s)
	}
}

// Deleting a group while its consumers are parked: the parked pops answer at once (long
// before their re-check: the deletion wakes them and the hot-list forgets the group's
// ring), and the group re-consumes per its subscription, each message once.
func TestConsumerGroupDeleteWhileParked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// deleteMetadata, and the subscription mode of the group's first pop; the
		// consumers always pop with subscriptionMode=all.
		deleteMetadata, firstMode string
		// round two: what the group reads again after the deletion
		again func(parts []string) []string
	}{
		{"metadata deleted: the next pop's subscription (all) re-reads everything", "true", "all",
			func(parts []string) []string { return append(cgIDs(parts, "old", 0, 3), cgIDs(parts, "new", 0, 3)...) }},
		{"metadata kept: the recorded subscription (new) re-reads what came after it", "false", "new",
			func(parts []string) []string { return cgIDs(parts, "new", 0, 3) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Parked pops re-check every 20 s and the hot-list's reseed floor runs every
			// minute: an answer within seconds of the deletion comes from its wake.
			b := startBroker(t, map[string]string{"POP_WAIT_INITIAL_INTERVAL_MS": "20000",
				"POP_WAIT_MAX_INTERVAL_MS": "20000", "QUEEN_HOTLIST_RESEED_MS": "60000"})
			const q, g = "cg.delete", "readers"
			parts := []string{"p0", "p1", "p2"}
			b.cgPush(t, q, parts, "old", 4)
			// The group's first contact records its subscription: all reads (and acks) the
			// old messages, new starts after them.
			first := b.pop(t, "/api/v1/pop/queue/"+q+"?batch=100&partitions=10&subscriptionMode="+tc.firstMode+"&consumerGroup="+g)
			if first != nil {
				b.ackAll(t, first, "")
			}
			b.cgPush(t, q, parts, "new", 4)

			path := "/api/v1/pop/queue/" + q + "?batch=100&partitions=1&wait=true&timeout=30000&subscriptionMode=all&consumerGroup=" + g
			c := startCGConsumers(b, g, path, 3)
			defer c.stop(t)
			c.waitFor(t, time.Minute, cgIDs(parts, "new", 0, 3))
			round1 := c.seen()
			// Every consumer acked and parked on the drained queue.
			eventually(t, time.Minute, "three parked pops", func() bool { return b.metric(t, "queen_pop_parked") >= 3 })

			deleted := time.Now()
			out := b.cgCall(t, http.MethodDelete, "/api/v1/consumer-groups/"+g+"?deleteMetadata="+tc.deleteMetadata, "",
				http.StatusOK, "success", "consumerGroup", "deletedPartitions", "metadataDeleted")
			if out["deletedPartitions"] != 3.0 || out["metadataDeleted"] != (tc.deleteMetadata == "true") {
				t.Fatalf("delete: %v", out)
			}
			again := tc.again(parts)
			eventually(t, time.Minute, "the group to read again", func() bool {
				seen := c.seen()
				for _, id := range again {
					if seen[id] < round1[id]+1 {
						return false
					}
				}
				return true
			})
			c.stop(t)
			seen := c.seen()
			round2 := map[string]int{}
			for id, n := range seen {
				if n > round1[id] {
					round2[id] = n - round1[id]
				}
			}
			cgCheckDeliveries(t, "round one", round1, cgIDs(parts, "new", 0, 3), cgIDs(parts, "old", 0, 3))
			cgCheckDeliveries(t, "round two", round2, again, nil)
			if len(c.ackFailures) != 0 {
				t.Fatalf("acks refused: %v", c.ackFailures)
			}
			// Round two was over long before any parked pop's 20 s re-check.
			if d := c.lastDelivery().Sub(deleted); d > 10*time.Second {
				t.Fatalf("round two took %v after the deletion: the parked pops were not woken", d)
			}
		})
	}
}

// lastDelivery is when the consumers last received a batch.
func (c *cgConsumers) lastDelivery() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// A subscription update, then new partitions, while the group and a control group
// consume: the group's existing cursor goes on where it was; a partition it meets after
// the update starts at the new instant (what was committed before it is skipped, what
// comes after is delivered); nothing is lost or delivered twice, and the control group
// reads everything.
func TestConsumerGroupSubscriptionUpdateThenNewPartition(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	const q = "cg.subscription"
	b.pushN(t, q, "p1", "p1-a", 5)
	path := func(g string) string {
		return "/api/v1/pop/queue/" + q + "?batch=3&partitions=2&wait=true&timeout=500&subscriptionMode=all&consumerGroup=" + g
	}
	grp := startCGConsumers(b, "analytics", path("analytics"), 2)
	defer grp.stop(t)
	ctl := startCGConsumers(b, "control", path("control"), 2)
	defer ctl.stop(t)
	grp.waitFor(t, time.Minute, txnRange("p1-a", 0, 4))
	ctl.waitFor(t, time.Minute, txnRange("p1-a", 0, 4))

	// The new instant is a few seconds ahead: what p2 receives before it is skipped.
	at := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
	out := b.cgCall(t, http.MethodPost, "/api/v1/consumer-groups/analytics/subscription",
		`{"subscriptionTimestamp":"`+at.Format(time.RFC3339Nano)+`"}`, http.StatusOK,
		"success", "consumerGroup", "newTimestamp", "rowsUpdated")
	if out["rowsUpdated"] != 1.0 || out["newTimestamp"] != at.Format("2006-01-02T15:04:05.000Z") {
		t.Fatalf("subscription update: %v", out)
	}
	b.pushN(t, q, "p2", "p2-before", 3) // a new partition, before the instant
	b.pushN(t, q, "p1", "p1-b", 2)      // the existing cursor's partition
	elapse(t, at, 200*time.Millisecond)
	b.pushN(t, q, "p2", "p2-after", 3)
	b.pushN(t, q, "p3", "p3-after", 2) // a partition created after the instant

	all := append(append(append(append(txnRange("p1-a", 0, 4), txnRange("p1-b", 0, 1)...),
		txnRange("p2-before", 0, 2)...), txnRange("p2-after", 0, 2)...), txnRange("p3-after", 0, 1)...)
	ctl.waitFor(t, time.Minute, all)
	// What the group must read, from the commit times the control group saw: all of p1
	// (its cursor there predates the update and goes on), and of the partitions it meets
	// after the update the messages committed at or after the new instant. p2's first
	// three were committed before it (unless this machine took 3 s to push them: then
	// the test checks less, and says so).
	var want []string
	for _, id := range all {
		if strings.HasPrefix(id, "p1-") || !ctl.committedAt(id).Before(at) {
			want = append(want, id)
		}
	}
	if !ctl.committedAt("p2-before-2").Before(at) {
		t.Logf("p2's early messages were committed after the instant %v: none of them is skipped", at)
	}
	grp.waitFor(t, time.Minute, want)
	grp.stop(t)
	ctl.stop(t)
	cgCheckDeliveries(t, "analytics", grp.seen(), want, nil)
	cgCheckDeliveries(t, "control", ctl.seen(), all, nil)
	// The group's cursors are all at their partitions' ends: nothing of p2 is left to
	// read, what it skipped included.
	if p := b.cgGroup(t, "analytics", "")[q].Partitions; len(p) != 3 || p[1].Partition != "p2" || p[1].OffsetLag != 0 ||
		p[1].TotalConsumed != 6 {
		t.Fatalf("analytics' partitions %+v", p)
	}
	for _, c := range []*cgConsumers{grp, ctl} {
		if len(c.ackFailures) != 0 {
			t.Fatalf("%s: acks refused: %v", c.group, c.ackFailures)
		}
	}
	s := cgSummaryOf(t, b.cgGroups(t, ""), "analytics", q)
	if s.SubscriptionMode == nil || *s.SubscriptionMode != "timestamp" || s.SubscriptionTimestamp == nil ||
		*s.SubscriptionTimestamp != at.Format("2006-01-02T15:04:05.000Z") || s.TotalLag != 0 {
		t.Fatalf("analytics' summary %+v", s)
	}
}
