package queen

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGracefulStopAnswersInFlightPushes: stopping the broker (what SIGTERM does in
// queen-server) stops accepting new connections, lets every push already received
// commit and be answered, and Serve returns without error.
func TestGracefulStopAnswersInFlightPushes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := startApp(t, nil)
	a.push(t, map[string]any{"queue": "shutdown", "partition": "p0", "payload": 0})

	// Hold the partition's row lock so the pushes below stay in flight.
	tx := a.sideTx(t)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM queen.log_partitions FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	const pushers = 16
	var wg sync.WaitGroup
	codes := make([]int, pushers)
	errs := make([]error, pushers)
	for i := range pushers {
		wg.Go(func() {
			body := fmt.Sprintf(`{"items":[{"queue":"shutdown","partition":"p0","payload":{"i":%d}}]}`, i)
			resp, err := http.Post(a.URL+"/api/v1/push", "application/json", strings.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	waitFor(t, "pushes blocked on the partition lock", func() bool {
		var waiting int
		_ = tx.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&waiting)
		return waiting > 0
	})
	waitFor(t, "every push to reach the broker", func() bool {
		return a.Push.Stats().Requests >= 1+pushers // the set-up push plus these
	})

	stopped := make(chan error, 1)
	go func() { stopped <- a.stop() }()
	waitFor(t, "the listener to close", func() bool {
		_, err := http.Get(a.URL + "/health")
		return err != nil
	})
	select {
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) while pushes were still in flight", err)
	default:
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve returned %v after a graceful stop, want nil", err)
	}
	wg.Wait()
	for i := range pushers {
		if errs[i] != nil || codes[i] != http.StatusCreated {
			t.Errorf("in-flight push %d: status %d, error %v; want 201", i, codes[i], errs[i])
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A parked long poll does not hold a graceful stop until QUEEN_SHUTDOWN_TIMEOUT_MS: it
// answers 204 at once and Serve returns without error.
func TestGracefulStopEndsLongPolls(t *testing.T) {
	t.Parallel()
	a := startApp(t, map[string]string{"QUEEN_SHUTDOWN_TIMEOUT_MS": "10000"})
	a.pop(t, "/api/v1/pop/queue/lp") // provisions the queue
	code := make(chan int, 1)
	go func() {
		resp, err := http.Get(a.URL + "/api/v1/pop/queue/lp?wait=true&timeout=60000")
		if err != nil {
			code <- -1
			return
		}
		resp.Body.Close()
		code <- resp.StatusCode
	}()
	time.Sleep(500 * time.Millisecond) // the long poll parks
	start := time.Now()
	if err := a.stop(); err != nil {
		t.Fatalf("Serve returned %v, want nil", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stop took %v with a parked long poll", d)
	}
	if c := <-code; c != http.StatusNoContent {
		t.Fatalf("parked long poll answered %d, want 204", c)
	}
}
