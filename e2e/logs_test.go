package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/internal/syncbuf"
)

// What the broker logs. ERROR says the broker or the database failed: a client's mistake
// is answered (a 4xx or a per-item error) and never logged at ERROR or WARN, however
// often it is repeated; and a cause that does log (a misconfiguration, a failing
// database) logs a few lines per interval, not one per request or per message.

// logLines returns the broker's log lines (JSON objects) whose level is one of levels.
func logLines(t *testing.T, logs *syncbuf.Buffer, levels ...string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range strings.Split(logs.String(), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line %q: %v", s, err)
		}
		for _, l := range levels {
			if m["level"] == l {
				out = append(out, m)
			}
		}
	}
	return out
}

func TestClientMistakesAreNotLogged(t *testing.T) {
	t.Parallel()
	const repeats = 300
	logs := &syncbuf.Buffer{}
	b, err := launchBroker(t, pgtest.NewDatabase(t), nil, logs)
	if err != nil {
		t.Fatal(err)
	}
	before := len(logLines(t, logs, "WARN", "ERROR")) // start-up (authentication is off)
	b.pushN(t, "logs-ack", "p", "m", 1)
	p := b.popMust(t, "/api/v1/pop/queue/logs-ack?batch=1&wait=false")
	valid := ackItemOf(p.Messages[0], "")
	pid := p.Messages[0].PartitionID

	tests := []struct {
		name    string
		path    string
		body    any
		wantErr string // in the per-item error of the first item
	}{
		{"ack with a NUL transactionId", "/api/v1/ack",
			map[string]any{"transactionId": "a\x00b", "partitionId": pid}, "transactionId"},
		{"ack with a control character in transactionId", "/api/v1/ack",
			map[string]any{"transactionId": "a\x1bb", "partitionId": pid}, "transactionId"},
		{"batch ack with a NUL in the error text", "/api/v1/ack/batch",
			map[string]any{"acknowledgments": []any{map[string]any{"transactionId": "t", "partitionId": pid,
				"status": "failed", "error": "boom\x00"}}}, "error"},
		{"batch ack with a NUL consumerGroup", "/api/v1/ack/batch",
			map[string]any{"consumerGroup": "g\x00", "acknowledgments": []any{map[string]any{"transactionId": "t", "partitionId": pid}}},
			"consumerGroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := mustJSON(t, tt.body)
			for range repeats {
				code, raw := b.post(t, tt.path, body)
				var res []ackResp
				if code != http.StatusOK || json.Unmarshal(raw, &res) != nil || len(res) != 1 || res[0].Success ||
					res[0].Error == nil || !strings.Contains(*res[0].Error, tt.wantErr) {
					t.Errorf("%d %s: want 200 with a per-item error naming %s", code, raw, tt.wantErr)
					break
				}
			}
		})
	}
	t.Run("a bad item fails alone", func(t *testing.T) {
		res := b.ackBatch(t, "", map[string]any{"transactionId": "a\x00b", "partitionId": pid}, valid)
		if res[0].Success || !res[1].Success {
			t.Errorf("results %+v: want the NUL item refused and the valid ack applied", res)
		}
	})
	if lines := logLines(t, logs, "WARN", "ERROR"); len(lines) > before {
		t.Errorf("%d WARN or ERROR lines for client mistakes, the first: %v", len(lines)-before, lines[before]["msg"])
	}
}

// TestLogLimitPerCause: a keyless broker delivering messages of an encrypted queue logs
// the misconfiguration at most 5 times per 10 s (the root logger's limit), not once per
// message.
func TestLogLimitPerCause(t *testing.T) {
	t.Parallel()
	const messages, limit = 50, 5
	keyed := startBroker(t, map[string]string{"QUEEN_ENCRYPTION_KEY": encKeyA})
	keyed.setOptions(t, "logs-sealed", map[string]any{"encryptionEnabled": true})
	keyed.pushN(t, "logs-sealed", "p", "s", messages)
	logs := &syncbuf.Buffer{}
	keyless, err := launchBroker(t, keyed.DB, nil, logs)
	if err != nil {
		t.Fatal(err)
	}
	p := keyless.popMust(t, "/api/v1/pop/queue/logs-sealed?batch=50&wait=false&autoAck=true")
	if len(p.Messages) != messages {
		t.Fatalf("popped %d messages, want %d", len(p.Messages), messages)
	}
	n := 0
	for _, l := range logLines(t, logs, "WARN") {
		if strings.Contains(l["msg"].(string), "QUEEN_ENCRYPTION_KEY is not set") {
			n++
		}
	}
	if n == 0 || n > limit {
		t.Fatalf("%d lines for %d sealed messages delivered without a key: want 1 to %d", n, messages, limit)
	}
}
