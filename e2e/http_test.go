package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pushResultKeys is the exact key set of a push result carrying an offset.
var pushResultKeys = []string{"index", "message_id", "queueName", "offset", "status", "transaction_id"}

// postPush posts a raw body (any bytes, possibly invalid UTF-8) to /api/v1/push.
func (b *broker) postPush(t testing.TB, body string) (*http.Response, []byte) {
	t.Helper()
	return b.do(t, http.MethodPost, "/api/v1/push", strings.NewReader(body))
}

func wantJSONContentType(t testing.TB, resp *http.Response) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
}

// keysOf returns the sorted keys of a JSON object.
func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// uuidV7 matches a canonical (lower-case, hyphenated) UUID of version 7, RFC 4122 variant.
var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// decodePushResponse checks a 201 push answer's shape field by field: a strict decode
// into pushResult, and a generic decode whose every element must have exactly the keys
// index, message_id, transaction_id, queueName, status, and offset for queued/duplicate.
func decodePushResponse(t testing.TB, resp *http.Response, body []byte, n int) []pushResult {
	t.Helper()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d, want 201; body %s", resp.StatusCode, body)
	}
	wantJSONContentType(t, resp)
	var out []pushResult
	if err := decodeStrict(body, &out); err != nil {
		t.Fatalf("strict decode of %s: %v", body, err)
	}
	var generic []map[string]any
	if err := json.Unmarshal(body, &generic); err != nil {
		t.Fatalf("generic decode of %s: %v", body, err)
	}
	if len(out) != n || len(generic) != n {
		t.Fatalf("%d results, want %d: %s", len(out), n, body)
	}
	ids := map[string]int{}
	for i, r := range out {
		g := generic[i]
		want := pushResultKeys
		if r.Status != "queued" && r.Status != "duplicate" {
			want = slices.DeleteFunc(slices.Clone(want), func(k string) bool { return k == "offset" })
		}
		if got := keysOf(g); !slices.Equal(got, sortedCopy(want)) {
			t.Errorf("result %d has keys %v, want exactly %v", i, got, sortedCopy(want))
		}
		for k, kind := range map[string]string{"index": "number", "offset": "number", "message_id": "string",
			"transaction_id": "string", "queueName": "string", "status": "string"} {
			v, ok := g[k]
			if !ok {
				continue
			}
			switch kind {
			case "number":
				if _, isNum := v.(float64); !isNum {
					t.Errorf("result %d: %s is %T, want a JSON number", i, k, v)
				}
			case "string":
				if _, isStr := v.(string); !isStr {
					t.Errorf("result %d: %s is %T, want a JSON string", i, k, v)
				}
			}
		}
		if r.Index != i {
			t.Errorf("result %d has index %d", i, r.Index)
		}
		if !uuidV7.MatchString(r.MessageID) {
			t.Errorf("result %d: message_id %q is not a canonical UUIDv7", i, r.MessageID)
		}
		if j, dup := ids[r.MessageID]; dup && r.Status == "queued" {
			t.Errorf("results %d and %d share message_id %s", j, i, r.MessageID)
		}
		ids[r.MessageID] = i
	}
	return out
}

