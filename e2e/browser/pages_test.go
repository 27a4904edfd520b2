package browser

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// seed gives the pages something to show: three queues with messages on several
// partitions, the group billing part-way through orders, and a dead letter of payments.
// It returns the number of messages pushed.
func seed(t *testing.T, b *broker) int {
	t.Helper()
	b.configure(t, "payments", map[string]any{"retryLimit": 0})
	pushed := 0
	for i := range 4 {
		payloads := make([]any, 5+3*i)
		for j := range payloads {
			payloads[j] = map[string]any{"orderId": 100*i + j, "total": 42 * (j + 1)}
		}
		b.push(t, "orders", fmt.Sprintf("cust-%d", i), payloads...)
		pushed += len(payloads)
	}
	b.push(t, "payments", "Default", map[string]any{"charge": 1}, map[string]any{"charge": 2})
	b.push(t, "emails", "Default", map[string]any{"to": "ada@example.com"})
	pushed += 3
	if p := b.pop(t, "orders", "billing", 4); p == nil {
		t.Fatal("seed: nothing to pop from orders")
	} else {
		b.ackAll(t, p, "completed")
	}
	p := b.pop(t, "payments", "", 1)
	if p == nil {
		t.Fatal("seed: nothing to pop from payments")
	}
	if a := b.ackAll(t, p, "failed"); !a[0].DLQ {
		t.Fatalf("seed: the failed ack of payments (retryLimit 0) did not dead-letter: %+v", a)
	}
	return pushed
}

// TestPagesLoad: every page loads its data without a console error or an uncaught
// exception, shows what seed made, and leaves a screenshot (the README shows the
// overview's and the queue page's).
func TestPagesLoad(t *testing.T) {
	b := startBroker(t, nil)
	pushed := seed(t, b)
	cases := []struct {
		name string
		path string
		want []string // selectors that must match once the data is in
		text string   // text the page must show ("" for none)
	}{
		{name: "overview", path: "/", want: []string{`svg[data-chart="throughput"]`, `[data-range="1h"]`}},
		{name: "queues", path: "/ui/queues", want: []string{`[data-sort]`}, text: "orders"},
		{name: "queue", path: "/ui/queues/orders", want: []string{`[data-action="delete-queue"]`}, text: "cust-3"},
		{name: "groups", path: "/ui/groups", want: []string{`tr[data-group="billing"][data-queue="orders"]`}},
		{name: "messages", path: "/ui/messages", text: "orders"},
		{name: "dlq", path: "/ui/dlq", want: []string{`tr[data-dlq-id][data-queue="payments"]`}},
		{name: "traces", path: "/ui/traces"},
		{name: "system", path: "/ui/system"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := openTab(t)
			if c.name == "overview" {
				// The screenshot shows the seeded traffic once a flush has written it.
				waitThroughput(tb, b.URL+"/", pushed)
			} else {
				tb.visit(b.URL + c.path)
			}
			if page := tb.attr("#page", "data-page"); page == "" {
				t.Errorf("%s: #page has no data-page", c.path)
			}
			for _, sel := range c.want {
				if tb.count(sel) == 0 {
					t.Errorf("%s: nothing matches %s\n%s", c.path, sel, tb.state())
				}
			}
			if c.text != "" {
				if body := eval[string](tb, `document.querySelector("#page").innerText`); !strings.Contains(body, c.text) {
					t.Errorf("%s: the page does not show %q:\n%s", c.path, c.text, body)
				}
			}
			tb.screenshot("dashboard-" + c.name)
		})
	}
}

// waitThroughput reloads the overview at url until its throughput chart counts at least
// n pushed messages (the history is flushed every METRICS_FLUSH_MS) and returns the count.
func waitThroughput(tb *tab, url string, n int) int {
	tb.t.Helper()
	total := -1
	tb.until(fmt.Sprintf("the throughput chart to count %d pushed messages", n), func() bool {
		tb.visit(url)
		v := tb.attr(`svg[data-chart="throughput"]`, "data-total")
		got, err := strconv.Atoi(v)
		if err != nil {
			tb.t.Fatalf("svg[data-chart=throughput] data-total=%q: want a count", v)
		}
		total = got
		return total >= n
	})
	return total
}

// TestOverviewChartShowsThroughput: messages pushed during the test appear in the
// overview's throughput chart after a flush (METRICS_FLUSH_MS=200).
func TestOverviewChartShowsThroughput(t *testing.T) {
	b := startBroker(t, nil)
	const n = 30
	for i := range 3 {
		payloads := make([]any, n/3)
		for j := range payloads {
			payloads[j] = map[string]any{"i": 10*i + j}
		}
		b.push(t, "throughput", fmt.Sprintf("p%d", i), payloads...)
	}
	tb := openTab(t)
	total := waitThroughput(tb, b.URL+"/", n)
	t.Logf("throughput chart: data-total=%d after %d pushes", total, n)
}

// TestAssetsRefuseDotDot: a path under /ui/assets that climbs out with .., plain or
// percent-encoded, answers 404 and never a file of the repository; the assets the
// overview links to are served.
func TestAssetsRefuseDotDot(t *testing.T) {
	b := startBroker(t, nil)
	cases := []struct{ name, path string }{
		{"plain", "/ui/assets/../../go.mod"},
		{"deep", "/ui/assets/../../../../../../etc/passwd"},
		{"encoded dots", "/ui/assets/%2e%2e/%2e%2e/go.mod"},
		{"encoded slashes", "/ui/assets/..%2f..%2fgo.mod"},
		{"all encoded", "/ui/assets/%2e%2e%2f%2e%2e%2fgo.mod"},
		{"backslashes", `/ui/assets/..\..\go.mod`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := rawGet(t, b.URL, c.path)
			if code != http.StatusNotFound {
				t.Errorf("GET %s: status %d, want 404: %.200s", c.path, code, body)
			}
			for _, leak := range []string{"module github.com/queen-go/queen", "root:"} {
				if strings.Contains(body, leak) {
					t.Errorf("GET %s: the answer holds a file outside the assets: %.200s", c.path, body)
				}
			}
		})
	}
	t.Run("linked assets", func(t *testing.T) {
		code, page := rawGet(t, b.URL, "/")
		if code != http.StatusOK {
			t.Fatalf("GET /: status %d: %.200s", code, page)
		}
		assets := assetRef.FindAllString(page, -1)
		if len(assets) == 0 {
			t.Fatalf("GET /: the shell links no /ui/assets/ file: %.500s", page)
		}
		for _, a := range assets {
			if code, body := rawGet(t, b.URL, a); code != http.StatusOK {
				t.Errorf("GET %s (linked from /): status %d: %.200s", a, code, body)
			}
		}
	})
}

// assetRef matches a reference to an asset in a page's HTML.
var assetRef = regexp.MustCompile(`/ui/assets/[A-Za-z0-9._/-]+`)

// rawGet sends GET with path exactly as written (no cleaning, no decoding, no redirect
// followed) and returns the status and body.
func rawGet(t *testing.T, base, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Path, req.URL.RawPath, req.URL.Opaque = "", "", path
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}
