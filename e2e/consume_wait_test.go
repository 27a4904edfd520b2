package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// Visibility (delayedProcessing, windowBuffer), long polls, and what a pop delivers.

// popAnswer is the answer of a pop sent by startPop.
type popAnswer struct {
	code int
	body []byte
	err  error
	at   time.Time // when it arrived
}

// startPop sends a (long-poll) pop from a goroutine and returns once the request is on
// the wire, with the channel its answer arrives on. No client can see a pop park; tests
// that push after startPop are written so that a push landing before the pop's first
// claim cannot fail them (it only means the wake-up was not needed that time).
func (b *broker) startPop(ctx context.Context, path string) <-chan popAnswer {
	wrote := make(chan struct{})
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(func() { close(wrote) }) }}
	done := make(chan popAnswer, 1)
	go func() {
		resp, body, err := b.request(httptrace.WithClientTrace(ctx, trace), http.MethodGet, path, nil)
		ans := popAnswer{body: body, err: err, at: time.Now()}
		if resp != nil {
			ans.code = resp.StatusCode
		}
		done <- ans
	}()
	select {
	case <-wrote:
		return done
	case ans := <-done: // failed before it was sent
		out := make(chan popAnswer, 1)
		out <- ans
		return out
	}
}

func TestVisibility(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)

	t.Run("delayedProcessing hides messages younger than D seconds", func(t *testing.T) {
		t.Parallel()
		const delay = 2 * time.Second
		b.setOptions(t, "delayed", map[string]any{"delayedProcessing": 2})
		first := time.Now()
		b.pushN(t, "delayed", "p", "old", 2)
		b.popEmpty(t, "/api/v1/pop/queue/delayed")
		b.popEmpty(t, "/api/v1/pop/queue/delayed/partition/p")
		// A second segment 1.5 s younger: the first becomes visible on its own.
		elapse(t, first, 1500*time.Millisecond)
		b.pushN(t, "delayed", "p", "young", 1)
		var p *popResp
		eventually(t, 5*time.Second, "the old segment never became visible", func() bool {
			p = b.pop(t, "/api/v1/pop/queue/delayed?batch=10")
			return p != nil
		})
		wantTxns(t, p, "old-0", "old-1")
		if age := time.Since(p.Messages[0].createdAt(t)); age < delay-50*time.Millisecond {
			t.Fatalf("delivered at age %v, want at least %v", age, delay)
		}
		b.ackAll(t, p, "")
		eventually(t, 5*time.Second, "the young segment never became visible", func() bool {
			p = b.pop(t, "/api/v1/pop/queue/delayed/partition/p")
			return p != nil
		})
		wantTxns(t, p, "young-0")
		if age := time.Since(p.Messages[0].createdAt(t)); age < delay-50*time.Millisecond {
			t.Fatalf("delivered at age %v, want at least %v", age, delay)
		}
	})

	t.Run("windowBuffer hides a partition written in the last W seconds", func(t *testing.T) {
		t.Parallel()
		const window = 2 * time.Second
		b.setOptions(t, "windowed", map[string]any{"windowBuffer": 2})
		first := time.Now()
		b.pushN(t, "windowed", "p", "first", 1)
		b.popEmpty(t, "/api/v1/pop/queue/windowed")
		// A later write restarts the quiet period: the first message is not delivered
		// on its own once it is W seconds old.
		elapse(t, first, time.Second)
		b.pushN(t, "windowed", "p", "second", 1)
		b.popEmpty(t, "/api/v1/pop/queue/windowed/partition/p")
		var p *popResp
		eventually(t, 5*time.Second, "the partition never became quiet", func() bool {
			p = b.pop(t, "/api/v1/pop/queue/windowed?batch=10")
			return p != nil
		})
		wantTxns(t, p, "first-0", "second-0")
		if quiet := time.Since(p.Messages[1].createdAt(t)); quiet < window-50*time.Millisecond {
			t.Fatalf("delivered %v after the last write, want at least %v", quiet, window)
		}
	})
}

func TestVisibilityDoesNotStarveQuietPartitions(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
	// A wildcard pop looks at a bounded number of candidate partitions, most recently
	// written first; the partitions a visibility rule hides are exactly the recently
	// written ones, and must not crowd out an older one that is deliverable.
	tests := []struct {
		name, queue string
		options     map[string]any
	}{
		{"windowBuffer", "crowd-window", map[string]any{"windowBuffer": 2}},
		{"delayedProcessing", "crowd-delay", map[string]any{"delayedProcessing": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b.setOptions(t, tt.queue, tt.options)
			b.pushN(t, tt.queue, "quiet", "quiet", 1)
			// Deliverable: another group's pop of that partition gets it.
			eventually(t, 5*time.Second, "the quiet partition to become deliverable", func() bool {
				return b.pop(t, "/api/v1/pop/queue/"+tt.queue+"/partition/quiet?consumerGroup=probe&subscriptionMode=all") != nil
			})
			items := make([]map[string]any, 40)
			for i := range items {
				items[i] = map[string]any{"queue": tt.queue, "partition": fmt.Sprintf("busy%d", i), "payload": i}
			}
			b.push(t, items...)
			p := b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?partitions=1")
			wantTxns(t, p, "quiet-0")
		})
	}
}