// wantErrorBody checks a JSON error answer: status, Content-Type, exactly the key "error"
// (plus "code" when wantCode is set), and that the message contains every substring.
func wantErrorBody(t testing.TB, resp *http.Response, body []byte, status int, wantCode string, substrings ...string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	wantJSONContentType(t, resp)
	var e struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	var generic map[string]any
	if err := json.Unmarshal(body, &generic); err != nil {
		t.Errorf("error body %q is not a JSON object: %v", body, err)
		return
	}
	wantKeys := []string{"error"}
	if wantCode != "" {
		wantKeys = []string{"code", "error"}
	}
	if got := keysOf(generic); !slices.Equal(got, wantKeys) {
		t.Errorf("error body %s has keys %v, want %v", body, got, wantKeys)
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if e.Error == "" {
		t.Errorf("empty error message: %s", body)
	}
	for _, s := range substrings {
		if !strings.Contains(e.Error, s) {
			t.Errorf("error %q does not contain %q", e.Error, s)
		}
	}
	if e.Code != wantCode {
		t.Errorf("code %q, want %q", e.Code, wantCode)
	}
}

// pushItemJSON renders one push item by hand so payloads keep their exact bytes.
func pushItemJSON(queue, partition, txn, payload string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"queue":%s`, strconv.Quote(queue))
	if partition != "" {
		fmt.Fprintf(&b, `,"partition":%s`, strconv.Quote(partition))
	}
	if txn != "" {
		fmt.Fprintf(&b, `,"transactionId":%s`, strconv.Quote(txn))
	}
	fmt.Fprintf(&b, `,"payload":%s}`, payload)
	return b.String()
}

func pushBodyJSON(items ...string) string { return `{"items":[` + strings.Join(items, ",") + `]}` }

// compactJSON is raw as the broker delivers JSON: the same value, without insignificant
// whitespace.
func compactJSON(t testing.TB, raw string) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(raw)); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return out.String()
}

// TestHTTPPush covers POST /api/v1/push (every status code and bad input) and the
// health and metrics routes, on one broker. Cases run one after another so that "nothing
// was stored" can be checked on the whole broker's counters.
func TestHTTPPush(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	t.Run("created", func(t *testing.T) { testHTTPPushCreated(t, b) })
	t.Run("empty items", func(t *testing.T) {
		resp, body := b.postPush(t, `{"items":[]}`)
		if resp.StatusCode != http.StatusCreated || string(body) != "[]" {
			t.Fatalf("status %d body %q, want 201 []", resp.StatusCode, body)
		}
		wantJSONContentType(t, resp)
	})
	t.Run("payloads delivered as sent", func(t *testing.T) { testHTTPPushPayloads(t, b) })
	t.Run("extra keys ignored", func(t *testing.T) { testHTTPPushExtraKeys(t, b) })
	t.Run("bad requests", func(t *testing.T) { testHTTPPushBadRequests(t, b) })
	t.Run("routes", func(t *testing.T) { testHTTPRoutes(t, b) })
	t.Run("health", func(t *testing.T) { testHTTPHealth(t, b) })
	t.Run("metrics json", func(t *testing.T) { testHTTPMetricsJSON(t, b) })
	t.Run("metrics prometheus", func(t *testing.T) { testHTTPPrometheus(t, b) })
}

func testHTTPPushCreated(t *testing.T, b *broker) {
	type want struct {
		queue, partition, txn string // txn "" means: the message id
		offset                int64
	}
	long255 := strings.Repeat("q", 255)
	longTxn := strings.Repeat("t", 65535)
	tests := []struct {
		name string
		body string
		want []want
	}{
		{
			name: "one item, defaults",
			body: `{"items":[{"queue":"c-defaults","payload":{"a":1}}]}`,
			want: []want{{"c-defaults", "Default", "", 0}},
		},
		{
			name: "null partition and transactionId take the defaults",
			body: `{"items":[{"queue":"c-nulls","partition":null,"transactionId":null,"payload":1}]}`,
			want: []want{{"c-nulls", "Default", "", 0}},
		},
		{
			name: "every field given",
			body: pushBodyJSON(pushItemJSON("c-full", "cust-42", "order-91", `{"orderId":91}`)),
			want: []want{{"c-full", "cust-42", "order-91", 0}},
		},
		{
			name: "one partition, consecutive offsets in body order",
			body: pushBodyJSON(pushItemJSON("c-order", "", "a", "1"), pushItemJSON("c-order", "", "b", "2"),
				pushItemJSON("c-order", "", "", "3")),
			want: []want{{"c-order", "Default", "a", 0}, {"c-order", "Default", "b", 1}, {"c-order", "Default", "", 2}},
		},
		{
			name: "several queues and partitions, results in request order",
			body: pushBodyJSON(pushItemJSON("c-multi-1", "p1", "x1", "1"), pushItemJSON("c-multi-2", "", "x2", "2"),
				pushItemJSON("c-multi-1", "p1", "x3", "3"), pushItemJSON("c-multi-1", "p2", "x4", "4"),
				pushItemJSON("c-multi-2", "", "x5", "5")),
			want: []want{{"c-multi-1", "p1", "x1", 0}, {"c-multi-2", "Default", "x2", 0}, {"c-multi-1", "p1", "x3", 1},
				{"c-multi-1", "p2", "x4", 0}, {"c-multi-2", "Default", "x5", 1}},
		},
		{
			name: "names of 255 bytes",
			body: pushBodyJSON(pushItemJSON(long255, long255, "n", "null")),
			want: []want{{long255, long255, "n", 0}},
		},
		{
			name: "unicode and spaces are kept byte-exact",
			body: pushBodyJSON(pushItemJSON("c-commandes-é-日本", " padded ", "tx é 日本", `"x"`)),
			want: []want{{"c-commandes-é-日本", " padded ", "tx é 日本", 0}},
		},
		{
			name: "escaped names decode before storing",
			body: `{"items":[{"queue":"c-esc\u0041","partition":"p\/1","transactionId":"t\"1","payload":0}]}`,
			want: []want{{"c-escA", "p/1", `t"1`, 0}},
		},
		{
			name: "transactionId of 65535 bytes",
			body: pushBodyJSON(pushItemJSON("c-long-txn", "", longTxn, "0")),
			want: []want{{"c-long-txn", "Default", longTxn, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := b.postPush(t, tt.body)
			res := decodePushResponse(t, resp, body, len(tt.want))
			for i, w := range tt.want {
				r := res[i]
				txn := w.txn
				if txn == "" {
					txn = r.MessageID
				}
				if r.TransactionID != txn {
					t.Errorf("item %d: transaction_id %.40q, want %.40q", i, r.TransactionID, txn)
				}
				if r.QueueName != w.queue {
					t.Errorf("item %d: queueName %.40q, want %.40q", i, r.QueueName, w.queue)
				}
				if r.Status != "queued" {
					t.Errorf("item %d: status %q, want queued", i, r.Status)
				}
				if r.Offset == nil || *r.Offset != w.offset {
					t.Errorf("item %d: offset %v, want %d", i, r.Offset, w.offset)
				}
			}
			// A consumer reading each (queue, partition) from its start finds every item
			// at the reported offset, with the reported message id and transaction id,
			// under the exact names.
			read := map[string]map[string][]popMsg{}
			for i, w := range tt.want {
				if read[w.queue] == nil {
					read[w.queue] = b.readBack(t, w.queue)
				}
				msgs := read[w.queue][w.partition]
				off := res[i].Offset
				if off == nil || *off >= int64(len(msgs)) {
					t.Errorf("item %d: nothing delivered from %.40q/%.40q at offset %v (%d messages there)", i, w.queue, w.partition, off, len(msgs))
					continue
				}
				if m := msgs[*off]; m.ID != res[i].MessageID || m.TransactionID != res[i].TransactionID {
					t.Errorf("item %d: delivered id/txn %s/%.40q, reported %s/%.40q", i, m.ID, m.TransactionID,
						res[i].MessageID, res[i].TransactionID)
				}
			}
		})
	}
}

