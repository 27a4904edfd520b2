package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
)

const (
	// The shape at scale: scaleQueues queues of scalePartitions partitions, one message
	// each, and one queue (bigQueue) of bigPartitions, more than a page of its partitions.
	scaleQueues     = 1000
	scalePartitions = 100
	bigQueue        = "scale-big"
	bigPartitions   = 2000
	// fillBatch is the items of one push request: QUEEN_MAX_PUSH_ITEMS' default.
	fillBatch = 10000
	// fillClients push (and pop) at once: more than the two cores, so the broker always
	// has a request to work on while another's answer travels.
	fillClients = 4
	// scaleGroup reads every queue: the groups page lists scaleQueues pairs and the
	// partitions behind of all of them.
	scaleGroup = "scale-readers"
	// pageSize is the dashboard's rows per table page (dashboard.DefaultPageSize).
	pageSize = 50
	// maxPoints bounds the rows of a chart's data table (dashboard.MaxPoints).
	maxPoints = 360
	// loadBound bounds a page's load, from navigation until its data is in.
	loadBound = 10 * time.Second
	// busyBound bounds the time the page's main thread spends in tasks (parsing,
	// script, style, layout, paint) during one load: a frozen page runs far longer.
	busyBound = 3 * time.Second
)

// scaleQueue is the name of the i-th queue of the fill.
func scaleQueue(i int) string { return fmt.Sprintf("scale-%04d", i) }

// TestScale: at 1,000 queues and 100,000 partitions (one message each) every page the
// dashboard lists them on loads within loadBound, keeps its main thread busy less than
// busyBound, shows at most a page (50 rows) in each table, and pages the rest with a
// next link that loads the next rows.
func TestScale(t *testing.T) {
	needBrowser(t)
	b := startBroker(t, nil)
	fillScale(t, b)
	readEveryQueue(t, b)

	cases := []struct {
		name   string
		path   string
		pagers int               // tables with more than a page: each must have a working next link
		shots  map[string]string // screenshots: name -> the element scrolled to the bottom of the view first ("" for none)
	}{
		{name: "overview", path: "/"},
		{name: "queues", path: "/ui/queues", pagers: 1, shots: map[string]string{"scale-queues": ""}},
		{name: "big queue", path: "/ui/queues/" + bigQueue, pagers: 1,
			shots: map[string]string{"scale-big-queue": "", "scale-big-queue-partitions": `section[aria-labelledby="qparts-h"] nav.pager`}},
		// Two tables: the (group, queue) pairs and the partitions behind.
		{name: "groups", path: "/ui/groups", pagers: 2},
		{name: "messages of a queue", path: "/ui/messages?queue=" + bigQueue, pagers: 1},
		// Every queue's: the newest of 102,000 messages.
		{name: "messages", path: "/ui/messages", pagers: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := openTab(t)
			startMetrics(tb)
			visitTimed(tb, b.URL+c.path)
			logFragmentTime(tb, b)
			checkRows(tb, c.path)
			for _, name := range slices.Sorted(maps.Keys(c.shots)) {
				if at := c.shots[name]; at != "" {
					eval[bool](tb, fmt.Sprintf(`(document.querySelector(%s).scrollIntoView({block: "end"}), true)`, jsString(at)))
				}
				tb.screenshot(name)
			}
			if got := tb.count(nextLink); got != c.pagers {
				t.Fatalf("%s: %d next-page links, want %d (one per table with more than %d rows)\n%s",
					c.path, got, c.pagers, pageSize, tb.state())
			}
			for i := range c.pagers {
				followNext(tb, i)
			}
		})
	}
}

