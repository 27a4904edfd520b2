package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// The bad-input table of docs/reliability.md, rows #1-#29, against one broker: every row gets
// the answer it must (a 4xx with a JSON error that says what is wrong, or, for inputs
// docs/design.md "Decisions" accepts, a byte-exact round trip), changes nothing it should not (the
// broker's counts before and after, no spool record), and leaves the broker serving (a
// canary push and pop). Row 30 (fuzzing) lives beside the code: core/names FuzzCheck,
// adapters/httpapi FuzzParsePush and FuzzFastPushMatchesReflective, core/spool
// FuzzDecode.

// Limits small enough to cross cheaply (rows 7 and 8).
const (
	biMaxBody  = 64 << 10
	biMaxItems = 10
	// biReadTimeout is the shared broker's QUEEN_READ_TIMEOUT_MS.
	biReadTimeout = 2 * time.Second
)

// biCounts is what the broker reports of everything it holds (GET
// /api/v1/resources/overview): rows compare it before and after.
type biCounts struct {
	Queues, Partitions, Total, Pending, Processing int64
}

// biRow is one input of the table.
type biRow struct {
	name string
	// The request (POST when body is set, else GET) and its answer: status, and an error
	// that contains every want (case-sensitive; Queen's texts verbatim).
	method, path, body string
	status             int
	want               []string
	// run replaces the request for rows that need several requests, a raw connection or
	// checks of their own.
	run func(t *testing.T, b *broker)
	// grows is what the row stores on purpose (an input that is accepted); zero for every
	// refused one. Pending and processing must come back to where they were.
	grows biCounts
	// own starts the row's broker instead of the shared one (a row that takes the
	// database away).
	own func(t *testing.T) *broker
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{
		"QUEEN_MAX_BODY_BYTES": fmt.Sprint(biMaxBody),
		"QUEEN_MAX_PUSH_ITEMS": fmt.Sprint(biMaxItems),
		// Row 28's trickled body is cut off this long after its request started.
		"QUEEN_READ_TIMEOUT_MS": fmt.Sprint(biReadTimeout.Milliseconds()),
	})
	// A queue with messages for the pop and ack rows to aim at: they must leave it as
	// it is (its messages pending, nothing leased).
	for i := range 3 {
		b.push(t, map[string]any{"queue": "bi-target", "partition": "p", "payload": i, "transactionId": fmt.Sprintf("bi-t-%d", i)})
	}
	pid := biPartitionID(t, b, "bi-target", "p")

	var rows []biRow
	rows = append(rows, biPushRows()...)
	rows = append(rows, biNameRows()...)
	rows = append(rows, biRouteRows()...)
	rows = append(rows, biConsumeRows(pid)...)
	rows = append(rows, biParamRows(pid)...) // rows 10, 11, 21 and 25 on every route (badinput_params_test.go)
	rows = append(rows, biProtocolRows()...)
	// Rows run one after another: the counts they compare are the whole broker's.
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			rb := b
			if row.own != nil {
				rb = row.own(t)
			}
			before := rb.biCounts(t)
			if row.run != nil {
				row.run(t, rb)
			} else {
				method := row.method
				var body io.Reader
				if row.body != "" || method == http.MethodPost {
					body = strings.NewReader(row.body)
					if method == "" {
						method = http.MethodPost
					}
				}
				if method == "" {
					method = http.MethodGet
				}
				// Every row sent here is refused input: its answer is checked against
				// the OpenAPI document, the request is not.
				resp, raw := rb.doBad(t, method, row.path, body)
				biWantError(t, resp, raw, row.status, row.want...)
			}
			after := rb.biCounts(t)
			want := before
			want.Queues += row.grows.Queues
			want.Partitions += row.grows.Partitions
			want.Total += row.grows.Total
			if after != want {
				t.Errorf("the broker holds %+v, want %+v (before: %+v)", after, want, before)
			}
			rb.biWantNoSpoolRecords(t)
			rb.biCanary(t)
		})
	}
}