// testHTTPPushPayloads: every payload comes back as the JSON value that was sent. The
// broker stores the payload's bytes as pushed, but a client sees them re-encoded without
// insignificant whitespace, so that is what is compared.
func testHTTPPushPayloads(t *testing.T, b *broker) {
	const queue = "payloads"
	tests := []struct{ name, raw string }{
		{"null", `null`},
		{"empty object", `{}`},
		{"empty array with space", `[ ]`},
		{"array with odd spacing", `[1, 2 ,3]`},
		{"string", `"hello, world"`},
		{"string with escapes", `"caf\u00e9\n\t\"quoted\" \\ \ud83d\ude00 \/"`},
		{"raw unicode string", `"日本語 é 😀"`},
		{"number with exponent", `-1.50E+03`},
		{"zero", `0`},
		{"true", `true`},
		{"nested with odd whitespace", "{ \"a\" :{\"b\" : [ true,false ,null ] ,\n\t\"c\":{ }},\"d\":-1.5e3\r\n}"},
		{"duplicate keys kept", `{"k":1,"k":2}`},
		{"deeply nested", strings.Repeat(`[`, 50) + `"deep"` + strings.Repeat(`]`, 50)},
	}
	items := make([]string, len(tests))
	for i, tt := range tests {
		// Whitespace around the value is not part of it.
		items[i] = `{ "queue" : "` + queue + `", "payload" :` + " \n\t" + tt.raw + " \r\n" + `}`
	}
	res, msgs := pushAndReadBack(t, b, queue, "{\"items\":[\n"+strings.Join(items, " ,\n")+"\n]}", len(tests))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res[i].Status != "queued" || res[i].Offset == nil || *res[i].Offset != int64(i) {
				t.Fatalf("result %+v, want queued at %d", res[i], i)
			}
			m := msgs[i]
			if m.ID != res[i].MessageID {
				t.Errorf("message %d has id %s, reported %s", i, m.ID, res[i].MessageID)
			}
			if want := compactJSON(t, tt.raw); string(m.Data) != want {
				t.Errorf("delivered payload %s, sent %s", m.Data, tt.raw)
			}
		})
	}
}