// fillScale pushes the scale's messages through the JSON API, fillBatch items per
// request from fillClients clients, and logs what it cost.
func fillScale(t *testing.T, b *broker) {
	t.Helper()
	type item struct {
		Queue     string         `json:"queue"`
		Partition string         `json:"partition"`
		Payload   map[string]int `json:"payload"`
	}
	var items []item
	for q := range scaleQueues {
		for p := range scalePartitions {
			items = append(items, item{scaleQueue(q), fmt.Sprintf("p%03d", p), map[string]int{"q": q, "p": p}})
		}
	}
	for p := range bigPartitions {
		items = append(items, item{bigQueue, fmt.Sprintf("p%04d", p), map[string]int{"p": p}})
	}
	var bodies [][]byte
	for start := 0; start < len(items); start += fillBatch {
		raw, err := json.Marshal(map[string]any{"items": items[start:min(start+fillBatch, len(items))]})
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, raw)
	}
	began := time.Now()
	err := concurrently(len(bodies), func(i int) error { return pushBody(b, bodies[i]) })
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
	d := time.Since(began)
	t.Logf("fill: %d messages on %d partitions of %d queues in %d requests from %d clients: %v (%.0f msgs/s)",
		len(items), len(items), scaleQueues+1, len(bodies), fillClients, d.Round(time.Millisecond),
		float64(len(items))/d.Seconds())
}

