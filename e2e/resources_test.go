package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Shapes of the resources routes (docs/api.md §5.7), key by key in the documented order.
var (
	resListQueueKeys  = []string{"id", "name", "namespace", "task", "createdAt", "partitions", "retainedBytes", "messages", "segments"}
	resListMsgKeys    = []string{"total", "pending", "processing"}
	resSegmentsKeys   = []string{"segments", "messages"}
	resDetailKeys     = []string{"id", "name", "namespace", "task", "createdAt", "options", "partitions", "totals", "segments"}
	resPartitionKeys  = []string{"id", "name", "createdAt", "stats", "oldestMessage", "newestMessage"}
	resStatsKeys      = []string{"total", "pending", "processing", "completed", "failed", "deadLetter"}
	resDepthKeys      = []string{"queue", "group", "pending", "processing", "ready", "partitionsPending", "partitionsReady", "conflation", "effectivePending", "effectiveReady", "partitions"}
	resDepthPartKeys  = []string{"partition", "pending", "processing", "ready"}
	resOverviewKeys   = []string{"queues", "partitions", "namespaces", "tasks", "consumerGroups", "messages", "byNamespace", "throughput", "lag", "timestamp", "statsAge"}
	resNamespaceKeys  = []string{"namespace", "queues", "partitions", "messages"}
	resTaskKeys       = []string{"task", "queues", "partitions", "messages"}
	resKeyMessageKeys = []string{"total", "pending"}
	// resOptionKeys are the 21 options of docs/api.md §5.6, in its order.
	resOptionKeys = []string{"namespace", "task", "priority", "leaseTime", "retryLimit", "retryDelay", "maxSize", "ttl",
		"deadLetterQueue", "dlqAfterMaxRetries", "delayedProcessing", "windowBuffer", "retentionSeconds",
		"completedRetentionSeconds", "retentionEnabled", "encryptionEnabled", "maxWaitTimeSeconds", "minPopWaitTime",
		"dedupWindowSeconds", "retentionSinkHold", "retentionSinkHoldMaxSeconds"}
)

type resListMessages struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
}

type resSegments struct {
	Segments int64 `json:"segments"`
	Messages int64 `json:"messages"`
}

type resListQueue struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Namespace     string          `json:"namespace"`
	Task          string          `json:"task"`
	CreatedAt     string          `json:"createdAt"`
	Partitions    int64           `json:"partitions"`
	RetainedBytes int64           `json:"retainedBytes"`
	Messages      resListMessages `json:"messages"`
	Segments      resSegments     `json:"segments"`
}