func TestLongPoll(t *testing.T) {
	t.Parallel()
	// Re-checks so slow that only a wake-up can answer a parked pop quickly.
	b := startBroker(t, map[string]string{"POP_WAIT_INITIAL_INTERVAL_MS": "4000", "POP_WAIT_MAX_INTERVAL_MS": "4000",
		"DEFAULT_TIMEOUT": "700"})

	t.Run("a push wakes a parked pop", func(t *testing.T) {
		t.Parallel()
		b.popEmpty(t, "/api/v1/pop/queue/lp-wake") // the queue exists before the long poll
		done := b.startPop(context.Background(), "/api/v1/pop/queue/lp-wake?wait=true&timeout=5000")
		pushed := time.Now()
		b.pushN(t, "lp-wake", "Default", "w", 1)
		var r popAnswer
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
			b.popEmpty(t, tt.path)
			if d := time.Since(start); d < tt.min || d > tt.min+1500*time.Millisecond {
				t.Fatalf("answered after %v, want about %v", d, tt.min)
			}
		})
	}

	t.Run("a parked new-only group gets the message that wakes it", func(t *testing.T) {
		t.Parallel()
		// The group subscribes (to an empty queue) before it parks: the message pushed
		// while it waits is new to it, whether or not its first claim ran by then.
		const path = "/api/v1/pop/queue/lp-group?wait=true&timeout=5000&consumerGroup=g&subscriptionMode=new"
		b.popEmpty(t, "/api/v1/pop/queue/lp-group?consumerGroup=g&subscriptionMode=new")
		done := b.startPop(context.Background(), path)
		b.pushN(t, "lp-group", "Default", "n", 1)
		select {
		case r := <-done:
			p, err := decodePop(r.code, r.body)
			if r.err != nil || err != nil || p == nil {
				t.Fatalf("parked pop: %d %s %v %v", r.code, r.body, r.err, err)
			}
			wantTxns(t, p, "n-0")
		case <-time.After(6 * time.Second):
			t.Fatal("the parked pop never answered")
		}
	})

	t.Run("a client that leaves while parked claims nothing", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		b.popEmpty(t, "/api/v1/pop/queue/lp-gone") // the queue exists before the long poll
		done := b.startPop(ctx, "/api/v1/pop/queue/lp-gone?wait=true&timeout=5000")
		cancel()
		if r := <-done; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("cancelled pop returned %d %v", r.code, r.err)
		}
		b.pushN(t, "lp-gone", "Default", "g", 1)
		p := b.popMust(t, "/api/v1/pop/queue/lp-gone")
		wantTxns(t, p, "g-0")
		if p.Messages[0].DeliveryAttempt != 1 {
			t.Fatalf("deliveryAttempt %d, want 1: the gone client claimed it", p.Messages[0].DeliveryAttempt)
		}
	})
}

func TestPopPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	b := startBroker(t, nil)
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
	resp, body := b.postPush(t, pushBodyJSON(items...))
	decodePushResponse(t, resp, body, len(tests))
	p := b.popMust(t, "/api/v1/pop/queue/payloads?batch=100")
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
	b := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": strings.Repeat("0123456789abcdef", 4)})
	b.setOptions(t, "secret", map[string]any{"encryptionEnabled": true})
	// A broker without the key on the same database reads what is stored: encrypted
	// payloads come out null.
	keyless := startBrokerOn(t, b.DB, nil)
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
			resp, body := b.postPush(t, pushBodyJSON(items...))
			decodePushResponse(t, resp, body, len(payloads))
			stored := keyless.readBack(t, tt.queue)["Default"]
			if len(stored) != len(payloads) {
				t.Fatalf("the keyless broker reads %d messages, want %d", len(stored), len(payloads))
			}
			for i, m := range stored {
				want := compactJSON(t, payloads[i])
				if tt.encrypted {
					want = "null"
				}
				if string(m.Data) != want {
					t.Fatalf("message %d read without the key: %s, want %s", i, m.Data, want)
				}
			}
			p := b.popMust(t, "/api/v1/pop/queue/"+tt.queue+"?batch=10")
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