// pushAndReadBack posts body, expects n results, and returns them with what a consumer
// reads from the queue's Default partition (which must be exactly n messages).
func pushAndReadBack(t *testing.T, b *broker, queue, body string, n int) ([]pushResult, []popMsg) {
	t.Helper()
	resp, raw := b.postPush(t, body)
	res := decodePushResponse(t, resp, raw, n)
	msgs := b.readBack(t, queue)["Default"]
	if len(msgs) != n {
		t.Fatalf("%d messages delivered, want %d", len(msgs), n)
	}
	return res, msgs
}

func testHTTPPushExtraKeys(t *testing.T, b *broker) {
	const queue = "extra-keys"
	tests := []struct{ name, item string }{
		{"traceId", `{"queue":"extra-keys","payload":{"n":0},"traceId":"0198e4c1-0000-7000-8000-000000000001"}`},
		{"producerSub", `{"queue":"extra-keys","payload":{"n":1},"producerSub":"forged-sub"}`},
		{"unknown keys of every type", `{"queue":"extra-keys","payload":{"n":2},"x":[1,{"y":null}],"z":{},"w":false}`},
	}
	items := make([]string, len(tests))
	for i, tt := range tests {
		items[i] = tt.item
	}
	res, msgs := pushAndReadBack(t, b, queue, `{"items":[`+strings.Join(items, ",")+`],"traceId":"top-level","extra":{}}`, len(tests))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res[i].Status != "queued" {
				t.Errorf("status %q, want queued", res[i].Status)
			}
			m := msgs[i]
			if m.ProducerSub != nil || m.TraceID != nil {
				t.Errorf("delivered producerSub %v, traceId %v: the body's values must be dropped", m.ProducerSub, m.TraceID)
			}
			if want := fmt.Sprintf(`{"n":%d}`, i); string(m.Data) != want {
				t.Errorf("payload %s, want %s", m.Data, want)
			}
		})
	}
}

// badQueue finds the well-formed queue names of the bad-request bodies.
var badQueue = regexp.MustCompile(`"queue":"(bad-[a-z0-9-]+)"`)