// biPushRows are rows 1-11 and 29: bodies of POST /api/v1/push.
func biPushRows() []biRow {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	item := func(fields string) string { return `{"items":[` + fields + `]}` }
	tooMany := make([]string, biMaxItems+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`{"queue":"bi-many","payload":%d}`, i)
	}
	oneNew := biCounts{Queues: 1, Partitions: 1, Total: 1}
	const push = "/api/v1/push"
	return []biRow{
		// 1. Not JSON. "bad body: " is the Rust broker's prefix of data-route parse
		// failures (docs/api.md §1); the text after it is docs/reliability.md's.
		{name: "1/not-json", path: push, body: `{items:`, status: 400, want: []string{"bad body", "invalid JSON"}},
		{name: "1/empty", path: push, body: ``, method: http.MethodPost, status: 400, want: []string{"bad body", "invalid JSON"}},
		{name: "1/trailing-garbage", path: push, body: `{"items":[]} x`, status: 400, want: []string{"invalid JSON"}},
		// 2. JSON but not an object: Queen's text for a body without an items array.
		{name: "2/array", path: push, body: `[]`, status: 400, want: []string{"items array is required", "array"}},
		{name: "2/string", path: push, body: `"x"`, status: 400, want: []string{"items array is required", "string"}},
		{name: "2/null", path: push, body: `null`, status: 400, want: []string{"items array is required"}},
		// 3. items missing or not an array (Queen's text).
		{name: "3/items-missing", path: push, body: `{}`, status: 400, want: []string{"items array is required"}},
		{name: "3/items-object", path: push, body: `{"items":{"queue":"bi-3","payload":1}}`, status: 400, want: []string{"items array is required"}},
		{name: "3/items-string", path: push, body: `{"items":"x"}`, status: 400, want: []string{"items array is required"}},
		{name: "3/items-of-numbers", path: push, body: `{"items":[1]}`, status: 400, want: []string{"items must be objects"}},
		// 4. An empty push is Queen's 201 [].
		{name: "4/items-empty", run: func(t *testing.T, b *broker) {
			code, raw := b.post(t, push, `{"items":[]}`)
			if code != http.StatusCreated || string(raw) != "[]" {
				t.Fatalf("%d %s, want 201 []", code, raw)
			}
		}},
		// 5. One item without queue or payload fails the whole request (bad input #5): the
		// good item before it (queue bi-5) is not stored either.
		{name: "5/no-queue", path: push, body: item(`{"queue":"bi-5","payload":1},{"payload":1}`), status: 400, want: []string{"item 1", "queue"}},
		{name: "5/no-payload-key", path: push, body: item(`{"queue":"bi-5","payload":1},{"queue":"bi-5"}`), status: 400, want: []string{"item 1", "payload"}},
		// ...but a null or empty payload is one (Queen's clients send both).
		{name: "5/payload-null-accepted", grows: oneNew, run: func(t *testing.T, b *broker) {
			b.biRoundTrip(t, "bi-5-null", "Default", "t-null", `null`)
		}},
		{name: "5/payload-empty-object-accepted", grows: oneNew, run: func(t *testing.T, b *broker) {
			b.biRoundTrip(t, "bi-5-empty", "Default", "t-empty", `{}`)
		}},
		// 6. Wrong types: Queen's texts.
		{name: "6/queue-number", path: push, body: item(`{"queue":5,"payload":1}`), status: 400, want: []string{"Queue must be a string"}},
		{name: "6/partition-object", path: push, body: item(`{"queue":"bi-6","partition":{},"payload":1}`), status: 400, want: []string{"Partition must be a string"}},
		{name: "6/transactionId-bool", path: push, body: item(`{"queue":"bi-6","transactionId":true,"payload":1}`), status: 400, want: []string{"TransactionId must be a string"}},
		// 7. Bodies over QUEEN_MAX_BODY_BYTES: 413, decided before the body arrives (the
		// broker answers though the client has not sent it, or not all of it).
		{name: "7/content-length", run: func(t *testing.T, b *broker) {
			resp, raw := b.biRaw(t, "POST /api/v1/push HTTP/1.1\r\nHost: bi\r\nContent-Type: application/json\r\n"+
				"Content-Length: 67108864\r\n\r\n")
			biWantError(t, resp, raw, http.StatusRequestEntityTooLarge, fmt.Sprint(biMaxBody), "QUEEN_MAX_BODY_BYTES")
		}},
		{name: "7/chunked", run: func(t *testing.T, b *broker) {
			chunk := biMaxBody + 4096
			resp, raw := b.biRaw(t, "POST /api/v1/push HTTP/1.1\r\nHost: bi\r\nContent-Type: application/json\r\n"+
				"Transfer-Encoding: chunked\r\n\r\n"+fmt.Sprintf("%x\r\n", chunk)+`{"items":[{"queue":"bi-7","payload":"`+
				strings.Repeat("x", chunk-len(`{"items":[{"queue":"bi-7","payload":"`))+"\r\n") // no last chunk: never ends
			biWantError(t, resp, raw, http.StatusRequestEntityTooLarge, fmt.Sprint(biMaxBody), "QUEEN_MAX_BODY_BYTES")
		}},
		{name: "7/chunked-via-client", run: func(t *testing.T, b *broker) {
			body := io.MultiReader(strings.NewReader(`{"items":[{"queue":"bi-7","payload":"`),
				strings.NewReader(strings.Repeat("x", biMaxBody)), strings.NewReader(`"}]}`))
			resp, raw := b.do(t, http.MethodPost, push, body) // a reader of unknown length: chunked
			biWantError(t, resp, raw, http.StatusRequestEntityTooLarge, fmt.Sprint(biMaxBody), "QUEEN_MAX_BODY_BYTES")
		}},
		// 8. More items than QUEEN_MAX_PUSH_ITEMS: 413 with the limit (and none stored).
		{name: "8/too-many-items", path: push, body: item(strings.Join(tooMany, ",")), status: http.StatusRequestEntityTooLarge,
			want: []string{fmt.Sprint(biMaxItems + 1), fmt.Sprintf("%d-item limit", biMaxItems), "QUEEN_MAX_PUSH_ITEMS"}},
		// 9. 20,000 levels: the decoder stops at its depth limit, the broker survives.
		{name: "9/deep-nesting", path: push, body: item(`{"queue":"bi-9","payload":` + deep + `}`), status: 400, want: []string{"depth"}},
		// 10. Invalid UTF-8 in a name or a payload: refused, not replaced by U+FFFD.
		{name: "10/queue", path: push, body: item("{\"queue\":\"bi-10-\xff\",\"payload\":1}"), status: 400, want: []string{"queue", "UTF-8"}},
		{name: "10/partition", path: push, body: item("{\"queue\":\"bi-10\",\"partition\":\"p\xc3\",\"payload\":1}"), status: 400, want: []string{"partition", "UTF-8"}},
		{name: "10/payload", path: push, body: item("{\"queue\":\"bi-10\",\"payload\":\"a\xffb\"}"), status: 400, want: []string{"item 0", "payload", "UTF-8"}},
		{name: "10/payload-reflective", path: push, body: item("{\"queue\":\"bi-10\\u002d\",\"payload\":{\"k\":\"\xed\xa0\x80\"}}"), status: 400, want: []string{"payload", "UTF-8"}},
		{name: "10/transaction-queue", path: "/api/v1/transaction", body: "{\"operations\":[{\"type\":\"push\",\"queue\":\"bi-10-\xff\",\"payload\":1}]}",
			status: 400, want: []string{"UTF-8"}},
		// 11. NUL in a name or transactionId: refused (PostgreSQL text cannot hold it). In
		// a payload it is stored: payloads are kept as bytes, not JSONB.
		{name: "11/queue", path: push, body: item(`{"queue":"bi-11\u0000","payload":1}`), status: 400, want: []string{"queue", "control character"}},
		{name: "11/partition", path: push, body: item(`{"queue":"bi-11","partition":"\u0000","payload":1}`), status: 400, want: []string{"partition", "control character"}},
		{name: "11/transactionId", path: push, body: item(`{"queue":"bi-11","transactionId":"t\u0000","payload":1}`), status: 400, want: []string{"transactionId", "control character"}},
		{name: "11/payload-accepted", grows: oneNew, run: func(t *testing.T, b *broker) {
			b.biRoundTrip(t, "bi-11-payload", "Default", "t-nul", `{"s":"a\u0000b","n":"\u0000"}`)
		}},
		// 29. Duplicate keys: the last wins (encoding/json v1, and the fast path alike);
		// unknown fields are ignored, producerSub and traceId of a plain push dropped.
		{name: "29/duplicate-keys", grows: oneNew, run: func(t *testing.T, b *broker) {
			b.biDuplicateKeys(t, `{"items":[{"queue":"bi-29-first","queue":"bi-29","payload":1,"payload":{"v":2},`+
				`"transactionId":"first","transactionId":"t-29"}]}`, "bi-29")
		}},
		{name: "29/duplicate-keys-reflective", grows: oneNew, run: func(t *testing.T, b *broker) {
			// An escaped name sends the body through the reflective parser.
			b.biDuplicateKeys(t, `{"items":[{"queue":"bi-29-first","queue":"bi-29\u002dr","payload":1,"payload":{"v":2},`+
				`"transactionId":"first","transactionId":"t-29"}]}`, "bi-29-r")
		}},
		{name: "29/unknown-fields", grows: oneNew, run: func(t *testing.T, b *broker) {
			code, raw := b.post(t, push, `{"items":[{"queue":"bi-29-u","payload":{"v":1},"producerSub":"mallory",`+
				`"traceId":"0198e4c1-0000-7000-8000-000000000001","priority":9,"extra":{"x":[1]}}],"extra":true}`)
			if code != http.StatusCreated {
				t.Fatalf("push: %d %s", code, raw)
			}
			m := b.popMust(t, "/api/v1/pop/queue/bi-29-u?batch=10").Messages[0]
			if m.ProducerSub != nil || m.TraceID != nil || compactJSON(t, string(m.Data)) != `{"v":1}` {
				t.Fatalf("delivered producerSub %v traceId %v data %s: the extra fields must be ignored", m.ProducerSub, m.TraceID, m.Data)
			}
			b.biAck(t, m)
		}},
	}
}

