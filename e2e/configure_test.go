package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// configureAnswer is a 200 answer of POST /api/v1/configure, decoded strictly.
type configureAnswer struct {
	Configured  bool            `json:"configured"`
	QueueID     string          `json:"queueId"`
	PartitionID *string         `json:"partitionId"`
	Queue       string          `json:"queue"`
	Namespace   string          `json:"namespace"`
	Task        string          `json:"task"`
	Storage     string          `json:"storage"`
	Options     map[string]any  `json:"options"`
	raw         json.RawMessage `json:"-"`
}

var (
	configureKeys = []string{"configured", "queueId", "partitionId", "queue", "namespace", "task", "storage", "options"}
	// defaultOptions are the option defaults of docs/api.md §5.6, in the answer's key order.
	defaultOptions = []struct {
		key string
		val any
	}{
		{"priority", 0.0}, {"leaseTime", 300.0}, {"retryLimit", 3.0}, {"retryDelay", 1000.0}, {"maxSize", 0.0},
		{"ttl", 3600.0}, {"deadLetterQueue", true}, {"dlqAfterMaxRetries", true}, {"delayedProcessing", 0.0},
		{"windowBuffer", 0.0}, {"retentionSeconds", 0.0}, {"completedRetentionSeconds", 0.0},
		{"retentionEnabled", false}, {"encryptionEnabled", false}, {"maxWaitTimeSeconds", 0.0},
		{"minPopWaitTime", 0.0}, {"dedupWindowSeconds", 3600.0}, {"retentionSinkHold", ""},
		{"retentionSinkHoldMaxSeconds", 604800.0},
	}
)

