package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Visibility (delayedProcessing, windowBuffer), long polls, and what a pop delivers.

// getCtx GETs path under ctx; it reports errors instead of failing, for use from
// goroutines.
func getCtx(ctx context.Context, a *testApp, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// createdAt parses a message's createdAt.
func createdAt(t testing.TB, m popMsg) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
	if err != nil {
		t.Fatalf("createdAt %q: %v", m.CreatedAt, err)
	}
	return at
}

// queueExists reports whether queue has a row (a pop's first claim provisions it).
func (d *pushLogDB) queueExists(t testing.TB, queue string) bool {
	t.Helper()
	return d.count(t, `SELECT count(*) FROM queen.queues WHERE name = $1`, queue) == 1
}

func TestVisibility(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)

	t.Run("delayedProcessing hides messages younger than D seconds", func(t *testing.T) {
		t.Parallel()
		const delay = 2 * time.Second
		db.configure(t, "delayed", "delayed_processing = 2")
		a.pushN(t, "delayed", "p", "old", 2)
		a.popEmpty(t, "/api/v1/pop/queue/delayed")
		a.popEmpty(t, "/api/v1/pop/queue/delayed/partition/p")
		// A second segment 1.5 s younger: the first becomes visible on its own.
		time.Sleep(1500 * time.Millisecond)
		a.pushN(t, "delayed", "p", "young", 1)
		var p *popResp
		eventually(t, 5*time.Second, "the old segment never became visible", func() bool {
			p = a.pop(t, "/api/v1/pop/queue/delayed?batch=10")
			return p != nil
		})
		wantTxns(t, p, "old-0", "old-1")
		if age := time.Since(createdAt(t, p.Messages[0])); age < delay-50*time.Millisecond {
			t.Fatalf("delivered at age %v, want at least %v", age, delay)
		}
		a.ackAll(t, p, "")
		eventually(t, 5*time.Second, "the young segment never became visible", func() bool {
			p = a.pop(t, "/api/v1/pop/queue/delayed/partition/p")
			return p != nil
		})
		wantTxns(t, p, "young-0")
		if age := time.Since(createdAt(t, p.Messages[0])); age < delay-50*time.Millisecond {
			t.Fatalf("delivered at age %v, want at least %v", age, delay)
		}
	})

	t.Run("windowBuffer hides a partition written in the last W seconds", func(t *testing.T) {
		t.Parallel()
		const window = 2 * time.Second
		db.configure(t, "windowed", "window_buffer = 2")
		a.pushN(t, "windowed", "p", "first", 1)
		a.popEmpty(t, "/api/v1/pop/queue/windowed")
		// A later write restarts the quiet period: the first message is not delivered
		// on its own once it is W seconds old.
		time.Sleep(time.Second)
		a.pushN(t, "windowed", "p", "second", 1)
		a.popEmpty(t, "/api/v1/pop/queue/windowed/partition/p")
		var p *popResp
		eventually(t, 5*time.Second, "the partition never became quiet", func() bool {
			p = a.pop(t, "/api/v1/pop/queue/windowed?batch=10")
			return p != nil
		})
		wantTxns(t, p, "first-0", "second-0")
		if quiet := time.Since(createdAt(t, p.Messages[1])); quiet < window-50*time.Millisecond {
			t.Fatalf("delivered %v after the last write, want at least %v", quiet, window)
		}
	})
}

func TestVisibilityDoesNotStarveQuietPartitions(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	db := openPushLogDB(t, a)
	// A wildcard pop looks at a bounded number of candidate partitions, most recently
	// written first; the partitions a visibility rule hides are exactly the recently
	// written ones, and must not crowd out an older one that is deliverable.
	tests := []struct{ name, queue, set string }{
		{"windowBuffer", "crowd-window", "window_buffer = 2"},
		{"delayedProcessing", "crowd-delay", "delayed_processing = 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db.configure(t, tt.queue, tt.set)
			a.pushN(t, tt.queue, "quiet", "quiet", 1)
			eventually(t, 5*time.Second, "the quiet partition never became deliverable", func() bool {
				return db.count(t, `SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
					JOIN queen.queues q ON q.id = p.queue_id
					WHERE q.name = $1 AND s.created_at < clock_timestamp() - interval '2.1 seconds'`, tt.queue) == 1
			})
			items := make([]map[string]any, 40)
			for i := range items {
				items[i] = map[string]any{"queue": tt.queue, "partition": fmt.Sprintf("busy%d", i), "payload": i}
			}
			a.push(t, items...)
			p := a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?partitions=1")
			wantTxns(t, p, "quiet-0")
		})
	}
}