// readEveryQueue pops one message of every queue for scaleGroup (left leased): the
// group has a subscription on each queue and every other partition is behind.
func readEveryQueue(t *testing.T, b *broker) {
	t.Helper()
	began := time.Now()
	err := concurrently(scaleQueues, func(i int) error {
		path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=1&wait=false&consumerGroup=%s", scaleQueue(i), scaleGroup)
		code, raw, err := send(b, http.MethodGet, path, nil)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("status %d, want 200: %.300s", code, raw)
		}
		if err != nil {
			return fmt.Errorf("pop %s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("group %s: %v", scaleGroup, err)
	}
	t.Logf("group %s: one pop on each of %d queues in %v", scaleGroup, scaleQueues, time.Since(began).Round(time.Millisecond))
}

// concurrently runs do(0) ... do(n-1) on fillClients goroutines and returns the errors.
func concurrently(n int, do func(i int) error) error {
	next := make(chan int)
	errs := make([]error, fillClients)
	var wg sync.WaitGroup
	for c := range fillClients {
		wg.Go(func() {
			for i := range next {
				if errs[c] == nil {
					errs[c] = do(i)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// pushBody sends one push request and checks that every item was queued.
func pushBody(b *broker, body []byte) error {
	code, raw, err := send(b, http.MethodPost, "/api/v1/push", body)
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("push: status %d, want 201: %.300s", code, raw)
	}
	var answers []struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &answers); err != nil {
		return fmt.Errorf("push answer: %w: %.300s", err, raw)
	}
	for i, a := range answers {
		if a.Status != "queued" {
			return fmt.Errorf("push item %d: status %q, want queued", i, a.Status)
		}
	}
	return nil
}

// send is broker.call for goroutines other than the test's: it returns what went wrong.
func send(b *broker, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, b.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// nextLink is a table's link to its next page (the "pager" template).
const nextLink = `#page nav.pager a[rel="next"]`

// startMetrics turns on the tab's run-time metrics (Performance.getMetrics).
func startMetrics(tb *tab) {
	tb.t.Helper()
	tb.do("enable the performance metrics", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{})
		return err
	}))
}

// taskSeconds is the main thread's time in tasks so far (the TaskDuration metric, in
// seconds). Each case opens a fresh tab, so a visit's difference is that page's alone.
func taskSeconds(tb *tab) float64 {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, pageTimeout)
	defer cancel()
	m, err := chromedp.Call(ctx, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		tb.t.Fatalf("performance metrics: %v", err)
	}
	for _, x := range m.Metrics {
		if x.Name == "TaskDuration" {
			return x.Value
		}
	}
	tb.t.Fatalf("performance metrics: no TaskDuration among %d", len(m.Metrics))
	return 0
}

// visitTimed visits url, failing the test when the data took longer than loadBound to
// come in or the main thread was busy longer than busyBound meanwhile.
func visitTimed(tb *tab, url string) {
	tb.t.Helper()
	before := taskSeconds(tb)
	began := time.Now()
	tb.visit(url)
	took := time.Since(began)
	busy := time.Duration((taskSeconds(tb) - before) * float64(time.Second))
	tb.t.Logf("%s: data in after %v, main thread busy %v", url, took.Round(time.Millisecond), busy.Round(time.Millisecond))
	if took > loadBound {
		tb.t.Errorf("%s: the data came in after %v, want within %v", url, took, loadBound)
	}
	if busy > busyBound {
		tb.t.Errorf("%s: the main thread was busy %v, want less than %v", url, busy, busyBound)
	}
}

// checkRows fails the test when a listing of the page has more than pageSize body rows
// or a chart's data table more than the chart's points (dashboard.MaxPoints, 360).
func checkRows(tb *tab, path string) {
	tb.t.Helper()
	rows := func(sel string) []int {
		return eval[[]int](tb, fmt.Sprintf(`[...document.querySelectorAll(%s)].map(t => t.querySelectorAll("tbody tr").length)`, jsString(sel)))
	}
	listings, charts := rows(`#page table:not(details.chart-data table)`), rows(`#page details.chart-data table`)
	for i, n := range listings {
		if n > pageSize {
			tb.t.Errorf("%s: table %d has %d body rows, want at most %d", path, i, n, pageSize)
		}
	}
	for i, n := range charts {
		if n > maxPoints {
			tb.t.Errorf("%s: chart data table %d has %d body rows, want at most %d", path, i, n, maxPoints)
		}
	}
	tb.t.Logf("%s: body rows per table %v, per chart data table %v", path, listings, charts)
}

// logFragmentTime logs how long the server takes to answer the page's fragment on its
// own, the part of a page's load that is the broker's.
func logFragmentTime(tb *tab, b *broker) {
	tb.t.Helper()
	src := eval[string](tb, `(() => {
		const u = new URL(document.querySelector("#page").dataset.src, location.origin);
		new URLSearchParams(location.search).forEach((v, k) => u.searchParams.set(k, v));
		return u.pathname + u.search;
	})()`)
	began := time.Now()
	code, raw, err := send(b, http.MethodGet, src, nil)
	if err != nil || code != http.StatusOK {
		tb.t.Fatalf("GET %s: status %d, %v: %.300s", src, code, err, raw)
	}
	tb.t.Logf("GET %s alone: %v, %d bytes", src, time.Since(began).Round(time.Millisecond), len(raw))
}

// pagedTableFirstRow is the text of the first body row of the table the i-th next link
// pages (the table just before its pager).
func pagedTableFirstRow(tb *tab, i int) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(() => {
		const t = document.querySelectorAll(%s)[%d]?.closest("nav.pager")?.previousElementSibling;
		return t?.matches("table") ? (t.querySelector("tbody tr")?.textContent.trim() ?? "") : "(no table before the pager)";
	})()`, jsString(nextLink), i))
}

// followNext clicks the i-th next link and waits until the data is in again with
// another first row in the table it pages.
func followNext(tb *tab, i int) {
	tb.t.Helper()
	first := pagedTableFirstRow(tb, i)
	href := eval[string](tb, fmt.Sprintf(`document.querySelectorAll(%s)[%d].getAttribute("href")`, jsString(nextLink), i))
	before := taskSeconds(tb)
	began := time.Now()
	eval[bool](tb, fmt.Sprintf(`(document.querySelectorAll(%s)[%d].click(), true)`, jsString(nextLink), i))
	var now string
	tb.until("the next page of table "+href, func() bool {
		if tb.attr("#page", "data-loaded") != "true" {
			return false
		}
		now = pagedTableFirstRow(tb, i)
		return now != first
	})
	took := time.Since(began)
	busy := time.Duration((taskSeconds(tb) - before) * float64(time.Second))
	tb.t.Logf("next page %s: in after %v, main thread busy %v; first row %q, was %q", href,
		took.Round(time.Millisecond), busy.Round(time.Millisecond), clip(now), clip(first))
	if took > loadBound {
		tb.t.Errorf("next page %s: in after %v, want within %v", href, took, loadBound)
	}
	if busy > busyBound {
		tb.t.Errorf("next page %s: the main thread was busy %v, want less than %v", href, busy, busyBound)
	}
}

// clip shortens a row's text for the log.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