func testHTTPPushBadRequests(t *testing.T, b *broker) {
	good := func(q string) string { return pushItemJSON(q, "", "", `{"ok":true}`) }
	tests := []struct {
		name string
		body string
		want []string // substrings of the error message
	}{
		{"not JSON", `hello`, []string{"bad body", "invalid character"}},
		{"empty body", ``, []string{"bad body", "unexpected end of JSON input"}},
		{"truncated JSON", `{"items":[{"queue":"bad-truncated","payload":1}`, []string{"bad body", "unexpected end of JSON input"}},
		{"trailing data", `{"items":[]} x`, []string{"bad body", "after top-level value"}},
		{"payload not JSON", `{"items":[{"queue":"bad-payload","payload":{a}}]}`, []string{"bad body", "invalid character"}},
		{"top-level array", `[{"queue":"bad-array","payload":1}]`, []string{"bad body", "array"}},
		{"top-level string", `"items"`, []string{"bad body", "string"}},
		{"items missing", `{}`, []string{"bad body", "items"}},
		{"items misspelled", `{"item":[{"queue":"bad-misspelled","payload":1}]}`, []string{"bad body", "items"}},
		{"items not an array", `{"items":{"queue":"bad-object","payload":1}}`, []string{"bad body", "items"}},
		{"items a string", `{"items":"x"}`, []string{"bad body", "items"}},
		{"items null", `{"items":null}`, []string{"bad body", "items"}},
		{"item not an object", `{"items":[1]}`, []string{"bad body", "items"}},
		{"item null", `{"items":[null]}`, []string{"bad body", "queue"}},
		{"queue missing", `{"items":[{"payload":1}]}`, []string{"bad body", "item 0", "queue"}},
		{"queue null", `{"items":[{"queue":null,"payload":1}]}`, []string{"bad body", "item 0", "queue"}},
		{"payload missing", `{"items":[{"queue":"bad-no-payload"}]}`, []string{"bad body", "item 0", "payload"}},
		{"queue a number", `{"items":[{"queue":7,"payload":1}]}`, []string{"bad body", "queue"}},
		{"queue an object", `{"items":[{"queue":{"name":"q"},"payload":1}]}`, []string{"bad body", "queue"}},
		{"partition a number", `{"items":[{"queue":"bad-part-num","partition":3,"payload":1}]}`, []string{"bad body", "partition"}},
		{"transactionId a number", `{"items":[{"queue":"bad-txn-num","transactionId":42,"payload":1}]}`, []string{"bad body", "transactionId"}},
		{"queue empty", `{"items":[{"queue":"","payload":1}]}`, []string{"bad body", "item 0", "queue", "empty"}},
		{"partition empty", `{"items":[{"queue":"bad-part-empty","partition":"","payload":1}]}`, []string{"bad body", "item 0", "partition", "empty"}},
		{"queue of 256 bytes", pushBodyJSON(pushItemJSON(strings.Repeat("q", 256), "", "", "1")), []string{"bad body", "queue", "256", "255"}},
		{"partition of 256 bytes", pushBodyJSON(pushItemJSON("bad-part-long", strings.Repeat("p", 256), "", "1")), []string{"bad body", "partition", "256", "255"}},
		{"queue with a control character", `{"items":[{"queue":"a\u0001b","payload":1}]}`, []string{"bad body", "queue", "control character"}},
		{"queue with DEL", `{"items":[{"queue":"a\u007fb","payload":1}]}`, []string{"bad body", "queue", "control character"}},
		{"queue with a C1 control", `{"items":[{"queue":"a\u0085b","payload":1}]}`, []string{"bad body", "queue", "control character"}},
		{"partition with a newline", `{"items":[{"queue":"bad-part-nl","partition":"a\nb","payload":1}]}`, []string{"bad body", "partition", "control character"}},
		{"transactionId with a tab", `{"items":[{"queue":"bad-txn-tab","transactionId":"a\tb","payload":1}]}`, []string{"bad body", "transactionId", "control character"}},
		{"queue not valid UTF-8", "{\"items\":[{\"queue\":\"bad-utf8-\xff\",\"payload\":1}]}", []string{"bad body", "queue", "UTF-8"}},
		{"partition not valid UTF-8", "{\"items\":[{\"queue\":\"bad-utf8-part\",\"partition\":\"p\xc3\",\"payload\":1}]}", []string{"bad body", "partition", "UTF-8"}},
		{"transactionId not valid UTF-8", "{\"items\":[{\"queue\":\"bad-utf8-txn\",\"transactionId\":\"t\xed\xa0\x80\",\"payload\":1}]}", []string{"bad body", "transactionId", "UTF-8"}},
		{"transactionId over 65535 bytes", pushBodyJSON(pushItemJSON("bad-txn-long", "", strings.Repeat("t", 65536), "1")), []string{"bad body", "transactionId", "65535"}},
		{"one bad item among good ones", pushBodyJSON(good("bad-mixed-1"), good("bad-mixed-2"), pushItemJSON("", "", "", "1"), good("bad-mixed-3")),
			[]string{"bad body", "item 2", "queue"}},
		{"one item without payload among good ones", pushBodyJSON(good("bad-mixed-4"), `{"queue":"bad-mixed-4"}`), []string{"bad body", "item 1", "payload"}},
	}
	// What the broker has committed: push requests, frames and segments.
	counts := func() [3]float64 {
		return [3]float64{
			b.metric(t, "queen_process_push_requests_total"),
			b.metric(t, `queen_batch_items_fired_total{op="push"}`),
			b.metric(t, "queen_fusion_segments_total"),
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := counts()
			resp, body := b.doBad(t, http.MethodPost, "/api/v1/push", strings.NewReader(tt.body))
			wantErrorBody(t, resp, body, http.StatusBadRequest, "", tt.want...)
			if after := counts(); after != before {
				t.Errorf("(accepted requests, frames, segments) went from %v to %v: a rejected request was taken", before, after)
			}
			// Nor did it create a queue of any (valid) name it carries.
			for _, m := range badQueue.FindAllStringSubmatch(tt.body, -1) {
				if b.queueExists(t, m[1]) {
					t.Errorf("a rejected request created queue %s", m[1])
				}
			}
		})
	}
}

