package queen

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestMaintenanceToggledUnderLoad turns push maintenance on and off while producers push
// sequences to their partitions: every message is delivered exactly once and each
// partition keeps its order, whichever way each push went (spool or database).
func TestMaintenanceToggledUnderLoad(t *testing.T) {
	t.Parallel()
	a := startApp(t, map[string]string{"FILE_BUFFER_FLUSH_MS": "10", "QUEEN_MAINTENANCE_REFRESH_MS": "100"})
	const producers = 4
	want := make(map[string][]int)
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	statuses := make(map[string]int)
	for w := range producers {
		part := fmt.Sprintf("p%d", w)
		wg.Go(func() {
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				res := a.push(t, map[string]any{"queue": "toggled", "partition": part, "payload": map[string]int{"seq": seq},
					"transactionId": fmt.Sprintf("%s-%d", part, seq)})
				mu.Lock()
				statuses[res[0].Status]++
				if res[0].Status == "queued" || res[0].Status == "buffered" {
					want[part] = append(want[part], seq)
				}
				mu.Unlock()
			}
		})
	}
	for i := range 6 {
		time.Sleep(250 * time.Millisecond)
		body := fmt.Sprintf(`{"enabled":%v}`, i%2 == 0)
		if code, resp := a.do(t, http.MethodPost, "/api/v1/system/maintenance", body); code != http.StatusOK {
			t.Fatalf("toggle: %d %s", code, resp)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("push statuses: %v", statuses)
	if statuses["buffered"] == 0 || statuses["queued"] == 0 || len(statuses) != 2 {
		t.Fatalf("statuses %v: want both queued and buffered, nothing else", statuses)
	}
	a.waitDrained(t, 30*time.Second)
	a.ledger(t, "toggled", want)
}