type resStats struct {
	Total      int64  `json:"total"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Completed  int64  `json:"completed"`
	Failed     *int64 `json:"failed"`
	DeadLetter int64  `json:"deadLetter"`
}

type resPartition struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	CreatedAt     string   `json:"createdAt"`
	Stats         resStats `json:"stats"`
	OldestMessage *string  `json:"oldestMessage"`
	NewestMessage *string  `json:"newestMessage"`
}

type resDetail struct {
	ID         string         `json:"id"`
	Name       string         `json:"name"`
	Namespace  string         `json:"namespace"`
	Task       string         `json:"task"`
	CreatedAt  string         `json:"createdAt"`
	Options    map[string]any `json:"options"`
	Partitions []resPartition `json:"partitions"`
	Totals     resStats       `json:"totals"`
	Segments   resSegments    `json:"segments"`
}

type resDepthPartition struct {
	Partition  string `json:"partition"`
	Pending    int64  `json:"pending"`
	Processing int64  `json:"processing"`
	Ready      int64  `json:"ready"`
}

type resDepth struct {
	Queue             string              `json:"queue"`
	Group             *string             `json:"group"`
	Pending           int64               `json:"pending"`
	Processing        int64               `json:"processing"`
	Ready             int64               `json:"ready"`
	PartitionsPending int64               `json:"partitionsPending"`
	PartitionsReady   int64               `json:"partitionsReady"`
	Conflation        bool                `json:"conflation"`
	EffectivePending  int64               `json:"effectivePending"`
	EffectiveReady    int64               `json:"effectiveReady"`
	Partitions        []resDepthPartition `json:"partitions"`
}

type resKeyMessages struct {
	Total   int64 `json:"total"`
	Pending int64 `json:"pending"`
}

type resNamespace struct {
	Namespace  string         `json:"namespace"`
	Queues     int64          `json:"queues"`
	Partitions int64          `json:"partitions"`
	Messages   resKeyMessages `json:"messages"`
}

type resTask struct {
	Task       string         `json:"task"`
	Queues     int64          `json:"queues"`
	Partitions int64          `json:"partitions"`
	Messages   resKeyMessages `json:"messages"`
}

type resOverview struct {
	Queues         int64          `json:"queues"`
	Partitions     int64          `json:"partitions"`
	Namespaces     int64          `json:"namespaces"`
	Tasks          int64          `json:"tasks"`
	ConsumerGroups int64          `json:"consumerGroups"`
	Messages       resStats       `json:"messages"`
	ByNamespace    []resNamespace `json:"byNamespace"`
	// The history's (docs/api.md §5.11a; TestAnalyticsOverview checks them).
	Throughput struct {
		IngestedPerSecond  float64 `json:"ingestedPerSecond"`
		ProcessedPerSecond float64 `json:"processedPerSecond"`
	} `json:"throughput"`
	Lag struct {
		Time      resLagFigures `json:"time"`
		Offset    resLagFigures `json:"offset"`
		Positions int64         `json:"positions"`
	} `json:"lag"`
	Timestamp string `json:"timestamp"`
	StatsAge  int    `json:"statsAge"`
}

type resLagFigures struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// resGetOK GETs path, fails unless it answers 200 with a JSON body, and returns it.
func (b *broker) resGetOK(t testing.TB, path string) []byte {
	t.Helper()
	resp, raw := b.do(t, http.MethodGet, path, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %s", path, resp.StatusCode, raw)
	}
	wantJSONContentType(t, resp)
	return raw
}

// resDecode GETs path (200) into v, strictly: an unknown key fails.
func (b *broker) resDecode(t testing.TB, path string, v any) []byte {
	t.Helper()
	raw := b.resGetOK(t, path)
	if err := decodeStrict(raw, v); err != nil {
		t.Fatalf("GET %s: %s: %v", path, raw, err)
	}
	return raw
}

// resBadRequest GETs path and wants a 400 {"error": ...} naming param.
func (b *broker) resBadRequest(t testing.TB, path, param string) {
	t.Helper()
	resp, raw := b.doBad(t, http.MethodGet, path, nil)
	wantErrorBody(t, resp, raw, http.StatusBadRequest, "", param)
}

// resNotFound GETs path and wants 404 {"error":"Queue not found"}.
func (b *broker) resNotFound(t testing.TB, path string) {
	t.Helper()
	resp, raw := b.do(t, http.MethodGet, path, nil)
	if resp.StatusCode != http.StatusNotFound || string(raw) != `{"error":"Queue not found"}` {
		t.Fatalf("GET %s: %d %s, want 404 {\"error\":\"Queue not found\"}", path, resp.StatusCode, raw)
	}
	wantJSONContentType(t, resp)
}

// resKeysAt returns the keys, in order, of the JSON object at path inside raw: object
// keys, or array indexes as decimal strings.
func resKeysAt(t testing.TB, raw []byte, path ...string) []string {
	t.Helper()
	cur := json.RawMessage(raw)
	for _, p := range path {
		if len(cur) > 0 && cur[0] == '[' {
			var arr []json.RawMessage
			i, err := strconv.Atoi(p)
			if err != nil || json.Unmarshal(cur, &arr) != nil || i >= len(arr) {
				t.Fatalf("no element %s in %s", p, cur)
			}
			cur = arr[i]
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil {
			t.Fatalf("%s is not an object: %v", cur, err)
		}
		next, ok := obj[p]
		if !ok {
			t.Fatalf("no key %q in %s", p, cur)
		}
		cur = next
	}
	return jsonKeys(t, cur)
}

// resWantKeys checks the ordered keys of the objects at each path.
func resWantKeys(t testing.TB, raw []byte, want map[string][]string) {
	t.Helper()
	for path, keys := range want {
		var p []string
		if path != "" {
			p = strings.Split(path, "/")
		}
		if got := resKeysAt(t, raw, p...); !slices.Equal(got, keys) {
			t.Errorf("keys at %q: %v, want %v", path, got, keys)
		}
	}
}

// resMillis parses an admin timestamp: UTC with milliseconds.
func resMillis(t testing.TB, s string) time.Time {
	t.Helper()
	at, err := time.Parse("2006-01-02T15:04:05.000Z", s)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return at
}

func resNames[T any](items []T, name func(T) string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, name(it))
	}
	return out
}

func TestResourcesQueueList(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "rl.alpha", "p1", "a1", 3)
	b.pushN(t, "rl.alpha", "p2", "a2", 2)
	b.pushN(t, "rl.beta", "p1", "b1", 1)
	b.pushN(t, "other.gamma", "p1", "g1", 1)
	list := func(t *testing.T, query string) ([]resListQueue, []byte) {
		t.Helper()
		var out struct {
			Queues     []resListQueue `json:"queues"`
			Pagination struct {
				Limit, Offset, Total int
			} `json:"pagination"`
		}
		raw := b.resDecode(t, "/api/v1/resources/queues"+query, &out)
		if got := jsonKeys(t, raw); !slices.Equal(got, []string{"queues", "pagination"}) {
			t.Fatalf("keys %v, want [queues pagination]", got)
		}
		return out.Queues, raw
	}
	name := func(q resListQueue) string { return q.Name }

	t.Run("shape and counts", func(t *testing.T) {
		qs, raw := list(t, "?namespace=rl")
		resWantKeys(t, raw, map[string][]string{
			"queues/0": resListQueueKeys, "queues/0/messages": resListMsgKeys, "queues/0/segments": resSegmentsKeys,
		})
		if got := resNames(qs, name); !slices.Equal(got, []string{"rl.alpha", "rl.beta"}) {
			t.Fatalf("queues %v, want rl.alpha, rl.beta", got)
		}
		a := qs[0]
		if a.ID == "" || a.Namespace != "rl" || a.Task != "alpha" || a.Partitions != 2 ||
			a.Messages != (resListMessages{Total: 5, Pending: 5}) || a.Segments.Messages != 5 {
			t.Errorf("rl.alpha %+v", a)
		}
		// Estimates (README): at least one segment and at most one per message; some bytes.
		if a.Segments.Segments < 1 || a.Segments.Segments > 5 || a.RetainedBytes <= 0 {
			t.Errorf("rl.alpha estimates: %d segments, %d bytes", a.Segments.Segments, a.RetainedBytes)
		}
		if at := resMillis(t, a.CreatedAt); time.Since(at) > time.Hour || time.Until(at) > time.Minute {
			t.Errorf("createdAt %s", a.CreatedAt)
		}
	})
	t.Run("filters", func(t *testing.T) {
		for _, tt := range []struct {
			query string
			want  []string
		}{
			{"", []string{"other.gamma", "rl.alpha", "rl.beta"}},
			{"?task=beta", []string{"rl.beta"}},
			{"?namespace=rl&task=alpha", []string{"rl.alpha"}},
			{"?namespace=none", []string{}},
			{"?stats=cached", []string{"other.gamma", "rl.alpha", "rl.beta"}},
		} {
			if qs, _ := list(t, tt.query); !slices.Equal(resNames(qs, name), tt.want) {
				t.Errorf("%s: %v, want %v", tt.query, resNames(qs, name), tt.want)
			}
		}
	})
	t.Run("pages never exceed their limit", func(t *testing.T) {
		var walked []string
		for off := 0; off < 5; off++ {
			qs, _ := list(t, fmt.Sprintf("?limit=1&offset=%d", off))
			if len(qs) > 1 {
				t.Fatalf("limit=1 answered %d queues", len(qs))
			}
			walked = append(walked, resNames(qs, name)...)
		}
		if !slices.Equal(walked, []string{"other.gamma", "rl.alpha", "rl.beta"}) {
			t.Fatalf("pages of one: %v", walked)
		}
		if qs, _ := list(t, "?limit=0"); len(qs) != 0 {
			t.Fatalf("limit=0 answered %d queues", len(qs))
		}
		if qs, _ := list(t, "?limit=1000"); len(qs) != 3 {
			t.Fatalf("limit=1000 answered %d queues", len(qs))
		}
	})
	t.Run("bad parameters", func(t *testing.T) {
		for _, tt := range []struct{ query, param string }{
			{"?limit=abc", "limit"},
			{"?limit=-1", "limit"},
			{"?offset=x", "offset"},
			{"?offset=-1", "offset"},
			{"?stats=yes", "stats"},
		} {
			b.resBadRequest(t, "/api/v1/resources/queues"+tt.query, tt.param)
		}
	})
	t.Run("leased and acknowledged messages", func(t *testing.T) {
		p := b.popMust(t, "/api/v1/pop/queue/rl.alpha/partition/p1?batch=2&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")
		qs, _ := list(t, "?namespace=rl&task=alpha")
		if qs[0].Messages != (resListMessages{Total: 5, Pending: 5, Processing: 2}) {
			t.Fatalf("while leased: %+v", qs[0].Messages)
		}
		b.ackAll(t, p, "")
		// g acknowledged 2 of p1; p2 has no cursor of g: 1 + 2 pending.
		qs, _ = list(t, "?namespace=rl&task=alpha")
		if qs[0].Messages != (resListMessages{Total: 5, Pending: 3}) {
			t.Fatalf("after the ack: %+v", qs[0].Messages)
		}
	})
}

func TestResourcesQueueDetail(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.configure(t, `{"queue":"rd.orders","options":{"leaseTime":120,"priority":5,"retentionSinkHold":"s3"}}`)
	b.pushN(t, "rd.orders", "p1", "o1", 2)
	b.pushN(t, "rd.orders", "p2", "o2", 1)
	detail := func(t *testing.T, path string) (resDetail, []byte) {
		t.Helper()
		var d resDetail
		raw := b.resDecode(t, path, &d)
		return d, raw
	}

	t.Run("shape", func(t *testing.T) {
		d, raw := detail(t, "/api/v1/resources/queues/rd.orders")
		resWantKeys(t, raw, map[string][]string{
			"": resDetailKeys, "options": resOptionKeys, "partitions/0": resPartitionKeys,
			"partitions/0/stats": resStatsKeys, "totals": resStatsKeys, "segments": resSegmentsKeys,
		})
		if d.ID == "" || d.Name != "rd.orders" || d.Namespace != "rd" || d.Task != "orders" {
			t.Errorf("identity %+v", d)
		}
		resMillis(t, d.CreatedAt)
		for k, v := range map[string]any{"namespace": "rd", "task": "orders", "leaseTime": 120.0, "priority": 5.0,
			"retryLimit": 3.0, "deadLetterQueue": true, "retentionSinkHold": "s3", "dedupWindowSeconds": 3600.0} {
			if d.Options[k] != v {
				t.Errorf("options.%s = %v, want %v", k, d.Options[k], v)
			}
		}
		if d.Totals != (resStats{Total: 3, Pending: 3}) || d.Segments.Messages != 3 || d.Segments.Segments < 1 || d.Segments.Segments > 3 {
			t.Errorf("totals %+v, segments %+v", d.Totals, d.Segments)
		}
		if got := resNames(d.Partitions, func(p resPartition) string { return p.Name }); !slices.Equal(got, []string{"p1", "p2"}) {
			t.Fatalf("partitions %v", got)
		}
		p1 := d.Partitions[0]
		if p1.ID == "" || p1.Stats != (resStats{Total: 2, Pending: 2}) || p1.OldestMessage == nil || p1.NewestMessage == nil {
			t.Fatalf("p1 %+v", p1)
		}
		if old, recent := resMillis(t, *p1.OldestMessage), resMillis(t, *p1.NewestMessage); old.After(recent) || time.Since(old) > time.Hour {
			t.Errorf("p1 oldest %s, newest %s", *p1.OldestMessage, *p1.NewestMessage)
		}
		if string(rawFailed(t, raw)) != "null" {
			t.Errorf("totals.failed is %s, want null (no failure counter is kept)", rawFailed(t, raw))
		}
	})
	t.Run("dead letter", func(t *testing.T) {
		p := b.popMust(t, "/api/v1/pop/queue/rd.orders/partition/p2?batch=1&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")
		if r := b.ackAll(t, p, "dlq"); !r[0].DLQ {
			t.Fatalf("ack dlq: %+v", r[0])
		}
		d, _ := detail(t, "/api/v1/resources/queues/rd.orders")
		if d.Partitions[1].Stats != (resStats{Total: 1, DeadLetter: 1}) {
			t.Errorf("p2 after its dead letter: %+v", d.Partitions[1].Stats)
		}
		// g's cursor on p1 is missing: p1 is still all pending.
		if d.Totals != (resStats{Total: 3, Pending: 2, DeadLetter: 1}) {
			t.Errorf("totals %+v", d.Totals)
		}
	})
	t.Run("partition pages", func(t *testing.T) {
		d, _ := detail(t, "/api/v1/resources/queues/rd.orders?limit=1&offset=1")
		if len(d.Partitions) != 1 || d.Partitions[0].Name != "p2" || d.Totals.Total != 3 {
			t.Fatalf("page %+v, totals %+v", d.Partitions, d.Totals)
		}
		b.resBadRequest(t, "/api/v1/resources/queues/rd.orders?limit=-5", "limit")
		b.resBadRequest(t, "/api/v1/resources/queues/rd.orders?offset=z", "offset")
	})
	t.Run("not found", func(t *testing.T) {
		b.resNotFound(t, "/api/v1/resources/queues/rd.nope")
		// A name no queue can have is refused for what it is, not looked up (params.go).
		b.resBadRequest(t, "/api/v1/resources/queues/"+url.PathEscape("bad\x01name"), "path parameter queue")
	})
	t.Run("names with a slash", func(t *testing.T) {
		for _, q := range []string{"team a/orders", "rd/depth"} {
			b.pushN(t, q, "p", "s", 1)
			d, _ := detail(t, "/api/v1/resources/queues/"+url.PathEscape(q))
			if d.Name != q || d.Totals.Total != 1 {
				t.Errorf("GET %q: %+v", q, d)
			}
		}
		// Sent with a real slash, /depth is the depth route of "rd", which does not exist.
		b.resNotFound(t, "/api/v1/resources/queues/rd/depth")
		var dp resDepth
		b.resDecode(t, "/api/v1/resources/queues/"+url.PathEscape("rd/depth")+"/depth", &dp)
		if dp.Queue != "rd/depth" || dp.Pending != 1 {
			t.Errorf("depth of rd/depth: %+v", dp)
		}
	})
}

// rawFailed is the raw value of totals.failed.
func rawFailed(t testing.TB, raw []byte) json.RawMessage {
	t.Helper()
	var top struct {
		Totals map[string]json.RawMessage `json:"totals"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	return top.Totals["failed"]
}