func testHTTPRoutes(t *testing.T, b *broker) {
	tests := []struct {
		name, method, path string
		status             int
		code               string
		want               []string
	}{
		{"unknown GET route", http.MethodGet, "/api/v1/nope", http.StatusNotFound, "no_such_route", []string{"Not Found"}},
		{"unknown POST route", http.MethodPost, "/api/v1/nope", http.StatusNotFound, "no_such_route", []string{"Not Found"}},
		{"push with a trailing path", http.MethodPost, "/api/v1/push/extra", http.StatusNotFound, "no_such_route", []string{"Not Found"}},
		{"GET on push", http.MethodGet, "/api/v1/push", http.StatusMethodNotAllowed, "", []string{"GET", "/api/v1/push"}},
		{"PUT on push", http.MethodPut, "/api/v1/push", http.StatusMethodNotAllowed, "", []string{"PUT", "/api/v1/push"}},
		{"DELETE on push", http.MethodDelete, "/api/v1/push", http.StatusMethodNotAllowed, "", []string{"DELETE", "/api/v1/push"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.method != http.MethodGet {
				body = strings.NewReader(`{"items":[]}`)
			}
			resp, raw := b.doBad(t, tt.method, tt.path, body)
			wantErrorBody(t, resp, raw, tt.status, tt.code, tt.want...)
			if tt.code != "" && strings.TrimSpace(string(raw)) != `{"error":"Not Found","code":"no_such_route"}` &&
				strings.TrimSpace(string(raw)) != `{"code":"no_such_route","error":"Not Found"}` {
				t.Errorf("body %s", raw)
			}
		})
	}
}

