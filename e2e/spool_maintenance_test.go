package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestMaintenanceToggledUnderLoad turns push maintenance on and off while producers push
// sequences to their partitions: every message is delivered exactly once and each
// partition keeps its order, whichever way each push went (spool or database).
func TestMaintenanceToggledUnderLoad(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"FILE_BUFFER_FLUSH_MS": "10", "QUEEN_MAINTENANCE_REFRESH_MS": "100"})
	const producers = 4
	want := make(map[string][]int)
	var (
		mu       sync.Mutex
		statuses = make(map[string]int)
		pushes   atomic.Int64
		firstErr error
	)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	for w := range producers {
		part := fmt.Sprintf("p%d", w)
		wg.Go(func() {
			for seq := 0; ctx.Err() == nil; seq++ {
				body := mustJSON(t, map[string]any{"items": []any{map[string]any{"queue": "toggled", "partition": part,
					"payload": map[string]int{"seq": seq}, "transactionId": fmt.Sprintf("%s-%d", part, seq)}}})
				res, err := b.pushFrom(context.Background(), []byte(body))
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("producer %s push %d: %w", part, seq, err)
					}
					mu.Unlock()
					return
				}
				statuses[res[0].Status]++
				if res[0].Status == "queued" || res[0].Status == "buffered" {
					want[part] = append(want[part], seq)
				}
				mu.Unlock()
				pushes.Add(1)
			}
		})
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	// Toggle once the producers have pushed a while under the current setting.
	for i := range 6 {
		since := pushes.Load()
		eventually(t, 30*time.Second, "the producers to push under the current setting", func() bool {
			return failed() || pushes.Load() >= since+40
		})
		if failed() {
			break
		}
		setMaintenance(t, b, i%2 == 0)
	}
	stop()
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	t.Logf("push statuses: %v", statuses)
	if statuses["buffered"] == 0 || statuses["queued"] == 0 || len(statuses) != 2 {
		t.Fatalf("statuses %v: want both queued and buffered, nothing else", statuses)
	}
	b.waitDrained(t, 30*time.Second)
	b.ledger(t, "toggled", want)
}