// configure posts body and decodes a 200 answer, checking its shape key by key.
func (b *broker) configure(t testing.TB, body string) configureAnswer {
	t.Helper()
	code, raw := b.post(t, "/api/v1/configure", body)
	if code != http.StatusOK {
		t.Fatalf("configure %s: status %d, body %s", body, code, raw)
	}
	if got := jsonKeys(t, raw); !slices.Equal(got, configureKeys) {
		t.Fatalf("answer keys %v, want %v", got, configureKeys)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	var wantOpts []string
	for _, o := range defaultOptions {
		wantOpts = append(wantOpts, o.key)
	}
	if got := jsonKeys(t, top["options"]); !slices.Equal(got, wantOpts) {
		t.Fatalf("options keys %v, want %v", got, wantOpts)
	}
	var ans configureAnswer
	if err := decodeStrict(raw, &ans); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	if !ans.Configured || ans.PartitionID != nil || ans.Storage != "segments" || ans.QueueID == "" {
		t.Fatalf("answer %s: want configured true, partitionId null, storage segments and a queue id", raw)
	}
	ans.raw = raw
	return ans
}

// wantOptions checks every option of an answer: the defaults, except those in changed.
func wantOptions(t testing.TB, ans configureAnswer, changed map[string]any) {
	t.Helper()
	for _, o := range defaultOptions {
		want := o.val
		if v, ok := changed[o.key]; ok {
			want = v
		}
		if ans.Options[o.key] != want {
			t.Errorf("%s: option %s = %v (%T), want %v", ans.Queue, o.key, ans.Options[o.key], ans.Options[o.key], want)
		}
	}
}

// queueExists reports whether the broker knows queue, through DELETE
// /api/v1/resources/queues (existed): it deletes the queue, so only for queues a test
// expects not to exist, or is done with.
func (b *broker) queueExists(t testing.TB, queue string) bool {
	t.Helper()
	resp, raw := b.do(t, http.MethodDelete, "/api/v1/resources/queues/"+queue, nil)
	var ans struct {
		Existed bool `json:"existed"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &ans) != nil {
		t.Fatalf("DELETE queue %s: %d %s", queue, resp.StatusCode, raw)
	}
	return ans.Existed
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	t.Run("echo shape and stored row", func(t *testing.T) {
		t.Parallel()
		ans := b.configure(t, `{"queue":"orders","namespace":"billing","task":"invoice","options":{"leaseTime":120,"retentionSinkHold":"s3-eu"}}`)
		if ans.Queue != "orders" || ans.Namespace != "billing" || ans.Task != "invoice" {
			t.Fatalf("identity %s", ans.raw)
		}
		changed := map[string]any{"leaseTime": 120.0, "retentionSinkHold": "s3-eu"}
		wantOptions(t, ans, changed)
		// What was stored is what a merge that changes nothing reads back.
		again := b.configure(t, `{"queue":"orders","mode":"merge"}`)
		if again.QueueID != ans.QueueID || again.Namespace != "billing" || again.Task != "invoice" {
			t.Fatalf("stored identity %s, want the answer %s", again.raw, ans.raw)
		}
		wantOptions(t, again, changed)
	})

	t.Run("every option set", func(t *testing.T) {
		t.Parallel()
		ans := b.configure(t, `{"queue":"all-set","options":{"namespace":"n","task":"t","priority":1,"leaseTime":2,
			"retryLimit":3,"retryDelay":4,"maxSize":5,"ttl":6,"deadLetterQueue":false,"dlqAfterMaxRetries":false,
			"delayedProcessing":7,"windowBuffer":8,"retentionSeconds":9,"completedRetentionSeconds":10,
			"retentionEnabled":true,"encryptionEnabled":true,"maxWaitTimeSeconds":11,"minPopWaitTime":12,
			"dedupWindowSeconds":13,"retentionSinkHold":"h","retentionSinkHoldMaxSeconds":60}}`)
		if ans.Namespace != "n" || ans.Task != "t" {
			t.Fatalf("identity %s", ans.raw)
		}
		wantOptions(t, ans, map[string]any{"priority": 1.0, "leaseTime": 2.0, "retryLimit": 3.0, "retryDelay": 4.0,
			"maxSize": 5.0, "ttl": 6.0, "deadLetterQueue": false, "dlqAfterMaxRetries": false, "delayedProcessing": 7.0,
			"windowBuffer": 8.0, "retentionSeconds": 9.0, "completedRetentionSeconds": 10.0, "retentionEnabled": true,
			"encryptionEnabled": true, "maxWaitTimeSeconds": 11.0, "minPopWaitTime": 12.0, "dedupWindowSeconds": 13.0,
			"retentionSinkHold": "h", "retentionSinkHoldMaxSeconds": 60.0})
	})

	tests := []struct {
		name      string
		bodies    []string // posted in order; the last answer is checked
		queue     string
		namespace string
		task      string
		changed   map[string]any // options that differ from the defaults
	}{
		{"merge keeps absent keys", []string{
			`{"queue":"m1","options":{"leaseTime":100,"retryLimit":7}}`,
			`{"queue":"m1","options":{"priority":3}}`,
			`{"queue":"m1","mode":"merge","options":{"ttl":60}}`,
			`{"queue":"m1","mode":null}`,
		}, "m1", "", "", map[string]any{"leaseTime": 100.0, "retryLimit": 7.0, "priority": 3.0, "ttl": 60.0}},
		{"null resets to the default", []string{
			`{"queue":"m2","options":{"leaseTime":100,"encryptionEnabled":true,"namespace":"x"}}`,
			`{"queue":"m2","options":{"leaseTime":null,"encryptionEnabled":null,"namespace":null}}`,
		}, "m2", "", "", nil},
		{"replace applies defaults to absent keys", []string{
			`{"queue":"m3","options":{"leaseTime":100,"retryLimit":7,"task":"old"}}`,
			`{"queue":"m3","mode":"replace","options":{"priority":2}}`,
		}, "m3", "", "", map[string]any{"priority": 2.0}},
		{"top-level options", []string{
			`{"queue":"m4","leaseTime":45,"encryptionEnabled":true,"namespace":"top","task":"level"}`,
		}, "m4", "top", "level", map[string]any{"leaseTime": 45.0, "encryptionEnabled": true}},
		{"top-level namespace and task fold into options", []string{
			`{"queue":"m5","namespace":"ns","task":"tk","options":{"priority":1}}`,
		}, "m5", "ns", "tk", map[string]any{"priority": 1.0}},
		{"options win over the top level", []string{
			`{"queue":"m6","namespace":"top","task":"top","options":{"namespace":"inner"}}`,
		}, "m6", "inner", "top", nil},
		{"an empty top-level namespace does not fold", []string{
			`{"queue":"shop.m7","namespace":"","options":{}}`,
		}, "shop.m7", "shop", "m7", nil},
		{"a dotted name derives namespace and task", []string{
			`{"queue":"shop.cart.v2"}`,
		}, "shop.cart.v2", "shop", "cart", nil},
		{"replace derives them again", []string{
			`{"queue":"shop.m8","namespace":"a","task":"b"}`,
			`{"queue":"shop.m8","mode":"replace"}`,
		}, "shop.m8", "shop", "m8", nil},
		{"clamping", []string{
			`{"queue":"m9","options":{"dedupWindowSeconds":-5,"minPopWaitTime":99999}}`,
		}, "m9", "", "", map[string]any{"dedupWindowSeconds": 0.0, "minPopWaitTime": 60000.0}},
		{"0 stays valid where it means none or off, leaseTime from 1 s", []string{
			`{"queue":"m10","options":{"leaseTime":1,"retryLimit":0,"retryDelay":0,"maxSize":0,"ttl":0,"delayedProcessing":0,` +
				`"windowBuffer":0,"retentionSeconds":0,"completedRetentionSeconds":0,"maxWaitTimeSeconds":0,"priority":-1}}`,
		}, "m10", "", "", map[string]any{"leaseTime": 1.0, "retryLimit": 0.0, "retryDelay": 0.0, "ttl": 0.0, "priority": -1.0}},
		{"the bounds' upper ends", []string{
			`{"queue":"m11","options":{"leaseTime":31536000,"delayedProcessing":31536000,"windowBuffer":31536000,` +
				`"retryLimit":2147483647,"retentionSeconds":2147483647}}`,
		}, "m11", "", "", map[string]any{"leaseTime": 31536000.0, "delayedProcessing": 31536000.0, "windowBuffer": 31536000.0,
			"retryLimit": 2147483647.0, "retentionSeconds": 2147483647.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var ans configureAnswer
			var ids []string
			for _, body := range tt.bodies {
				ans = b.configure(t, body)
				ids = append(ids, ans.QueueID)
			}
			if ans.Queue != tt.queue || ans.Namespace != tt.namespace || ans.Task != tt.task {
				t.Errorf("queue %q namespace %q task %q, want %q %q %q", ans.Queue, ans.Namespace, ans.Task, tt.queue, tt.namespace, tt.task)
			}
			wantOptions(t, ans, tt.changed)
			if len(slices.Compact(slices.Clone(ids))) != 1 {
				t.Errorf("queue ids %v: configure created a second queue", ids)
			}
		})
	}

	t.Run("a queue created by a push becomes configured and keeps its row", func(t *testing.T) {
		t.Parallel()
		const queue = "pushed.first"
		b.pushN(t, queue, "Default", "m", 2)
		// Unconfigured, a pop leases for 60 s (docs/api.md §5.6, leaseTime); configured with
		// the defaults, for leaseTime's 300 s.
		leaseLength := func(p *popResp) time.Duration {
			t.Helper()
			at, ok := b.leaseExpiry(t, p.LeaseID)
			if !ok {
				t.Fatal("the pop's lease is gone at once")
			}
			return time.Until(at)
		}
		p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1")
		if d := leaseLength(p); d > 60*time.Second || d < 55*time.Second {
			t.Fatalf("the pushed (unconfigured) queue leases for %v, want 60 s", d)
		}
		b.ackAll(t, p, "")
		ans := b.configure(t, `{"queue":"pushed.first","options":{"priority":4}}`)
		if ans.Namespace != "pushed" || ans.Task != "first" {
			t.Fatalf("answer %s, want the pushed queue's namespace and task", ans.raw)
		}
		if again := b.configure(t, `{"queue":"pushed.first"}`); again.QueueID != ans.QueueID {
			t.Fatalf("queue id %s, then %s", ans.QueueID, again.QueueID)
		}
		// The same row: its message is still there, now under the configured lease.
		p = b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1")
		wantTxns(t, p, "m-1")
		if d := leaseLength(p); d > 300*time.Second || d < 295*time.Second {
			t.Fatalf("the configured queue leases for %v, want 300 s", d)
		}
	})
}

func TestConfigureBadRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	tests := []struct {
		name    string
		body    string
		want    []string // substrings of the error
		invalid string   // the "invalid" key, when expected
	}{
		{"not JSON", `{"queue":`, []string{"bad body"}, ""},
		{"not an object", `[1]`, []string{"bad body"}, ""},
		{"queue missing", `{"options":{}}`, []string{"queue is required"}, ""},
		{"queue null", `{"queue":null}`, []string{"queue is required"}, ""},
		{"queue a number", `{"queue":5}`, []string{"queue is required"}, ""},
		{"queue with a control character", `{"queue":"a\u0001b"}`, []string{"queue", "control character"}, ""},
		{"queue too long", `{"queue":"` + strings.Repeat("q", 256) + `"}`, []string{"queue", "256 bytes"}, ""},
		{"mode unknown", `{"queue":"q","mode":"upsert"}`, []string{`mode must be "merge" or "replace", got "upsert"`}, ""},
		{"mode a number", `{"queue":"q","mode":1}`, []string{`mode must be "merge" or "replace", got 1`}, ""},
		{"options not an object", `{"queue":"q","options":[1]}`, []string{"options must be an object"}, ""},
		{"integer option given a string", `{"queue":"q","options":{"leaseTime":"300"}}`, []string{"leaseTime", "integer"}, ""},
		{"integer option given a fraction", `{"queue":"q","options":{"retryLimit":1.5}}`, []string{"retryLimit", "integer"}, ""},
		{"integer option beyond int32", `{"queue":"q","options":{"ttl":1e12}}`, []string{"ttl", "between"}, "ttl"},
		{"empty queue name", `{"queue":""}`, []string{"queue must not be empty"}, ""},
		{"empty queue name with options", `{"queue":"","options":{"priority":1}}`, []string{"queue must not be empty"}, ""},
		{"leaseTime -1", `{"queue":"q","options":{"leaseTime":-1}}`, []string{"option leaseTime must be between 1 and 31536000, got -1"}, "leaseTime"},
		{"leaseTime 0", `{"queue":"q","options":{"leaseTime":0}}`, []string{"leaseTime", "between 1 and 31536000"}, "leaseTime"},
		{"leaseTime above a year", `{"queue":"q","leaseTime":31536001}`, []string{"leaseTime", "between 1 and 31536000"}, "leaseTime"},
		{"negative retryLimit", `{"queue":"q","options":{"retryLimit":-1}}`, []string{"retryLimit", "between 0 and 2147483647"}, "retryLimit"},
		{"negative retryDelay", `{"queue":"q","options":{"retryDelay":-1}}`, []string{"retryDelay", "between 0 and"}, "retryDelay"},
		{"negative maxSize", `{"queue":"q","options":{"maxSize":-1}}`, []string{"maxSize", "between 0 and"}, "maxSize"},
		{"negative ttl", `{"queue":"q","options":{"ttl":-1}}`, []string{"ttl", "between 0 and"}, "ttl"},
		{"negative retentionSeconds", `{"queue":"q","options":{"retentionSeconds":-1}}`, []string{"retentionSeconds", "between 0 and"}, "retentionSeconds"},
		{"negative completedRetentionSeconds", `{"queue":"q","options":{"completedRetentionSeconds":-1}}`,
			[]string{"completedRetentionSeconds", "between 0 and"}, "completedRetentionSeconds"},
		{"negative maxWaitTimeSeconds", `{"queue":"q","options":{"maxWaitTimeSeconds":-1}}`, []string{"maxWaitTimeSeconds", "between 0 and"}, "maxWaitTimeSeconds"},
		{"negative delayedProcessing", `{"queue":"q","options":{"delayedProcessing":-1}}`, []string{"delayedProcessing", "between 0 and 31536000"}, "delayedProcessing"},
		{"negative windowBuffer", `{"queue":"q","windowBuffer":-1}`, []string{"windowBuffer", "between 0 and 31536000"}, "windowBuffer"},
		{"boolean option given a number", `{"queue":"q","options":{"encryptionEnabled":1}}`, []string{"encryptionEnabled", "true or false"}, ""},
		{"string option given a number", `{"queue":"q","options":{"task":7}}`, []string{"task", "string"}, ""},
		{"top-level option given a wrong type", `{"queue":"q","deadLetterQueue":"yes"}`, []string{"deadLetterQueue"}, ""},
		{"retention sink hold pattern", `{"queue":"q","options":{"retentionSinkHold":"no spaces"}}`, []string{"retentionSinkHold"}, "retentionSinkHold"},
		{"retention sink hold max too small", `{"queue":"q","options":{"retentionSinkHoldMaxSeconds":59}}`, []string{"retentionSinkHoldMaxSeconds"}, "retentionSinkHoldMaxSeconds"},
		{"retention sink hold max too large", `{"queue":"q","retentionSinkHoldMaxSeconds":31536001}`, []string{"retentionSinkHoldMaxSeconds"}, "retentionSinkHoldMaxSeconds"},
	}
	// Every refused request names queue "q" (or an invalid name): none may create it.
	// Checked once the parallel cases are done.
	t.Cleanup(func() {
		if b.queueExists(t, "q") {
			t.Error("a refused request created queue q")
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, body := b.doBad(t, http.MethodPost, "/api/v1/configure", strings.NewReader(tt.body))
			if tt.invalid == "" {
				wantErrorBody(t, resp, body, http.StatusBadRequest, "", tt.want...)
				return
			}
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
			}
			var e map[string]string
			if err := json.Unmarshal(body, &e); err != nil || len(e) != 2 || e["invalid"] != tt.invalid {
				t.Fatalf("body %s, want exactly error and invalid=%q", body, tt.invalid)
			}
			for _, s := range tt.want {
				if !strings.Contains(e["error"], s) {
					t.Errorf("error %q does not contain %q", e["error"], s)
				}
			}
		})
	}
}

// Configure acts on the very next push: this broker's cached encryption flag and dedup
// watermarks of the queue are dropped.
func TestConfigureTakesEffectAtOnce(t *testing.T) {
	t.Parallel()
	// A long cache refresh: only the invalidation can make the change visible in time.
	b := startBroker(t, map[string]string{
		"QUEEN_ENCRYPTION_KEY":            strings.Repeat("0123456789abcdef", 4),
		"QUEEN_CACHE_REFRESH_INTERVAL_MS": "3600000",
	})

	t.Run("encryption", func(t *testing.T) {
		t.Parallel()
		b.push(t, map[string]any{"queue": "enc", "transactionId": "before", "payload": map[string]any{"card": "4111"}}) // caches "off"
		b.configure(t, `{"queue":"enc","options":{"encryptionEnabled":true}}`)
		b.push(t, map[string]any{"queue": "enc", "transactionId": "while", "payload": map[string]any{"card": "4111"}})
		b.configure(t, `{"queue":"enc","options":{"encryptionEnabled":false}}`)
		b.push(t, map[string]any{"queue": "enc", "transactionId": "after", "payload": map[string]any{"card": "4111"}})
		// A broker without the key delivers what is stored encrypted as null: only the
		// message pushed while encryption was on.
		keyless := startBrokerOn(t, b.DB, nil)
		p := keyless.popMust(t, "/api/v1/pop/queue/enc?batch=10")
		wantTxns(t, p, "before", "while", "after")
		var got []string
		for _, m := range p.Messages {
			got = append(got, string(m.Data))
		}
		if want := []string{`{"card":"4111"}`, "null", `{"card":"4111"}`}; !slices.Equal(got, want) {
			t.Fatalf("a broker without the key reads %v, want %v", got, want)
		}
	})

	t.Run("widened dedup window", func(t *testing.T) {
		t.Parallel()
		// With a 1 s window, "a" is evicted from the broker's dedup cache by the time "b"
		// commits, and the cache then vouches for offsets 0-1.
		b.configure(t, `{"queue":"dw","options":{"dedupWindowSeconds":1}}`)
		b.push(t, map[string]any{"queue": "dw", "transactionId": "a", "payload": 1})
		elapse(t, time.Now(), 1500*time.Millisecond)
		b.push(t, map[string]any{"queue": "dw", "transactionId": "b", "payload": 2})
		// Widened: "a" at offset 0 is inside the window again, and must be found.
		b.configure(t, `{"queue":"dw","options":{"dedupWindowSeconds":3600}}`)
		r := b.push(t, map[string]any{"queue": "dw", "transactionId": "a", "payload": 3})
		if r[0].Status != "duplicate" || r[0].Offset == nil || *r[0].Offset != 0 {
			t.Fatalf("re-push of a after widening: %+v, want duplicate of offset 0", r[0])
		}
	})

	t.Run("dedup turned off and on", func(t *testing.T) {
		t.Parallel()
		b.push(t, map[string]any{"queue": "dd", "transactionId": "x", "payload": 1})
		b.configure(t, `{"queue":"dd","options":{"dedupWindowSeconds":0}}`)
		if r := b.push(t, map[string]any{"queue": "dd", "transactionId": "x", "payload": 2}); r[0].Status != "queued" {
			t.Fatalf("with dedup off: %+v, want queued", r[0])
		}
		b.configure(t, `{"queue":"dd","options":{"dedupWindowSeconds":null}}`)
		if r := b.push(t, map[string]any{"queue": "dd", "transactionId": "x", "payload": 3}); r[0].Status != "duplicate" {
			t.Fatalf("with dedup back on: %+v, want duplicate", r[0])
		}
	})
}

// A negative leaseTime used to be stored: every pop's lease was born expired and the
// next pop got the same message again. It is refused, and the queue keeps its lease.
func TestConfigureRefusesAnExpiredLease(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	b.configure(t, `{"queue":"lease","options":{"leaseTime":30}}`)
	resp, body := b.doBad(t, http.MethodPost, "/api/v1/configure", strings.NewReader(`{"queue":"lease","options":{"leaseTime":-1}}`))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid":"leaseTime"`) {
		t.Fatalf("leaseTime -1: %d %s, want 400 naming leaseTime", resp.StatusCode, body)
	}
	b.pushN(t, "lease", "p", "m", 2)
	wantTxns(t, b.popMust(t, "/api/v1/pop/queue/lease?batch=1"), "m-0")
	// The lease holds the partition: the next pop gets nothing, not m-0 again.
	b.popEmpty(t, "/api/v1/pop/queue/lease?batch=1")
}

// deadLetterQueue and dlqAfterMaxRetries default to true, as in Queen's Rust server
// (its C++ server defaulted both to false, which drops a message past its retry limit):
// a queue that never mentions them dead-letters the message its failures exhausted,
// whether a push created it or a configure without the two options did. README, "Where
// we differ from Queen".
func TestConfigureDeadLetterDefaults(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	tests := []struct {
		name      string
		configure string // "" : the queue is created by its first push
		failures  int    // explicit failures until the dead letter: retryLimit + 1
	}{
		{"created by a push: retryLimit 3", "", 4},
		{"configured without the DLQ options", `{"queue":"dlqdef1","options":{"retryLimit":1}}`, 2},
		{"configured with them reset to their defaults", `{"queue":"dlqdef2","options":{"retryLimit":0,` +
			`"deadLetterQueue":null,"dlqAfterMaxRetries":null}}`, 1},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			queue := fmt.Sprint("dlqdef", i)
			if tt.configure != "" {
				ans := b.configure(t, tt.configure)
				if ans.Options["deadLetterQueue"] != true || ans.Options["dlqAfterMaxRetries"] != true {
					t.Fatalf("answer %s: want both DLQ options true", ans.raw)
				}
			}
			b.pushN(t, queue, "p", "m", 2)
			for k := range tt.failures {
				p := b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1")
				wantTxns(t, p, "m-0")
				it := ackItemOf(p.Messages[0], "failed")
				it["error"] = "boom"
				if res := b.ackBatch(t, "", it); res[0].DLQ != (k == tt.failures-1) {
					t.Fatalf("failure %d: %+v, want dlq only on the last", k+1, res[0])
				}
			}
			b.wantDeadLetters(t, queue, &deadLetterWant{"boom", tt.failures - 1})
			wantTxns(t, b.popMust(t, "/api/v1/pop/queue/"+queue+"?batch=1"), "m-1")
		})
	}
}