// getJSON fetches path, expects 200 with a JSON object and decodes it.
func getJSON(t *testing.T, b *broker, path string) map[string]any {
	t.Helper()
	resp, body := b.do(t, http.MethodGet, path, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, resp.StatusCode, body)
	}
	wantJSONContentType(t, resp)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("GET %s: %s: %v", path, body, err)
	}
	return m
}

func testHTTPHealth(t *testing.T, b *broker) {
	h := getJSON(t, b, "/health")
	tests := []struct {
		key  string
		want string // "" means any non-empty string
	}{
		{"status", "healthy"},
		{"database", "connected"},
		{"engine", ""},
		{"version", ""},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			s, ok := h[tt.key].(string)
			switch {
			case !ok:
				t.Errorf("%s is %v (%T), want a string", tt.key, h[tt.key], h[tt.key])
			case tt.want == "" && s == "":
				t.Errorf("%s is empty", tt.key)
			case tt.want != "" && s != tt.want:
				t.Errorf("%s = %q, want %q", tt.key, s, tt.want)
			}
		})
	}
}

func testHTTPMetricsJSON(t *testing.T, b *broker) {
	b.push(t, map[string]any{"queue": "metrics-json", "payload": 1})
	m := getJSON(t, b, "/metrics")
	if got, want := keysOf(m), sortedCopy([]string{"uptime", "requests", "messages", "database", "memory", "cpu"}); !slices.Equal(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
	tests := []struct {
		key  string
		keys []string // nil: a number
	}{
		{"uptime", nil},
		{"requests", []string{"total", "rate"}},
		{"messages", []string{"total", "rate"}},
		{"database", []string{"poolSize", "idleConnections", "waitingRequests"}},
		{"memory", []string{"rss", "heapTotal", "heapUsed", "external", "arrayBuffers"}},
		{"cpu", []string{"user", "system"}},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if tt.keys == nil {
				if _, ok := m[tt.key].(float64); !ok {
					t.Errorf("%s is %T, want a number", tt.key, m[tt.key])
				}
				return
			}
			obj, ok := m[tt.key].(map[string]any)
			if !ok {
				t.Fatalf("%s is %T, want an object", tt.key, m[tt.key])
			}
			if got := keysOf(obj); !slices.Equal(got, sortedCopy(tt.keys)) {
				t.Errorf("%s has keys %v, want %v", tt.key, got, sortedCopy(tt.keys))
			}
			for k, v := range obj {
				if _, ok := v.(float64); !ok {
					t.Errorf("%s.%s is %T, want a number", tt.key, k, v)
				}
			}
			if tt.key == "requests" || tt.key == "messages" {
				if total, _ := obj["total"].(float64); total < 1 {
					t.Errorf("%s.total = %v after a push, want > 0", tt.key, obj["total"])
				}
			}
		})
	}
}

