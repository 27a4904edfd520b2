package dashboard

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/drain"
)

// newTestHandler is the dashboard over svc, on the world's clock, logging nowhere.
func newTestHandler(svc Services) *Handler {
	return New(svc, Options{Now: func() time.Time { return t0 }, Logger: slog.New(slog.DiscardHandler)})
}

// get serves one GET of target by h, as a caller with roles (nil: authentication off).
func get(t *testing.T, h http.Handler, target string, roles *auth.RoleSet) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if roles != nil {
		req = req.WithContext(auth.NewContext(req.Context(), auth.Principal{Subject: "test", Roles: *roles}))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// TestShells: every page's shell is the same template without data: its page name and
// fragment URL, the script and the style; no service is asked anything (they are nil).
func TestShells(t *testing.T) {
	t.Parallel()
	h := newTestHandler(Services{})
	cases := []struct{ path, page, src string }{
		{"/", "overview", "/ui/fragments/overview"},
		{"/ui/queues", "queues", "/ui/fragments/queues"},
		{"/ui/queues/orders", "queue", "/ui/fragments/queue?name=orders"},
		{"/ui/queues/audit/2025", "queue", "/ui/fragments/queue?name=audit%2F2025"},
		{"/ui/groups", "groups", "/ui/fragments/groups"},
		{"/ui/messages", "messages", "/ui/fragments/messages"},
		{"/ui/dlq", "dlq", "/ui/fragments/dlq"},
		{"/ui/traces", "traces", "/ui/fragments/traces"},
		{"/ui/system", "system", "/ui/fragments/system"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			t.Parallel()
			res, body := get(t, h, c.path, nil)
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
			}
			for _, want := range []string{`<main id="page" data-page="` + c.page + `"`, `data-src="` + strings.ReplaceAll(c.src, "&", "&amp;") + `"`,
				`data-loaded="false"`, `src="/ui/assets/app.js"`, `href="/ui/assets/app.css"`, `<div id="flash" role="status"`,
				`<dialog id="confirm"`, `id="confirm-ok"`, `id="confirm-cancel"`} {
				if !strings.Contains(body, want) {
					t.Errorf("shell lacks %s", want)
				}
			}
			if strings.Contains(body, "<table") || strings.Contains(body, "<svg") {
				t.Error("a shell carries data")
			}
			if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if got := strings.Contains(body, `id="refresh"`); got != (c.page == "overview") {
				t.Errorf("refresh button present: %v, want it on the overview only", got)
			}
		})
	}
}

// notFoundBody is the API's answer to a path it does not serve.
const notFoundBody = `{"code":"no_such_route","error":"Not Found"}`

