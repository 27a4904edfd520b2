package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// pushRequests is the number of push requests the broker has received (JSON /metrics,
// which reads no database).
func (b *broker) pushRequests(t testing.TB) float64 {
	t.Helper()
	code, raw := b.get(t, "/metrics")
	var m struct {
		Requests struct {
			Total float64 `json:"total"`
		} `json:"requests"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &m) != nil {
		t.Fatalf("GET /metrics: %d %s", code, raw)
	}
	return m.Requests.Total
}

// listening reports whether the broker still accepts connections.
func (b *broker) listening() bool {
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(b.URL, "http://"), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// waitAccepted returns once the broker has accepted every connection dialled before the
// call: the listener accepts in the order connections were established, so a request
// on a new connection is answered only after those were accepted. An accepted
// connection is the server's to answer; a graceful stop must not drop it.
func (b *broker) waitAccepted(t testing.TB) {
	t.Helper()
	probe := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := probe.Get(b.URL + "/health")
	if err != nil {
		t.Fatalf("probe connection: %v", err)
	}
	resp.Body.Close()
}

// TestGracefulStopAnswersInFlightPushes: stopping the broker (what SIGTERM does in
// queen-server) stops accepting new connections, lets every push already received
// commit and be answered, and Stop returns without error.
func TestGracefulStopAnswersInFlightPushes(t *testing.T) {
	t.Parallel()
	proxy, db := newPGProxy(t, pgtest.NewDatabase(t))
	b := startBrokerOn(t, db, nil)
	b.push(t, map[string]any{"queue": "shutdown", "partition": "p0", "payload": 0})

	// The database stops answering (without failing): the pushes below stay in flight.
	proxy.freeze()
	defer proxy.thaw()
	const pushers = 16
	var wg sync.WaitGroup
	codes := make([]int, pushers)
	statuses := make([]string, pushers)
	errs := make([]error, pushers)
	for i := range pushers {
		wg.Go(func() {
			body := fmt.Sprintf(`{"items":[{"queue":"shutdown","partition":"p0","payload":{"i":%d}}]}`, i)
			res, err := b.pushFrom(context.Background(), []byte(body))
			if err != nil {
				errs[i] = err
				return
			}
			codes[i], statuses[i] = http.StatusCreated, res[0].Status
		})
	}
	eventually(t, 10*time.Second, "every push to reach the broker", func() bool {
		return b.pushRequests(t) >= 1+pushers // the set-up push plus these
	})

	stopped := make(chan error, 1)
	go func() { stopped <- b.stop() }()
	eventually(t, 10*time.Second, "the listener to close", func() bool { return !b.listening() })
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while pushes were still in flight", err)
	default:
	}
	proxy.thaw()
	if err := <-stopped; err != nil {
		t.Fatalf("Stop returned %v after a graceful stop, want nil", err)
	}
	wg.Wait()
	for i := range pushers {
		if errs[i] != nil || codes[i] != http.StatusCreated || statuses[i] != "queued" {
			t.Errorf("in-flight push %d: status %d (%q), error %v; want 201 queued", i, codes[i], statuses[i], errs[i])
		}
	}
}

// A parked long poll does not hold a graceful stop until QUEEN_SHUTDOWN_TIMEOUT_MS: it
// answers 204 at once and Stop returns without error.
func TestGracefulStopEndsLongPolls(t *testing.T) {
	t.Parallel()
	b := startBroker(t, map[string]string{"QUEEN_SHUTDOWN_TIMEOUT_MS": "10000"})
	b.popEmpty(t, "/api/v1/pop/queue/lp") // provisions the queue
	// The long poll on a connection of its own (a reused one could be closed as idle by
	// the stop before the server reads the request on it), accepted by the broker. A new
	// client, since the transport hands the set-up pop's connection back to its pool a
	// moment after the answer is read: CloseIdleConnections alone can run before that.
	used := b.client
	b.client = newClient()
	used.CloseIdleConnections()
	done := b.startPop(context.Background(), "/api/v1/pop/queue/lp?wait=true&timeout=60000")
	b.waitAccepted(t)
	start := time.Now()
	if err := b.stop(); err != nil {
		t.Fatalf("Stop returned %v, want nil", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stop took %v with a parked long poll", d)
	}
	if r := <-done; r.err != nil || r.code != http.StatusNoContent {
		t.Fatalf("parked long poll answered %d (%v), want 204", r.code, r.err)
	}
}