// biNameRows are rows 12-16: names. docs/design.md "Decisions" decides them: valid UTF-8, 1-255
// bytes, no control characters, stored byte-exact. So docs/reliability.md's "/" (row 12) and
// "."/".." (row 13) are names like any other: accepted and round-tripped, not refused.
func biNameRows() []biRow {
	oneNew := biCounts{Queues: 1, Partitions: 1, Total: 1}
	bad := func(name, queue, partition string, want ...string) biRow {
		it := map[string]any{"queue": queue, "payload": 1}
		if partition != "" {
			it["partition"] = partition
		}
		body, _ := json.Marshal(map[string]any{"items": []any{it}})
		return biRow{name: name, path: "/api/v1/push", body: string(body), status: 400, want: want}
	}
	trip := func(name, queue, partition string) biRow {
		return biRow{name: name, grows: oneNew, run: func(t *testing.T, b *broker) {
			b.biRoundTrip(t, queue, partition, "t-"+name, `{"name":`+mustJSON(t, queue)+`}`)
		}}
	}
	rows := []biRow{
		// 12. Control characters (C0, DEL, C1, newline) in names.
		bad("12/queue-C0", "bi-12\x01", "", "queue", "control character"),
		bad("12/queue-newline", "bi-12\n", "", "queue", "control character"),
		bad("12/queue-DEL", "bi-12\x7f", "", "queue", "control character"),
		bad("12/queue-C1", "bi-12\u0085", "", "queue", "control character"),
		bad("12/partition-CR", "bi-12", "p\r", "partition", "control character"),
		{name: "12/pop-group-control", path: "/api/v1/pop/queue/bi-target?consumerGroup=" + url.QueryEscape("g\x1b"),
			status: 400, want: []string{"consumerGroup", "control character"}},
		// "/" is allowed (docs/design.md "Decisions"); routes take it as %2F in one path segment.
		trip("12/slash-accepted", "bi-12/orders", "eu/west"),
		// 13. Lengths: the rule's numbers in the message; 255 bytes is still a name.
		bad("13/queue-empty", "", "", "queue", "empty"),
		{name: "13/partition-empty", path: "/api/v1/push", body: `{"items":[{"queue":"bi-13","partition":"","payload":1}]}`,
			status: 400, want: []string{"partition", "empty"}}, // "" given, not omitted
		bad("13/queue-256-bytes", strings.Repeat("q", 256), "", "queue", "256", "255"),
		bad("13/queue-256-bytes-multibyte", strings.Repeat("é", 128), "", "queue", "256", "255"),
		bad("13/partition-256-bytes", "bi-13", strings.Repeat("p", 256), "partition", "256", "255"),
		{name: "13/pop-queue-256-bytes", path: "/api/v1/pop/queue/" + strings.Repeat("q", 256), status: 400, want: []string{"queue", "256", "255"}},
		{name: "13/pop-group-256-bytes", path: "/api/v1/pop/queue/bi-target?consumerGroup=" + strings.Repeat("g", 256),
			status: 400, want: []string{"consumerGroup", "256", "255"}},
		trip("13/queue-255-bytes-accepted", strings.Repeat("q", 255), strings.Repeat("p", 255)),
		// "." and ".." are names (docs/design.md "Decisions"), reached as sent: the router
		// does not clean paths.
		trip("13/dot-accepted", ".", "."),
		trip("13/dotdot-accepted", "..", ".."),
		// 14. Unicode names: accepted and byte-exact (no normalisation).
		trip("14/cyrillic", "заказы", "склад"),
		trip("14/cjk", "注文", "東京"),
		trip("14/emoji", "📦🚀", "🇪🇺"),
		{name: "14/nfc-vs-nfd", grows: biCounts{Queues: 2, Partitions: 2, Total: 2}, run: func(t *testing.T, b *broker) {
			// Two spellings of "café": two queues, each delivered under its own bytes.
			nfc, nfd := "bi-caf\u00e9", "bi-cafe\u0301"
			b.biRoundTrip(t, nfc, "\u00e9", "t-nfc", `"nfc"`)
			b.biRoundTrip(t, nfd, "e\u0301", "t-nfd", `"nfd"`)
			b.biWantStatusQueues(t, nfc, nfc)
			b.biWantStatusQueues(t, nfd, nfd)
		}},
		// 15. SQL-looking names are stored literally; name filters match exactly, so
		// LIKE's % and _ mean themselves.
		trip("15/sql-injection", "orders'); DROP TABLE queen.queues;--", `p'; DELETE FROM queen.partitions;--`),
		trip("15/percent", "%", "%"),
		trip("15/underscore", "_", "_"),
		{name: "15/filters-literal", grows: biCounts{Queues: 4, Partitions: 4, Total: 4}, run: func(t *testing.T, b *broker) {
			for _, q := range []string{"bi-lit%", "bi-litXY", "bi-lit_", "bi-litZ"} {
				b.biRoundTrip(t, q, "Default", "t", `1`)
			}
			b.biWantStatusQueues(t, "bi-lit%", "bi-lit%")
			b.biWantStatusQueues(t, "bi-lit_", "bi-lit_")
			b.biWantStatusQueues(t, "bi-li%")
		}},
		// 16. Traversal-looking names, spooled while the database is away: spool files are
		// named by the broker, so nothing lands outside FILE_BUFFER_DIR.
		{name: "16/path-traversal-spooled", own: biOutageBroker, grows: biCounts{Queues: 3, Partitions: 3, Total: 3}, run: biTraversal},
	}
	return rows
}