// TestAssets: the embedded files answer with their content type and an ETag (a 304
// when it matches); anything else under /ui/assets, ".." included, is the API's 404.
func TestAssets(t *testing.T) {
	t.Parallel()
	h := newTestHandler(Services{})
	for _, c := range []struct{ path, ctype string }{
		{"/ui/assets/app.js", "text/javascript; charset=utf-8"},
		{"/ui/assets/app.css", "text/css; charset=utf-8"},
	} {
		res, body := get(t, h, c.path, nil)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != c.ctype || len(body) == 0 {
			t.Errorf("%s: status %d, type %q, %d bytes", c.path, res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		req.Header.Set("If-None-Match", res.Header.Get("ETag"))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			t.Errorf("%s with its ETag: status %d, want 304", c.path, rec.Code)
		}
	}
	for _, path := range []string{"/ui/assets/../dashboard.go", "/ui/assets/..", "/ui/assets/%2e%2e/doc.go", "/ui/assets/./app.js",
		"/ui/assets/", "/ui/assets/nope.js", "/ui/assets/assets/app.js", "/ui/nothing", "/ui/fragments/nothing", "/favicon.ico"} {
		res, body := get(t, h, path, nil)
		if res.StatusCode != http.StatusNotFound || body != notFoundBody {
			t.Errorf("%s: status %d, body %s; want 404 %s", path, res.StatusCode, body, notFoundBody)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: status %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestRoutes: the routes a router mounts: shells and assets public, fragments READ_ONLY,
// and the handler serves a path of each.
func TestRoutes(t *testing.T) {
	t.Parallel()
	h := newTestHandler(world(t, 0))
	samples := map[string]string{"/ui/queues/{name:.+}": "/ui/queues/orders", "/ui/assets/{file:.+}": "/ui/assets/app.js",
		"/ui/fragments/{page}": "/ui/fragments/system"}
	for _, r := range Routes() {
		want := auth.Public
		if strings.HasPrefix(r.Path, "/ui/fragments/") {
			want = auth.ReadOnly
		}
		if r.Level != want || r.Method != http.MethodGet {
			t.Errorf("%s %s: level %s, want %s", r.Method, r.Path, r.Level, want)
		}
		path := r.Path
		if s, ok := samples[path]; ok {
			path = s
		}
		if res, _ := get(t, h, path, nil); res.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", path, res.StatusCode)
		}
	}
}

// TestFragments: each page's fragment renders the world, uncached.
func TestFragments(t *testing.T) {
	t.Parallel()
	svc := world(t, 0)
	svc.Spool = func() drain.Status { return drain.Status{Pending: 7, DBHealthy: true} }
	h := newTestHandler(svc)
	cases := []struct {
		name, target string
		want         []string
	}{
		{"overview", "/ui/fragments/overview", []string{`data-chart="throughput"`, `data-chart="backlog"`, `data-range="7d"`,
			`<tr data-queue="orders">`, `data-group="billing"`, "Pending records</th><td>7"}},
		{"overview 6h", "/ui/fragments/overview?range=6h", []string{`data-range="6h" aria-current="true"`}},
		{"queues", "/ui/fragments/queues", []string{`<tr data-queue="audit/2025">`, `href="/ui/queues/audit%2F2025"`,
			`data-sort="backlog"`, `aria-sort="ascending"`, "1 min 30 s"}},
		{"queues by backlog", "/ui/fragments/queues?sort=backlog", []string{`aria-sort="descending"`,
			`href="/ui/queues?dir=asc&amp;sort=backlog"`}},
		{"queue", "/ui/fragments/queue?name=orders", []string{`data-action="delete-queue" data-queue="orders"`,
			`data-partition="cust-1"`, `data-group="billing"`, "leaseTime", `href="/ui/dlq?queue=orders"`, `data-chart="backlog"`}},
		{"queue with a slash", "/ui/fragments/queue?name=audit%2F2025", []string{`data-queue="audit/2025"`}},
		{"groups", "/ui/fragments/groups", []string{`<tr data-kind="group" data-group="billing" data-queue="orders">`,
			`data-action="seek-end"`, `type="datetime-local" step="1" data-role="seek-time"`, `data-action="seek-time"`,
			`data-action="delete"`, `data-partition="cust-1"`, `data-action="skip"`}},
		{"one group", "/ui/fragments/groups?group=billing", []string{"Partitions of billing", `data-action="skip"`}},
		{"messages", "/ui/fragments/messages?queue=orders&status=dead_letter", []string{"No message matches.",
			`<option value="dead_letter" selected>`}},
		{"dlq", "/ui/fragments/dlq", []string{`data-dlq-id="` + dlqID + `" data-queue="orders"`, `data-action="replay"`,
			`data-action="delete"`, "&lt;b&gt;x&lt;/b&gt;", "boom"}},
		{"trace names", "/ui/fragments/traces", []string{`href="/ui/traces?name=checkout"`}},
		{"trace timeline", "/ui/fragments/traces?name=checkout", []string{`<ol class="timeline">`, "(+1 s)", "charged"}},
		{"message traces", "/ui/fragments/traces?partitionId=" + pidOrders + "&transactionId=order-7", []string{"Events of message order-7"}},
		{"system", "/ui/fragments/system", []string{`data-action="maintenance-push" data-enabled="false"`,
			`data-action="maintenance-pop" data-enabled="true"`, "Pending records"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, body := get(t, h, c.target, nil)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", res.StatusCode, body)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
			for _, want := range c.want {
				if !strings.Contains(body, want) {
					t.Errorf("fragment lacks %s", want)
				}
			}
			if strings.Contains(body, "<b>x</b>") {
				t.Error("a payload is not escaped")
			}
		})
	}
}

// TestFragmentsByRole: a fragment renders only the actions the caller's role may take.
func TestFragmentsByRole(t *testing.T) {
	t.Parallel()
	h := newTestHandler(world(t, 0))
	ro, rw, ad := auth.Roles(auth.RoleReadOnly), auth.Roles(auth.RoleReadWrite), auth.Roles(auth.RoleAdmin)
	pages := []string{"/ui/fragments/queue?name=orders", "/ui/fragments/groups", "/ui/fragments/dlq", "/ui/fragments/system"}
	cases := []struct {
		name    string
		roles   *auth.RoleSet
		want    []string // actions present somewhere
		notWant []string
	}{
		{"read-only", &ro, nil, []string{"data-action="}},
		{"read-write", &rw, []string{`data-action="seek-end"`, `data-action="skip"`, `data-action="replay"`, `data-action="delete"`},
			[]string{`data-action="delete-queue"`, `data-action="maintenance-push"`}},
		{"admin", &ad, []string{`data-action="delete-queue"`, `data-action="maintenance-push"`, `data-action="seek-end"`}, nil},
		{"authentication off", nil, []string{`data-action="delete-queue"`, `data-action="skip"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var all strings.Builder
			for _, p := range pages {
				res, body := get(t, h, p, c.roles)
				if res.StatusCode != http.StatusOK {
					t.Fatalf("%s: status %d", p, res.StatusCode)
				}
				all.WriteString(body)
			}
			for _, w := range c.want {
				if !strings.Contains(all.String(), w) {
					t.Errorf("no %s", w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(all.String(), w) {
					t.Errorf("%s shown", w)
				}
			}
		})
	}
	// Read-write: the group row has seek buttons and no delete (group deletion is ADMIN).
	_, body := get(t, h, "/ui/fragments/groups", &rw)
	row := body[strings.Index(body, `<tr data-kind="group"`):]
	row = row[:strings.Index(row, "</tr>")]
	if strings.Contains(row, `data-action="delete"`) || !strings.Contains(row, `data-action="seek-end"`) {
		t.Errorf("read-write group row: %s", row)
	}
}

// TestFragmentErrors: bad parameters answer 400 naming them, unknown things 404, as
// JSON.
func TestFragmentErrors(t *testing.T) {
	t.Parallel()
	h := newTestHandler(world(t, 0))
	cases := []struct {
		target string
		code   int
		want   string
	}{
		{"/ui/fragments/queues?offset=-1", 400, "offset"},
		{"/ui/fragments/queues?offset=abc", 400, "offset"},
		{"/ui/fragments/queues?sort=bogus", 400, "sort"},
		{"/ui/fragments/overview?range=2h", 400, "range"},
		{"/ui/fragments/queue", 400, "name"},
		{"/ui/fragments/queue?name=nope", 404, "Queue not found"},
		{"/ui/fragments/messages?status=lost", 400, "status"},
		{"/ui/fragments/messages?partitionId=x&transactionId=y", 400, "partitionId"},
		{"/ui/fragments/messages?partitionId=" + pidOrders + "&transactionId=nope", 404, "Message not found"},
		{"/ui/fragments/groups?poffset=-3", 400, "poffset"},
		{"/ui/fragments/traces?queue=" + strings.Repeat("x", 2000) + "&name=" + strings.Repeat("n", 2000), 400, "name"},
		{"/ui/fragments/dlq?queue=%ff", 400, "UTF-8"},
		{"/ui/fragments/messages?partition=a%00b", 400, "NUL"},
	}
	for _, c := range cases {
		res, body := get(t, h, c.target, nil)
		var e struct{ Error string }
		if err := json.Unmarshal([]byte(body), &e); err != nil || res.StatusCode != c.code || !strings.Contains(e.Error, c.want) {
			t.Errorf("%.80s: %d %s; want %d naming %q", c.target, res.StatusCode, body, c.code, c.want)
		}
	}
}

// TestManyQueues: a tenant of 1,200 queues is paged 50 at a time, whatever the order.
func TestManyQueues(t *testing.T) {
	t.Parallel()
	h := newTestHandler(world(t, 1200))
	_, body := get(t, h, "/ui/fragments/queues?sort=backlog&offset=50", nil)
	if n := strings.Count(body, "<tr data-queue="); n != DefaultPageSize {
		t.Errorf("%d rows, want %d", n, DefaultPageSize)
	}
	for _, want := range []string{"Rows 51–100 of 1,202", `href="/ui/queues?dir=desc&amp;sort=backlog" data-nav rel="prev"`,
		`href="/ui/queues?dir=desc&amp;offset=100&amp;sort=backlog" data-nav rel="next"`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s", want)
		}
	}
	_, body = get(t, h, "/ui/fragments/queues?offset=1200", nil)
	if n := strings.Count(body, "<tr data-queue="); n != 2 || strings.Contains(body, `rel="next"`) {
		t.Errorf("last page: %d rows", n)
	}
}

// TestHistory: with the metrics history the throughput chart totals the range's
// pushes, the backlog walks back from the current count, the queues table has rates,
// and the overview and the system page list the brokers (and PostgreSQL).
func TestHistory(t *testing.T) {
	t.Parallel()
	hist := history()
	h := newTestHandler(worldWith(t, 0, hist))
	cases := []struct {
		target string
		want   []string
	}{
		{"/ui/fragments/overview?range=24h", []string{`data-chart="throughput" data-total="42"`, "Backlog: latest 25, highest 25",
			"Average: latest 150, highest 150", "Database errors: latest 0, highest 0.6", `<tr data-broker="b-1">`, "host-a:6632", "100 MiB",
			"10 % + 0 %"}},
		{"/ui/fragments/queue?name=orders", []string{`data-chart="throughput" data-total="42"`}},
		{"/ui/fragments/queue?name=audit%2F2025", []string{`data-chart="throughput" data-total="0"`}},
		{"/ui/fragments/queues?sort=push", []string{`data-sort="push"`, "<td>0.01</td>", "rates: messages per second"}},
		{"/ui/fragments/system", []string{`<tr data-broker="b-1">`, "Cache hit ratio</th><td>99 %", "queen.segments",
			"<code>SELECT &#39;&lt;x&gt;&#39;</code>", `<span class="state state-warn">due</span>`}},
	}
	for _, c := range cases {
		res, body := get(t, h, c.target, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", c.target, res.StatusCode, body)
		}
		for _, want := range c.want {
			if !strings.Contains(body, want) {
				t.Errorf("%s: no %s", c.target, want)
			}
		}
	}
	if len(hist.asked) == 0 || !hist.asked[0].To.Equal(t0) || hist.asked[0].To.Sub(hist.asked[0].From) != 24*time.Hour {
		t.Errorf("the history was asked for %+v, want the 24 h before %s", hist.asked, t0)
	}
	// Without the history, the queues table has no rate columns.
	_, body := get(t, newTestHandler(world(t, 0)), "/ui/fragments/queues", nil)
	if strings.Contains(body, `data-sort="push"`) {
		t.Error("rate columns without a history")
	}
}