func testHTTPPrometheus(t *testing.T, b *broker) {
	b.push(t, map[string]any{"queue": "metrics-prom", "payload": 1}, map[string]any{"queue": "metrics-prom", "payload": 2})
	resp, body := b.do(t, http.MethodGet, "/metrics/prometheus", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	// docs/api.md §1: text/plain; version=0.0.4; charset=utf-8 and Cache-Control: no-cache.
	for _, h := range []struct{ name, prefix string }{
		{"Content-Type", "text/plain; version=0.0.4"},
		{"Cache-Control", "no-cache"},
	} {
		t.Run("header "+h.name, func(t *testing.T) {
			if v := resp.Header.Get(h.name); !strings.HasPrefix(v, h.prefix) {
				t.Errorf("%s %q, want %q", h.name, v, h.prefix)
			}
		})
	}
	help, typ := map[string]bool{}, map[string]string{}
	samples := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# HELP "):
			help[strings.Fields(line)[2]] = true
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if len(f) == 4 {
				typ[f[2]] = f[3]
			}
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				t.Errorf("malformed sample line %q", line)
				continue
			}
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				t.Errorf("sample %q: %v", line, err)
				continue
			}
			samples[line[:i]] = v
		}
	}
	tests := []struct {
		family, sample, typ string
		positive            bool // must be > 0 after pushes
	}{
		{"queen_batch_items_fired_total", `queen_batch_items_fired_total{op="push"}`, "counter", true},
		{"queen_fusion_items_per_batch", `queen_fusion_items_per_batch{op="push"}`, "gauge", true},
		{"queen_fusion_commits_total", `queen_fusion_commits_total`, "counter", true},
		{"queen_fusion_segments_total", `queen_fusion_segments_total`, "counter", true},
		{"queen_batches_fired_total", `queen_batches_fired_total{op="push"}`, "counter", true},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			if !help[tt.family] {
				t.Errorf("no # HELP %s", tt.family)
			}
			if typ[tt.family] != tt.typ {
				t.Errorf("# TYPE %s is %q, want %q", tt.family, typ[tt.family], tt.typ)
			}
			v, ok := samples[tt.sample]
			if !ok {
				t.Fatalf("no sample %s", tt.sample)
			}
			if tt.positive && v <= 0 {
				t.Errorf("%s = %v after pushes, want > 0", tt.sample, v)
			}
		})
	}
}

// hiddenLength hides a reader's length so the client sends a chunked body.
type hiddenLength struct{ r io.Reader }

func (h hiddenLength) Read(p []byte) (int, error) { return h.r.Read(p) }

// TestHTTPBodyLimit: bodies above QUEEN_MAX_BODY_BYTES are answered 413 with a JSON
// error whether or not the client announced the length; bodies at the limit are accepted.
func TestHTTPBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 1024
	b := startBroker(t, map[string]string{"QUEEN_MAX_BODY_BYTES": strconv.Itoa(limit)})
	// bodyOf returns a valid push body of exactly n bytes.
	bodyOf := func(n int) string {
		prefix, suffix := `{"items":[{"queue":"limit","payload":"`, `"}]}`
		return prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix
	}
	tests := []struct {
		name    string
		size    int
		chunked bool
		status  int
	}{
		{"content-length far over", 2000, false, http.StatusRequestEntityTooLarge},
		{"chunked far over", 2000, true, http.StatusRequestEntityTooLarge},
		{"content-length one over", limit + 1, false, http.StatusRequestEntityTooLarge},
		{"chunked one over", limit + 1, true, http.StatusRequestEntityTooLarge},
		{"content-length at the limit", limit, false, http.StatusCreated},
		{"chunked at the limit", limit, true, http.StatusCreated},
	}
	// The cases run one after another: the broker's segment counter moves only for them.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := bodyOf(tt.size)
			if len(body) != tt.size {
				t.Fatalf("built a %d-byte body, want %d", len(body), tt.size)
			}
			before := b.metric(t, "queen_fusion_segments_total")
			var r io.Reader = strings.NewReader(body)
			if tt.chunked {
				r = hiddenLength{r}
			}
			resp, raw := b.do(t, http.MethodPost, "/api/v1/push", r)
			after := b.metric(t, "queen_fusion_segments_total")
			if tt.status == http.StatusCreated {
				res := decodePushResponse(t, resp, raw, 1)
				if res[0].Status != "queued" || after != before+1 {
					t.Errorf("status %q, segments %v -> %v: want queued and one more segment", res[0].Status, before, after)
				}
				return
			}
			wantErrorBody(t, resp, raw, tt.status, "", strconv.Itoa(limit))
			if after != before {
				t.Errorf("segments %v -> %v: a rejected body stored something", before, after)
			}
		})
	}
}
