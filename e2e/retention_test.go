package e2e

import (
	"net/http"
	"testing"
	"time"
)

// TestRetention: with the cycle every 50 ms, a queue with retentionSeconds=1 loses its
// messages once they are a second old, consumed or not, while a queue without retention
// keeps its own; dedup stays exact inside the window afterwards (the hash rows outlive
// the messages: their window is the dedup window, an hour); and the removals show in
// the metrics.
func TestRetention(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"RETENTION_INTERVAL": "50"})
	b.configure(t, `{"queue":"ret","options":{"retentionEnabled":true,"retentionSeconds":1}}`)
	b.configure(t, `{"queue":"keep","options":{"retentionEnabled":false,"retentionSeconds":1}}`)
	pushed := time.Now()
	for _, q := range []string{"ret", "keep"} {
		b.push(t, map[string]any{"queue": q, "partition": "p", "transactionId": q + "-1", "payload": map[string]any{"n": 1}},
			map[string]any{"queue": q, "partition": "p", "transactionId": q + "-2", "payload": map[string]any{"n": 2}})
	}
	elapse(t, pushed, time.Second)
	eventually(t, 10*time.Second, "retention to remove ret's two messages", func() bool {
		return b.metric(t, `queen_retention_removed_rows_total{job="messages"}`) >= 2
	})
	if code, raw := b.get(t, "/api/v1/pop/queue/ret/partition/p?wait=false"); code != http.StatusNoContent {
		t.Fatalf("pop of ret after retention: %d %s, want 204", code, raw)
	}
	if p := b.pop(t, "/api/v1/pop/queue/keep/partition/p?wait=false&batch=10"); len(p.Messages) != 2 {
		t.Fatalf("pop of keep: %d messages, want 2", len(p.Messages))
	}
	// Dedup inside its window: the removed messages' transaction ids are still known.
	res := b.push(t, map[string]any{"queue": "ret", "partition": "p", "transactionId": "ret-1", "payload": 1},
		map[string]any{"queue": "ret", "partition": "p", "transactionId": "ret-3", "payload": 3})
	if res[0].Status != "duplicate" || res[1].Status != "queued" {
		t.Fatalf("re-push after retention: %+v, want duplicate then queued", res)
	}
	// The new message is delivered from the first retained offset.
	p := b.pop(t, "/api/v1/pop/queue/ret/partition/p?wait=false&batch=10")
	if len(p.Messages) != 1 || p.Messages[0].TransactionID != "ret-3" {
		t.Fatalf("pop after the re-push: %+v, want ret-3 alone", p.Messages)
	}
	if n := b.metric(t, `queen_retention_removed_bytes_total{job="segments"}`); n <= 0 {
		t.Fatalf("segment bytes removed: %v", n)
	}
}
