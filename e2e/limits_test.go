package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Tests of the limit parameter of every admin listing: a limit above the route's
// maximum is clamped to it, not refused (Queen's CLI asks for 10,000 when it drains a
// queue, and expects a list), and the answer's pagination, where it has one, says what
// was applied. A negative or non-numeric limit is still a 400.

// limitRoutes are the routes with a limit, each with the page it applies to a limit
// above its maximum (0: its answer has no pagination to check).
var limitRoutes = []struct {
	path    string
	applied int
}{
	{"/api/v1/messages?queue=lim", 10000},
	{"/api/v1/dlq?queue=lim", 10000},
	{"/api/v1/resources/queues", 1000},
	{"/api/v1/status/queues", 1000},
	{"/api/v1/traces/names", 1000},
	{"/api/v1/traces/by-name/nothing", 1000},
	{"/api/v1/resources/queues/lim", 0},
	{"/api/v1/resources/queues/lim/depth", 0},
	{"/api/v1/resources/namespaces", 0},
	{"/api/v1/resources/tasks", 0},
	{"/api/v1/status/queues/lim", 0},
	{"/api/v1/consumer-groups", 0},
	{"/api/v1/consumer-groups/g", 0},
	{"/api/v1/consumer-groups/lagging", 0},
}

// withLimit appends limit=v to path.
func withLimit(path, v string) string {
	if strings.Contains(path, "?") {
		return path + "&limit=" + v
	}
	return path + "?limit=" + v
}

func TestLimitsAboveTheMaximumAreClamped(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "lim", "p", "m", 3)
	p := b.popMust(t, "/api/v1/pop/queue/lim?batch=1&consumerGroup=g")
	if res := b.ackBatch(t, "g", ackItemOf(p.Messages[0], "dlq")); !res[0].DLQ {
		t.Fatalf("dlq ack: %+v", res[0])
	}
	for _, r := range limitRoutes {
		for _, limit := range []string{"10000", "10001", "2147483647"} {
			t.Run(withLimit(r.path, limit), func(t *testing.T) {
				t.Parallel()
				code, body := b.get(t, withLimit(r.path, limit))
				if code != http.StatusOK {
					t.Fatalf("status %d, want 200: %s", code, body)
				}
				if r.applied == 0 {
					return
				}
				var page struct {
					Pagination *struct{ Limit, Offset int } `json:"pagination"`
				}
				if err := json.Unmarshal(body, &page); err != nil || page.Pagination == nil {
					t.Fatalf("answer %.300s: no pagination (%v)", body, err)
				}
				if page.Pagination.Limit != r.applied || page.Pagination.Offset != 0 {
					t.Fatalf("pagination %+v, want limit %d offset 0", *page.Pagination, r.applied)
				}
			})
		}
	}
}

func TestLimitsNegativeOrNotANumberAreRefused(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.pushN(t, "lim", "p", "m", 1)
	for _, r := range limitRoutes {
		for _, limit := range []string{"-1", "abc", "1.5"} {
			t.Run(withLimit(r.path, limit), func(t *testing.T) {
				t.Parallel()
				resp, body := b.doBad(t, http.MethodGet, withLimit(r.path, limit), nil)
				wantErrorBody(t, resp, body, http.StatusBadRequest, "", "limit")
			})
		}
	}
}

// Queen's CLI drains a queue with GET /api/v1/messages?limit=10000 and expects a list.
func TestLimitsQueenCLIDrain(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	const n = 1200 // more than the old maximum page of 1,000
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": "drain", "partition": fmt.Sprint("p", i%4),
			"transactionId": fmt.Sprint("d-", i), "payload": map[string]any{"i": i}}
	}
	b.push(t, items...)
	l := b.msgBrowse(t, "?queue=drain&limit=10000")
	if len(l.Messages) != n || l.Total != n || l.Pagination.Limit != 10000 {
		t.Fatalf("%d messages (total %d, pagination %+v), want all %d under limit 10000", len(l.Messages), l.Total,
			l.Pagination, n)
	}
}

// GET /api/v1/resources/queues lists every queue by default, as Queen does (up to the
// maximum page of 1,000), where it used to stop at 100.
func TestLimitsResourcesQueuesListsAllByDefault(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	const n = 150
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": fmt.Sprintf("all-%03d", i), "payload": i}
	}
	b.push(t, items...)
	var out struct {
		Queues     []resListQueue `json:"queues"`
		Pagination struct {
			Limit, Offset, Total int
		} `json:"pagination"`
	}
	b.resDecode(t, "/api/v1/resources/queues", &out)
	if len(out.Queues) != n || out.Pagination.Limit != 1000 || out.Pagination.Total != n {
		t.Fatalf("%d queues, pagination %+v; want all %d under limit 1000", len(out.Queues), out.Pagination, n)
	}
}