func TestLongPoll(t *testing.T) {
	t.Parallel()
	// Re-checks so slow that only a wake-up can answer a parked pop quickly.
	a := startApp(t, map[string]string{"POP_WAIT_INITIAL_INTERVAL_MS": "4000", "POP_WAIT_MAX_INTERVAL_MS": "4000",
		"DEFAULT_TIMEOUT": "700"})
	db := openPushLogDB(t, a)

	t.Run("a push wakes a parked pop", func(t *testing.T) {
		t.Parallel()
		type answer struct {
			code int
			body []byte
			err  error
			at   time.Time
		}
		done := make(chan answer, 1)
		go func() {
			code, body, err := getCtx(context.Background(), a, "/api/v1/pop/queue/lp-wake?wait=true&timeout=5000")
			done <- answer{code, body, err, time.Now()}
		}()
		// The pop's first (empty) claim provisions the queue: from then on it is parked
		// or about to be, subscribed to the queue's commits.
		eventually(t, 3*time.Second, "the pop never reached the database", func() bool { return db.queueExists(t, "lp-wake") })
		pushed := time.Now()
		a.pushN(t, "lp-wake", "Default", "w", 1)
		var r answer
		select {
		case r = <-done:
		case <-time.After(6 * time.Second):
			t.Fatal("the parked pop never answered")
		}
		if r.err != nil || r.code != http.StatusOK || !strings.Contains(string(r.body), `"transactionId":"w-0"`) {
			t.Fatalf("parked pop: %d %s %v", r.code, r.body, r.err)
		}
		if d := r.at.Sub(pushed); d > 2*time.Second {
			t.Fatalf("parked pop answered %v after the push", d)
		}
	})

	tests := []struct {
		name, path string
		min        time.Duration
	}{
		{"timeout=300 ends in 204", "/api/v1/pop/queue/lp-deadline?wait=true&timeout=300", 300 * time.Millisecond},
		{"DEFAULT_TIMEOUT when timeout is absent", "/api/v1/pop/queue/lp-default?wait=true", 700 * time.Millisecond},
		{"discovery", "/api/v1/pop?namespace=lp&wait=true&timeout=300", 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			a.popEmpty(t, tt.path)
			if d := time.Since(start); d < tt.min || d > tt.min+1500*time.Millisecond {
				t.Fatalf("answered after %v, want about %v", d, tt.min)
			}
		})
	}

	t.Run("a parked new-only group gets the message that wakes it", func(t *testing.T) {
		t.Parallel()
		done := make(chan *popResp, 1)
		go func() {
			code, body, err := getCtx(context.Background(), a, "/api/v1/pop/queue/lp-group?wait=true&timeout=5000&consumerGroup=g&subscriptionMode=new")
			var p popResp
			if err != nil || code != http.StatusOK || json.Unmarshal(body, &p) != nil {
				t.Errorf("parked pop: %d %s %v", code, body, err)
				done <- nil
				return
			}
			done <- &p
		}()
		eventually(t, 3*time.Second, "the pop never reached the database", func() bool { return db.queueExists(t, "lp-group") })
		a.pushN(t, "lp-group", "Default", "n", 1)
		select {
		case p := <-done:
			if p != nil {
				wantTxns(t, p, "n-0")
			}
		case <-time.After(6 * time.Second):
			t.Fatal("the parked pop never answered")
		}
	})

	t.Run("a client that leaves while parked claims nothing", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, _, err := getCtx(ctx, a, "/api/v1/pop/queue/lp-gone?wait=true&timeout=5000")
			done <- err
		}()
		eventually(t, 3*time.Second, "the pop never reached the database", func() bool { return db.queueExists(t, "lp-gone") })
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled pop returned %v", err)
		}
		a.pushN(t, "lp-gone", "Default", "g", 1)
		p := a.popMust(t, "/api/v1/pop/queue/lp-gone")
		wantTxns(t, p, "g-0")
		if p.Messages[0].DeliveryAttempt != 1 {
			t.Fatalf("deliveryAttempt %d, want 1: the gone client claimed it", p.Messages[0].DeliveryAttempt)
		}
	})
}

func TestPopPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	a := startApp(t, nil)
	tests := []struct{ name, raw string }{
		{"object", `{"total":19.99,"items":[{"sku":"a","qty":2}],"ok":true,"none":null}`},
		{"empty object", `{}`},
		{"array", `[1,"two",[3],{"four":4},null,false]`},
		{"empty array", `[]`},
		{"string", `"hello, world"`},
		{"string with escapes", `"caf\u00e9\n\t\"quoted\" \\ \ud83d\ude00 \/"`},
		{"raw unicode string", `"日本語 é 😀"`},
		{"integer beyond float64", `12345678901234567890123`},
		{"number with exponent", `-1.50E+03`},
		{"zero", `0`},
		{"true", `true`},
		{"null", `null`},
		{"spaced object", "{ \"a\" : [ 1 , 2 ] }"},
	}
	items := make([]string, len(tests))
	for i, tt := range tests {
		items[i] = pushItemJSON("payloads", "", tt.name, tt.raw)
	}
	resp, body := postPush(t, a, pushBodyJSON(items...))
	decodePushResponse(t, resp, body, len(tests))
	p := a.popMust(t, "/api/v1/pop/queue/payloads?batch=100")
	if len(p.Messages) != len(tests) {
		t.Fatalf("%d messages, want %d", len(p.Messages), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(tt.raw)); err != nil {
				t.Fatal(err)
			}
			got := p.Messages[i].Data
			if p.Messages[i].TransactionID != tt.name || !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("message %s: data %s, want %s", p.Messages[i].TransactionID, got, want.Bytes())
			}
			if !reflect.DeepEqual(decodeNumbers(t, got), decodeNumbers(t, []byte(tt.raw))) {
				t.Fatalf("data %s does not mean %s", got, tt.raw)
			}
		})
	}
}

// decodeNumbers decodes JSON keeping numbers as their text.
func decodeNumbers(t testing.TB, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

func TestPopDecryptsEncryptedQueues(t *testing.T) {
	t.Parallel()
	a := startApp(t, map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("0123456789abcdef", 4)})
	db := openPushLogDB(t, a)
	db.configure(t, "secret", "encryption_enabled = true")
	payloads := []string{`{"card":"4111-1111-1111-1111","cvv":123}`, `"plain string secret"`, `[1,2,3]`, `null`}
	tests := []struct {
		name      string
		queue     string
		encrypted bool
	}{
		{"encrypted queue", "secret", true},
		{"plain queue", "clear", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := make([]string, len(payloads))
			for i, raw := range payloads {
				items[i] = pushItemJSON(tt.queue, "", "", raw)
			}
			resp, body := postPush(t, a, pushBodyJSON(items...))
			decodePushResponse(t, resp, body, len(payloads))
			for _, f := range db.frames(t, tt.queue, "Default") {
				if f.Encrypted != tt.encrypted {
					t.Fatalf("frame %d: encrypted %v, want %v", f.Offset, f.Encrypted, tt.encrypted)
				}
				if tt.encrypted && bytes.Contains(f.Payload, []byte("4111")) {
					t.Fatalf("frame %d stores the plaintext", f.Offset)
				}
			}
			p := a.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?batch=10")
			if len(p.Messages) != len(payloads) {
				t.Fatalf("%d messages, want %d", len(p.Messages), len(payloads))
			}
			for i, raw := range payloads {
				if string(p.Messages[i].Data) != raw {
					t.Errorf("message %d: data %s, want %s", i, p.Messages[i].Data, raw)
				}
			}
		})
	}
}