func TestResourcesDepth(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "dp", "p1", "a", 3)
	b.pushN(t, "dp", "p2", "b", 2)
	b.popMust(t, "/api/v1/pop/queue/dp/partition/p1?batch=2&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")
	// The cases run one after the other, not in parallel: a parallel subtest waits for a
	// free slot once its parent returns, and the counts rely on g's lease being live.
	g, other := "g", "other"
	tests := []struct {
		name, query string
		want        resDepth
	}{
		// Every group: g's cursor on p1 (nothing acked, 2 leased); p2 has no cursor.
		{"every group", "", resDepth{Queue: "dp", Pending: 5, Processing: 2, Ready: 3, PartitionsPending: 2,
			PartitionsReady: 2, EffectivePending: 5, EffectiveReady: 3,
			Partitions: []resDepthPartition{{"p1", 3, 2, 1}, {"p2", 2, 0, 2}}}},
		{"group g", "?group=g", resDepth{Queue: "dp", Group: &g, Pending: 5, Processing: 2, Ready: 3,
			PartitionsPending: 2, PartitionsReady: 2, EffectivePending: 5, EffectiveReady: 3,
			Partitions: []resDepthPartition{{"p1", 3, 2, 1}, {"p2", 2, 0, 2}}}},
		{"a group with no cursor owes everything", "?group=other", resDepth{Queue: "dp", Group: &other, Pending: 5, Ready: 5,
			PartitionsPending: 2, PartitionsReady: 2, EffectivePending: 5, EffectiveReady: 5,
			Partitions: []resDepthPartition{{"p1", 3, 0, 3}, {"p2", 2, 0, 2}}}},
		{"a page", "?limit=1&offset=1", resDepth{Queue: "dp", Pending: 5, Processing: 2, Ready: 3,
			PartitionsPending: 2, PartitionsReady: 2, EffectivePending: 5, EffectiveReady: 3,
			Partitions: []resDepthPartition{{"p2", 2, 0, 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d resDepth
			raw := b.resDecode(t, "/api/v1/resources/queues/dp/depth"+tt.query, &d)
			resWantKeys(t, raw, map[string][]string{"": resDepthKeys, "partitions/0": resDepthPartKeys})
			if d.Queue != tt.want.Queue || (d.Group == nil) != (tt.want.Group == nil) ||
				(d.Group != nil && *d.Group != *tt.want.Group) || d.Pending != tt.want.Pending ||
				d.Processing != tt.want.Processing || d.Ready != tt.want.Ready ||
				d.PartitionsPending != tt.want.PartitionsPending || d.PartitionsReady != tt.want.PartitionsReady ||
				d.Conflation || d.EffectivePending != tt.want.EffectivePending || d.EffectiveReady != tt.want.EffectiveReady ||
				!slices.Equal(d.Partitions, tt.want.Partitions) {
				t.Fatalf("depth %s\n got %+v\nwant %+v", raw, d, tt.want)
			}
		})
	}
	t.Run("group is null without one", func(t *testing.T) {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b.resGetOK(t, "/api/v1/resources/queues/dp/depth"), &top); err != nil || string(top["group"]) != "null" {
			t.Fatalf("group %s (%v), want null", top["group"], err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		b.resNotFound(t, "/api/v1/resources/queues/nope/depth")
		b.resBadRequest(t, "/api/v1/resources/queues/dp/depth?group=%01", "group")
		b.resBadRequest(t, "/api/v1/resources/queues/dp/depth?limit=-1", "limit")
	})
}

func TestResourcesOverviewNamespacesTasks(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "ov1.a", "p1", "x", 2)
	b.pushN(t, "ov1.b", "p1", "y", 1)
	b.pushN(t, "ov2.a", "p1", "z", 1)
	b.pushN(t, "plain", "p1", "w", 1)
	// g's first pop subscribes it to ov1.a (and leases one message).
	b.popMust(t, "/api/v1/pop/queue/ov1.a?batch=1&consumerGroup=g&subscriptionMode=all&leaseSeconds=3600")

	t.Run("overview", func(t *testing.T) {
		var o resOverview
		raw := b.resDecode(t, "/api/v1/resources/overview", &o)
		resWantKeys(t, raw, map[string][]string{"": resOverviewKeys, "messages": resStatsKeys,
			"byNamespace/0": resNamespaceKeys, "byNamespace/0/messages": resKeyMessageKeys})
		if o.Queues != 4 || o.Partitions != 4 || o.Namespaces != 2 || o.Tasks != 2 || o.ConsumerGroups != 1 ||
			o.Messages != (resStats{Total: 5, Pending: 5, Processing: 1}) || o.StatsAge != 0 {
			t.Errorf("overview %s", raw)
		}
		want := []resNamespace{{"ov1", 2, 2, resKeyMessages{3, 3}}, {"ov2", 1, 1, resKeyMessages{1, 1}}}
		if !slices.Equal(o.ByNamespace, want) {
			t.Errorf("byNamespace %+v, want %+v", o.ByNamespace, want)
		}
		if at := resMillis(t, o.Timestamp); time.Since(at) > time.Minute {
			t.Errorf("timestamp %s", o.Timestamp)
		}
	})
	t.Run("namespaces", func(t *testing.T) {
		var out struct {
			Namespaces []resNamespace `json:"namespaces"`
		}
		raw := b.resDecode(t, "/api/v1/resources/namespaces", &out)
		resWantKeys(t, raw, map[string][]string{"": {"namespaces"}, "namespaces/0": resNamespaceKeys,
			"namespaces/0/messages": resKeyMessageKeys})
		want := []resNamespace{{"ov1", 2, 2, resKeyMessages{3, 3}}, {"ov2", 1, 1, resKeyMessages{1, 1}}}
		if !slices.Equal(out.Namespaces, want) {
			t.Errorf("namespaces %+v, want %+v", out.Namespaces, want)
		}
		b.resDecode(t, "/api/v1/resources/namespaces?limit=1&offset=1", &out)
		if !slices.Equal(out.Namespaces, want[1:]) {
			t.Errorf("second page %+v", out.Namespaces)
		}
		b.resBadRequest(t, "/api/v1/resources/namespaces?limit=-1", "limit")
	})
	t.Run("tasks", func(t *testing.T) {
		var out struct {
			Tasks []resTask `json:"tasks"`
		}
		raw := b.resDecode(t, "/api/v1/resources/tasks", &out)
		resWantKeys(t, raw, map[string][]string{"": {"tasks"}, "tasks/0": resTaskKeys, "tasks/0/messages": resKeyMessageKeys})
		want := []resTask{{"a", 2, 2, resKeyMessages{3, 3}}, {"b", 1, 1, resKeyMessages{1, 1}}}
		if !slices.Equal(out.Tasks, want) {
			t.Errorf("tasks %+v, want %+v", out.Tasks, want)
		}
		b.resBadRequest(t, "/api/v1/resources/tasks?offset=-3", "offset")
	})
}

// TestAdminListingsShared: with QUEEN_ADMIN_SHARE_MS, identical listing requests inside
// the period get the first one's answer (a push does not show yet), a configure through
// this broker shows at once, and after the period the listing is read again.
func TestAdminListingsShared(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"QUEEN_ADMIN_SHARE_MS": "1500"})
	count := func(path string) int {
		t.Helper()
		code, raw := b.get(t, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, raw)
		}
		var v struct {
			Queues []json.RawMessage `json:"queues"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, raw)
		}
		return len(v.Queues)
	}
	const list = "/api/v1/resources/queues"
	b.push(t, map[string]any{"queue": "shared-a", "payload": 1})
	if n := count(list); n != 1 {
		t.Fatalf("first listing: %d queues, want 1", n)
	}
	at := time.Now()
	b.push(t, map[string]any{"queue": "shared-b", "payload": 1})
	if n := count(list); n != 1 && time.Since(at) < time.Second {
		t.Fatalf("listing inside the period: %d queues, want the shared answer (1)", n)
	}
	b.configure(t, `{"queue":"shared-c"}`)
	if n := count(list); n != 3 {
		t.Fatalf("listing after a configure: %d queues, want 3 (the configure forgets the listing)", n)
	}
	b.push(t, map[string]any{"queue": "shared-d", "payload": 1})
	elapse(t, time.Now(), 1500*time.Millisecond)
	if n := count(list); n != 4 {
		t.Fatalf("listing after the period: %d queues, want 4", n)
	}
}

// TestStatsRefresh: POST /api/v1/stats/refresh answers Queen's engine and queuesUpdated
// (the tenant's queues) and drops the shared listing answers, so a push that a shared
// listing does not show yet shows after it.
func TestStatsRefresh(t *testing.T) {
	t.Parallel()
	// A share period far longer than the test: only the refresh can make the listing
	// read again.
	b := startBroker(t, map[string]string{"QUEEN_ADMIN_SHARE_MS": "600000"})
	count := func() int {
		t.Helper()
		var v struct {
			Queues []json.RawMessage `json:"queues"`
		}
		if err := json.Unmarshal(b.resGetOK(t, "/api/v1/resources/queues"), &v); err != nil {
			t.Fatal(err)
		}
		return len(v.Queues)
	}
	b.push(t, map[string]any{"queue": "refresh-a", "payload": 1})
	if n := count(); n != 1 {
		t.Fatalf("first listing: %d queues, want 1", n)
	}
	b.push(t, map[string]any{"queue": "refresh-b", "payload": 1})
	if n := count(); n != 1 {
		t.Fatalf("shared listing: %d queues, want the shared answer (1)", n)
	}
	code, raw := b.post(t, "/api/v1/stats/refresh", "")
	if code != http.StatusOK {
		t.Fatalf("POST /api/v1/stats/refresh: %d %s", code, raw)
	}
	if got, want := jsonKeys(t, raw), []string{"engine", "queuesUpdated", "refreshed", "refreshedAt", "message"}; !slices.Equal(got, want) {
		t.Fatalf("answer keys %v, want %v", got, want)
	}
	var ans struct {
		Engine        string `json:"engine"`
		QueuesUpdated int64  `json:"queuesUpdated"`
		Refreshed     bool   `json:"refreshed"`
		RefreshedAt   string `json:"refreshedAt"`
		Message       string `json:"message"`
	}
	if err := decodeStrict(raw, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Engine != "segments" || ans.QueuesUpdated != 2 || !ans.Refreshed || !cgMilliTime.MatchString(ans.RefreshedAt) ||
		!strings.Contains(ans.Message, "watermark arithmetic") {
		t.Fatalf("answer %s", raw)
	}
	if n := count(); n != 2 {
		t.Fatalf("listing after the refresh: %d queues, want 2", n)
	}
}