// biOutageBroker starts a broker behind a database proxy of its own (row 16), which
// biTraversal finds in biProxies.
func biOutageBroker(t *testing.T) *broker {
	proxy, db := newPGProxy(t, pgtest.NewDatabase(t))
	b := startBrokerOn(t, db, map[string]string{"DB_STATEMENT_TIMEOUT": "5000", "FILE_BUFFER_FLUSH_MS": "20"})
	biProxies.Store(b, proxy)
	return b
}

// biProxies maps a broker of biOutageBroker to its proxy.
var biProxies sync.Map

func biTraversal(t *testing.T, b *broker) {
	v, _ := biProxies.Load(b)
	proxy := v.(*pgProxy)
	names := [][2]string{{"../../etc/x", "..%2f..%2f"}, {"..", "%00"}, {"/tmp/bi-abs", "../../../../../../tmp/bi-part"}}
	proxy.cut()
	for i, n := range names {
		res := b.push(t, map[string]any{"queue": n[0], "partition": n[1], "payload": i, "transactionId": "%00/../" + n[0]})
		if res[0].Status != "buffered" {
			t.Fatalf("push with the database away: status %q, want buffered", res[0].Status)
		}
	}
	// While spooled: the spool holds broker-named files only, and its parent nothing else.
	spoolName := regexp.MustCompile(`^(LOCK|failed|queen-\d{13}-\d{8}\.(tmp|buf|pos))$`)
	err := filepath.WalkDir(b.Spool, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == b.Spool {
			return err
		}
		rel, _ := filepath.Rel(b.Spool, p)
		if !spoolName.MatchString(filepath.Base(p)) || strings.Count(rel, string(filepath.Separator)) > 1 {
			t.Errorf("spool holds %s: not a name the broker makes", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := os.ReadDir(filepath.Dir(b.Spool))
	if err != nil {
		t.Fatal(err)
	}
	if len(parent) != 1 || parent[0].Name() != filepath.Base(b.Spool) {
		t.Errorf("the spool's parent holds %v, want only %s", parent, filepath.Base(b.Spool))
	}
	for _, abs := range []string{"/tmp/bi-abs", "/tmp/bi-part", "/etc/x"} {
		if _, err := os.Lstat(abs); err == nil {
			t.Errorf("%s exists: a name reached the file system", abs)
		}
	}
	proxy.restore(t)
	b.waitDrained(t, 30*time.Second)
	for i, n := range names {
		m := b.biPopOne(t, n[0], n[1])
		if m.TransactionID != "%00/../"+n[0] || string(m.Data) != fmt.Sprint(i) {
			t.Errorf("replayed %+v, want transactionId %q data %d", m, "%00/../"+n[0], i)
		}
		b.biAck(t, m)
	}
}

// biRouteRows are rows 17 and 26: paths and methods.
func biRouteRows() []biRow {
	notFound := func(name, target string) biRow {
		return biRow{name: name, run: func(t *testing.T, b *broker) {
			// A raw request: the path goes out exactly as written, dot segments and all.
			resp, raw := b.biRaw(t, "GET "+target+" HTTP/1.1\r\nHost: bi\r\n\r\n")
			biWantError(t, resp, raw, http.StatusNotFound, "Not Found")
			if bytes.Contains(raw, []byte("root:")) || bytes.Contains(raw, []byte("module ")) || bytes.Contains(raw, []byte("package ")) {
				t.Fatalf("%s answered file contents: %s", target, raw)
			}
		}}
	}
	wrongMethod := func(name, method, path, allow string) biRow {
		return biRow{name: name, run: func(t *testing.T, b *broker) {
			resp, raw := b.doBad(t, method, path, strings.NewReader(`{"items":[{"queue":"bi-26","payload":1}]}`))
			biWantError(t, resp, raw, http.StatusMethodNotAllowed, method, path)
			if got := resp.Header.Get("Allow"); got != allow {
				t.Fatalf("Allow %q, want %q", got, allow)
			}
		}}
	}
	return []biRow{
		// 17. Traversal on the static routes: there is no file serving, so a JSON 404.
		notFound("17/dotdot-etc-passwd", "/../../etc/passwd"),
		notFound("17/encoded-dotdot", "/%2e%2e/%2e%2e/etc/passwd"),
		notFound("17/assets-encoded-slash", "/assets/..%2fmain.go"),
		notFound("17/assets-dotdot-go-mod", "/assets/../../go.mod"),
		notFound("17/api-dotdot", "/api/v1/../../../etc/passwd"),
		// 26. Wrong method: 405 with Allow; unknown route: Queen's JSON 404.
		wrongMethod("26/put-push", http.MethodPut, "/api/v1/push", "POST"),
		wrongMethod("26/delete-ack", http.MethodDelete, "/api/v1/ack", "POST"),
		wrongMethod("26/post-pop", http.MethodPost, "/api/v1/pop/queue/bi-target", "GET"),
		{name: "26/get-push-no-body", run: func(t *testing.T, b *broker) {
			resp, raw := b.doBad(t, http.MethodGet, "/api/v1/push", nil)
			biWantError(t, resp, raw, http.StatusMethodNotAllowed, "GET")
			if resp.Header.Get("Allow") != "POST" {
				t.Fatalf("Allow %q, want POST", resp.Header.Get("Allow"))
			}
		}},
		{name: "26/unknown-route", method: http.MethodGet, path: "/api/v1/nope", status: 404, want: []string{"Not Found"}},
		{name: "26/unknown-route-post", method: http.MethodPost, path: "/api/v1/push/extra", status: 404, want: []string{"Not Found"}},
	}
}

// biConsumeRows are rows 18-25 and 27: pop parameters, acks and transactions. pid is
// bi-target's partition.
func biConsumeRows(pid string) []biRow {
	const pop = "/api/v1/pop/queue/bi-target"
	badPop := func(name, query, param string, more ...string) biRow {
		return biRow{name: name, path: pop + "?" + query, status: 400, want: append([]string{param}, more...)}
	}
	unknown := "0198e4c1-0000-7000-8000-0000000000aa" // a UUID nothing has
	return []biRow{
		// 18. batch: not a positive integer is a 400; above the maximum the pop is served
		// with the maximum (the clamp of core/consume MaxBatch: wire-compatible, a pop
		// may always deliver fewer than its batch).
		badPop("18/batch-zero", "batch=0", "batch"),
		badPop("18/batch-negative", "batch=-1", "batch"),
		badPop("18/batch-abc", "batch=abc", "batch"),
		badPop("18/batch-over-int32", "batch=4294967297", "batch", "2147483647"),
		{name: "18/batch-huge-clamped", grows: biCounts{Queues: 1, Partitions: 1, Total: 2}, run: func(t *testing.T, b *broker) {
			b.push(t, map[string]any{"queue": "bi-18", "payload": 1}, map[string]any{"queue": "bi-18", "payload": 2})
			p := b.popMust(t, "/api/v1/pop/queue/bi-18?batch=99999999")
			if len(p.Messages) != 2 {
				t.Fatalf("%d messages, want 2", len(p.Messages))
			}
			b.ackAll(t, p, "")
		}},
		// 19. timeout: negative or not an integer is a 400; the maximum is the int32
		// milliseconds the wait is kept in (about 24.8 days), named in the refusal. A
		// parked pop holds no database connection and ends when its client leaves, so
		// no shorter cap is imposed on a client that asks for a long wait.
		badPop("19/timeout-negative", "wait=true&timeout=-5", "timeout"),
		badPop("19/timeout-abc", "wait=true&timeout=abc", "timeout"),
		badPop("19/timeout-over-max", "wait=true&timeout=2147483648", "timeout", "2147483647"),
		// 20. Other integers and booleans (strconv.ParseBool is not the rule: Queen's
		// pop routes take only true and false).
		badPop("20/partitions-zero", "partitions=0", "partitions"),
		badPop("20/wait-maybe", "wait=maybe", "wait", "true or false"),
		badPop("20/autoAck-2", "autoAck=2", "autoAck", "true or false"),
		badPop("20/leaseSeconds-abc", "leaseSeconds=abc", "leaseSeconds"),
		// 21. subscriptionFrom not RFC 3339.
		badPop("21/subscriptionFrom-yesterday", "consumerGroup=bi-g&subscriptionFrom=yesterday", "subscriptionFrom", "RFC 3339"),
		// 22. Ids that are not UUIDs: per-item success:false in a 200, the Rust broker's
		// ack contract (docs/api.md §5.3, docs/design.md "Decisions": wire compatibility), never a 500.
		{name: "22/partitionId-not-uuid", run: func(t *testing.T, b *broker) {
			b.biAckFails(t, map[string]any{"transactionId": "bi-t-0", "partitionId": "not-a-uuid"}, "partitionId is not a UUID")
		}},
		{name: "22/leaseId-x", run: func(t *testing.T, b *broker) {
			b.biAckFails(t, map[string]any{"transactionId": "bi-t-0", "partitionId": pid, "leaseId": "x"}, "invalid or expired lease")
		}},
		{name: "22/single-ack-partitionId-not-uuid", run: func(t *testing.T, b *broker) {
			code, raw := b.post(t, "/api/v1/ack", `{"transactionId":"bi-t-0","partitionId":"x' OR 1=1 --","status":"completed"}`)
			var res []ackResp
			if code != http.StatusOK || decodeStrict(raw, &res) != nil || len(res) != 1 || res[0].Success ||
				res[0].Error == nil || !strings.Contains(*res[0].Error, "partitionId") {
				t.Fatalf("%d %s, want 200 with one failed item naming partitionId", code, raw)
			}
		}},
		// 23. Valid but unknown ids: per-item success:false with Queen's text, nothing
		// changes. No consumer ever read bi-target, so each is "consumer not found".
		{name: "23/unknown-transactionId", run: func(t *testing.T, b *broker) {
			b.biAckFails(t, map[string]any{"transactionId": "bi-never-pushed", "partitionId": pid}, "consumer not found")
		}},
		{name: "23/unknown-partition", run: func(t *testing.T, b *broker) {
			b.biAckFails(t, map[string]any{"transactionId": "bi-t-0", "partitionId": unknown}, "consumer not found")
		}},
		{name: "23/unknown-lease", run: func(t *testing.T, b *broker) {
			b.biAckFails(t, map[string]any{"transactionId": "bi-t-0", "partitionId": pid, "leaseId": unknown}, "consumer not found")
		}},
		{name: "23/unknown-lease-of-a-read-partition", grows: biCounts{Queues: 1, Partitions: 1, Total: 1}, run: func(t *testing.T, b *broker) {
			b.push(t, map[string]any{"queue": "bi-23", "payload": 1, "transactionId": "t-23"})
			p := b.popMust(t, "/api/v1/pop/queue/bi-23")
			m := p.Messages[0]
			b.biAckFails(t, map[string]any{"transactionId": "t-23", "partitionId": m.PartitionID, "leaseId": unknown}, "invalid or expired lease")
			b.biAck(t, m) // the real lease still holds: the refused ack changed nothing
		}},
		// 24. An unknown status is failed (docs/design.md "Decisions", as Queen): the message comes
		// back for another attempt.
		{name: "24/status-done-is-failed", grows: biCounts{Queues: 1, Partitions: 1, Total: 1}, run: func(t *testing.T, b *broker) {
			b.push(t, map[string]any{"queue": "bi-24", "payload": 1, "transactionId": "t-24"})
			p := b.popMust(t, "/api/v1/pop/queue/bi-24")
			if res := b.ackAll(t, p, "done"); !res[0].Success || !res[0].LeaseReleased {
				t.Fatalf("ack done: %+v, want applied as failed (lease released)", res[0])
			}
			again := b.popMust(t, "/api/v1/pop/queue/bi-24")
			if m := again.Messages[0]; m.TransactionID != "t-24" || m.DeliveryAttempt != 2 {
				t.Fatalf("after done: %+v, want t-24 delivered again (attempt 2)", m)
			}
			b.ackAll(t, again, "")
		}},
		// 25. Transactions: Queen's text for no operations; an unknown type refuses all.
		{name: "25/operations-empty", path: "/api/v1/transaction", body: `{"operations":[]}`, status: 400,
			want: []string{"operations array cannot be empty"}},
		{name: "25/operations-missing", path: "/api/v1/transaction", body: `{}`, status: 400,
			want: []string{"operations array"}},
		{name: "25/unknown-type", path: "/api/v1/transaction",
			body: `{"operations":[{"type":"push","queue":"bi-25","payload":1},{"type":"kv","key":"k"}]}`, status: 400,
			want: []string{"supports only push and ack", `"kv"`}},
		// 27. Pops of random names: all empty. Each provisions its queue row (docs/design.md
		// "Decisions": subscriptions may precede the first push), one row per name and nothing
		// else. 500 names instead of docs/reliability.md's 10,000 keep CI quick.
		{name: "27/random-queue-pops", grows: biCounts{Queues: 500}, run: biRandomPops},
	}
}

func biRandomPops(t *testing.T, b *broker) {
	const n, workers = 500, 8
	names := make(chan string, n)
	for range n {
		names <- fmt.Sprintf("bi-rand-%016x", rand.Uint64())
	}
	close(names)
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range workers {
		wg.Go(func() {
			for q := range names {
				resp, raw, err := b.request(t.Context(), http.MethodGet, "/api/v1/pop/queue/"+q+"?batch=10", nil)
				if err != nil || resp.StatusCode != http.StatusNoContent || len(raw) != 0 {
					bad.Add(1)
					t.Errorf("pop %s: %v %v %s, want an empty 204", q, err, resp, raw)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d of %d pops were not empty", bad.Load(), n)
	}
}

// biProtocolRows are row 28: what net/http guards before any handler runs.
func biProtocolRows() []biRow {
	return []biRow{
		// Header blocks over MaxHeaderBytes (64 KiB, adapters/httpapi) get 431 from
		// net/http itself: a plain-text answer, the one 4xx that is not JSON.
		{name: "28/headers-over-limit", run: func(t *testing.T, b *broker) {
			resp, raw := b.biRaw(t, "GET /health HTTP/1.1\r\nHost: bi\r\nX-Big: "+strings.Repeat("a", 64<<10+8<<10)+"\r\n\r\n")
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("status %d %.200s, want 431", resp.StatusCode, raw)
			}
		}},
		// A client that starts its header block and stalls is cut off at the broker's
		// ReadHeaderTimeout (10 s, adapters/httpapi NewServer): net/http closes the
		// connection, after a plain-text 400 for the half-read header block.
		{name: "28/slow-headers", run: func(t *testing.T, b *broker) {
			conn := b.biDial(t)
			if _, err := io.WriteString(conn, "POST /api/v1/push HTTP/1.1\r\nHost: bi\r\nContent-Ty"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			raw, err := io.ReadAll(conn) // returns when the broker closes the connection
			if took := time.Since(start); err != nil || took > 25*time.Second {
				t.Fatalf("after %v: %v; want the connection closed", took, err)
			}
			if len(raw) > 0 && !bytes.HasPrefix(raw, []byte("HTTP/1.1 400 ")) && !bytes.HasPrefix(raw, []byte("HTTP/1.1 408 ")) {
				t.Fatalf("answered %q, want nothing, a 400 or a 408", raw)
			}
		}},
		// A body trickled in (a byte every 200 ms) is cut off at QUEEN_READ_TIMEOUT_MS:
		// 408 with a JSON error, and the connection closed. Its items are never pushed.
		{name: "28/slow-body", run: func(t *testing.T, b *broker) {
			conn := b.biDial(t)
			body := `[{"queue":"bi-slow","payload":1}]`
			if _, err := fmt.Fprintf(conn, "POST /api/v1/push HTTP/1.1\r\nHost: bi\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body)+64); err != nil {
				t.Fatal(err)
			}
			go func() {
				for i := 0; ; i++ {
					if _, err := io.WriteString(conn, body[i%len(body):i%len(body)+1]); err != nil {
						return // the broker closed the connection
					}
					time.Sleep(200 * time.Millisecond)
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || !strings.Contains(string(raw), "QUEEN_READ_TIMEOUT_MS") {
				t.Fatalf("status %d, close %v, body %s: want 408, the connection closed, a JSON error", resp.StatusCode, resp.Close, raw)
			}
		}},
	}
}

// biWantError checks a refusal: its status, and a JSON object whose "error" is a
// non-empty string containing every want.
func biWantError(t testing.TB, resp *http.Response, raw []byte, status int, want ...string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %.300s", resp.StatusCode, status, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error == nil || *e.Error == "" {
		t.Fatalf("body %.300s: want a JSON object with an error (%v)", raw, err)
	}
	for _, w := range want {
		if !strings.Contains(*e.Error, w) {
			t.Errorf("error %q does not contain %q", *e.Error, w)
		}
	}
}

// biCounts reads the broker's overview.
func (b *broker) biCounts(t testing.TB) biCounts {
	t.Helper()
	code, raw := b.get(t, "/api/v1/resources/overview")
	var o struct {
		Queues, Partitions int64
		Messages           struct{ Total, Pending, Processing int64 }
	}
	if code != http.StatusOK || json.Unmarshal(raw, &o) != nil {
		t.Fatalf("overview: %d %s", code, raw)
	}
	return biCounts{Queues: o.Queues, Partitions: o.Partitions, Total: o.Messages.Total, Pending: o.Messages.Pending,
		Processing: o.Messages.Processing}
}

// biWantNoSpoolRecords checks that the spool holds no record file (its lock and an empty
// quarantine are not records).
func (b *broker) biWantNoSpoolRecords(t testing.TB) {
	t.Helper()
	err := filepath.WalkDir(b.Spool, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "LOCK" {
			return err
		}
		t.Errorf("the spool holds %s", p)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

// biCanaryN numbers canaries across rows.
var biCanaryN atomic.Int64

// biCanary pushes a message to a queue of its own and pops it back: the broker still
// takes and delivers after the row.
func (b *broker) biCanary(t testing.TB) {
	t.Helper()
	txn := fmt.Sprintf("canary-%d", biCanaryN.Add(1))
	if res := b.push(t, map[string]any{"queue": "bi-canary", "payload": map[string]string{"t": txn}, "transactionId": txn}); res[0].Status != "queued" {
		t.Fatalf("canary push: %+v", res[0])
	}
	p := b.popMust(t, "/api/v1/pop/queue/bi-canary?batch=10")
	if len(p.Messages) != 1 || p.Messages[0].TransactionID != txn {
		t.Fatalf("canary pop: %+v, want %s alone", p.Messages, txn)
	}
	if res := b.ackAll(t, p, ""); !res[0].Success {
		t.Fatalf("canary ack: %+v", res[0])
	}
}

// biRoundTrip pushes one item and checks that its names and payload come back
// byte-exact: in the push answer, the pop of its queue and partition, and the queue's
// resources detail. The message is acked.
func (b *broker) biRoundTrip(t testing.TB, queue, partition, txn, payload string) {
	t.Helper()
	body := fmt.Sprintf(`{"items":[{"queue":%s,"partition":%s,"transactionId":%s,"payload":%s}]}`,
		mustJSON(t, queue), mustJSON(t, partition), mustJSON(t, txn), payload)
	code, raw := b.post(t, "/api/v1/push", body)
	var res []pushResult
	if code != http.StatusCreated || decodeStrict(raw, &res) != nil || len(res) != 1 {
		t.Fatalf("push %q/%q: %d %s", queue, partition, code, raw)
	}
	if res[0].Status != "queued" || res[0].QueueName != queue || res[0].TransactionID != txn {
		t.Fatalf("push answer %+v, want queued to %q as %q", res[0], queue, txn)
	}
	m := b.biPopOne(t, queue, partition)
	if m.TransactionID != txn || compactJSON(t, string(m.Data)) != compactJSON(t, payload) {
		t.Fatalf("delivered %s %s, want %s %s", m.TransactionID, m.Data, txn, payload)
	}
	b.biAck(t, m)
	var d struct {
		Name       string
		Partitions []struct{ Name string }
	}
	code, raw = b.get(t, "/api/v1/resources/queues/"+url.PathEscape(queue))
	if code != http.StatusOK || json.Unmarshal(raw, &d) != nil || d.Name != queue ||
		!slices.ContainsFunc(d.Partitions, func(p struct{ Name string }) bool { return p.Name == partition }) {
		t.Fatalf("resources of %q: %d %s, want it with partition %q", queue, code, raw, partition)
	}
}

// biPopOne pops the one message of queue's partition, checking the names it is
// delivered under.
func (b *broker) biPopOne(t testing.TB, queue, partition string) popMsg {
	t.Helper()
	p := b.popMust(t, "/api/v1/pop/queue/"+url.PathEscape(queue)+"/partition/"+url.PathEscape(partition)+"?batch=10")
	if len(p.Messages) != 1 || p.Queue != queue || p.Partition != partition || p.Messages[0].Partition != partition {
		t.Fatalf("pop of %q/%q: %+v", queue, partition, p)
	}
	return p.Messages[0]
}

func (b *broker) biAck(t testing.TB, m popMsg) {
	t.Helper()
	if res := b.ackBatch(t, "", ackItemOf(m, "")); !res[0].Success {
		t.Fatalf("ack %s: %+v", m.TransactionID, res[0])
	}
}

// biAckFails acks item alone and wants it refused in a 200, with an error containing
// want (any error when want is "").
func (b *broker) biAckFails(t testing.TB, item map[string]any, want string) {
	t.Helper()
	res := b.ackBatch(t, "", item)
	if res[0].Success || res[0].Error == nil || *res[0].Error == "" || !strings.Contains(*res[0].Error, want) {
		t.Fatalf("ack %v: %+v, want success false with an error containing %q", item, res[0], want)
	}
}

// biDuplicateKeys pushes body (one item whose keys repeat) and wants the last of each
// stored: queue, payload {"v":2} and transactionId t-29.
func (b *broker) biDuplicateKeys(t testing.TB, body, queue string) {
	t.Helper()
	code, raw := b.post(t, "/api/v1/push", body)
	if code != http.StatusCreated {
		t.Fatalf("push: %d %s", code, raw)
	}
	m := b.biPopOne(t, queue, "Default")
	if m.TransactionID != "t-29" || compactJSON(t, string(m.Data)) != `{"v":2}` {
		t.Fatalf("delivered %s %s, want the last keys: t-29 {\"v\":2}", m.TransactionID, m.Data)
	}
	b.biAck(t, m)
}

// biWantStatusQueues lists GET /api/v1/status/queues?queue=filter and wants exactly want.
func (b *broker) biWantStatusQueues(t testing.TB, filter string, want ...string) {
	t.Helper()
	code, raw := b.get(t, "/api/v1/status/queues?queue="+url.QueryEscape(filter))
	var l struct{ Queues []struct{ Name string } }
	if code != http.StatusOK || json.Unmarshal(raw, &l) != nil {
		t.Fatalf("status/queues?queue=%q: %d %s", filter, code, raw)
	}
	got := []string{}
	for _, q := range l.Queues {
		got = append(got, q.Name)
	}
	if !slices.Equal(got, append([]string{}, want...)) {
		t.Fatalf("status/queues?queue=%q lists %q, want %q", filter, got, want)
	}
}

// biPartitionID reads the id of queue's partition from its resources detail.
func biPartitionID(t testing.TB, b *broker, queue, partition string) string {
	t.Helper()
	var d struct{ Partitions []struct{ ID, Name string } }
	code, raw := b.get(t, "/api/v1/resources/queues/"+url.PathEscape(queue))
	if code != http.StatusOK || json.Unmarshal(raw, &d) != nil {
		t.Fatalf("resources of %s: %d %s", queue, code, raw)
	}
	for _, p := range d.Partitions {
		if p.Name == partition {
			return p.ID
		}
	}
	t.Fatalf("no partition %s in %s", partition, raw)
	return ""
}

// biDial opens a raw connection to the broker, closed with the test: for the requests
// an http.Client will not send as they are (unterminated or oversized, or with dot
// segments).
func (b *broker) biDial(t testing.TB) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// biRaw writes req on a raw connection and reads one answer. The write runs beside the
// read: the broker may answer (and close) before it has taken every byte.
func (b *broker) biRaw(t testing.TB, req string) (*http.Response, []byte) {
	t.Helper()
	conn := b.biDial(t)
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, _ = io.WriteString(conn, req) // fails when the broker closed early: expected
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("answer body: %v", err)
	}
	conn.Close() // ends a write still blocked on a broker that stopped reading
	<-written
	return resp, raw
}
