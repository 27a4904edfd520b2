package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

// TestRetentionUnderConcurrentPops: retention trims partitions (maxWaitTimeSeconds=1,
// a cycle every 20 ms in steps of 5 rows) while producers push and consumers pop and
// ack the same partitions. A claim must never read a segment retention removed under it
// (the pop would answer 500: the segments would not cover its span), and every pop and
// ack must succeed. A smoke test of the lock protocol: the window log_pop_v2's re-read
// of log_start closes (retention committing between the claim's unlocked read and its
// cursor lock) is too narrow to hit on purpose; without the re-read this test passed
// three runs out of three.
func TestRetentionUnderConcurrentPops(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"RETENTION_INTERVAL": "20", "RETENTION_BATCH_SIZE": "5"})
	b.configure(t, `{"queue":"race","options":{"maxWaitTimeSeconds":1}}`)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		popped   atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			body := fmt.Sprintf(`{"items":[{"queue":"race","partition":"p%d","payload":%d}]}`, i%10, i)
			resp, raw, err := b.request(ctx, http.MethodPost, "/api/v1/push", strings.NewReader(body))
			if err == nil && resp.StatusCode != http.StatusCreated {
				fail("push: %d %s", resp.StatusCode, raw)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	for c := range 4 {
		wg.Go(func() {
			pause := time.Duration(c) * 150 * time.Millisecond // slow ones pop aged messages
			for ctx.Err() == nil {
				resp, raw, err := b.request(ctx, http.MethodGet, "/api/v1/pop/queue/race?batch=10&wait=false", nil)
				if err != nil {
					continue // the run's end
				}
				p, derr := decodePop(resp.StatusCode, raw)
				if derr != nil {
					fail("pop: %d %s", resp.StatusCode, raw)
					continue
				}
				if p == nil {
					continue
				}
				popped.Add(int64(len(p.Messages)))
				items := make([]map[string]any, len(p.Messages))
				for i, m := range p.Messages {
					items[i] = ackItemOf(m, "completed")
				}
				ack := mustJSON(t, map[string]any{"acknowledgments": items})
				if resp, raw, err := b.request(ctx, http.MethodPost, "/api/v1/ack/batch", strings.NewReader(ack)); err == nil && resp.StatusCode != http.StatusOK {
					fail("ack: %d %s", resp.StatusCode, raw)
				}
				time.Sleep(pause)
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("failures during the run:\n%s", strings.Join(failures, "\n"))
	}
	removed := b.metric(t, `queen_retention_removed_rows_total{job="messages"}`)
	if popped.Load() == 0 || removed == 0 {
		t.Fatalf("popped %d, retention removed %v: the run did not exercise both", popped.Load(), removed)
	}
	t.Logf("popped %d messages while retention removed %v", popped.Load(), removed)
}
