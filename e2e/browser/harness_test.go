package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/internal/brokertest"
)

const (
	// startTimeout bounds building and starting a broker (schema, pool, spool, listener).
	startTimeout = 2 * time.Minute
	// stopTimeout bounds a graceful stop.
	stopTimeout = time.Minute
	// flushInterval is METRICS_FLUSH_MS of the tests' brokers, in milliseconds: the
	// history the overview charts read is at most this old.
	flushInterval = "200"
)

// broker is one queen-go broker under test, built and started as queen-server builds and
// starts it, serving on a loopback port.
type broker struct {
	URL   string // http://127.0.0.1:port
	token string // "Bearer <jwt>" sent by the HTTP helpers when set (a broker with JWT on)

	client *http.Client
}

// startBroker starts a broker on a fresh database; env adds or overrides configuration
// variables. The test's cleanup stops it gracefully.
func startBroker(t *testing.T, env map[string]string) *broker {
	t.Helper()
	vars := map[string]string{
		"QUEEN_PG_URL":    pgtest.NewDatabase(t),
		"PORT":            "0",
		"QUEEN_BIND_ADDR": "127.0.0.1",
		"LOG_LEVEL":       "warn",
		"FILE_BUFFER_DIR": filepath.Join(t.TempDir(), "spool"),
		// The overview's charts read the history, flushed this often.
		"METRICS_FLUSH_MS": flushInterval,
		// Listings read afresh on every request: a page shows what the test just did.
		"QUEEN_ADMIN_SHARE_MS": "0",
	}
	maps.Copy(vars, env)
	srv, err := brokertest.Start(vars, nil, startTimeout)
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{URL: srv.URL, client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{}}}
	t.Cleanup(func() {
		// Connections the client opened but never used look new to the server, which
		// waits before it treats them as idle: close them first.
		b.client.CloseIdleConnections()
		err := srv.Stop(stopTimeout)
		b.client.CloseIdleConnections()
		if err != nil {
			t.Errorf("stop the broker at %s: %v", b.URL, err)
		}
	})
	return b
}

// call sends body ("" for none) to path with the broker's token and returns the status
// and the whole answer; a transport error fails the test.
func (b *broker) call(t testing.TB, method, path, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.URL+path, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if b.token != "" {
		req.Header.Set("Authorization", b.token)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, path, err)
	}
	return resp.StatusCode, raw
}

// must is call for a request that must answer want.
func (b *broker) must(t testing.TB, want int, method, path string, body any) []byte {
	t.Helper()
	s := ""
	if body != nil {
		s = mustJSON(t, body)
	}
	code, raw := b.call(t, method, path, s)
	if code != want {
		t.Fatalf("%s %s %s: status %d, want %d: %s", method, path, s, code, want, raw)
	}
	return raw
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// push pushes one message per payload to queue's partition (docs/api.md §5.1).
func (b *broker) push(t testing.TB, queue, partition string, payloads ...any) {
	t.Helper()
	items := make([]map[string]any, len(payloads))
	for i, p := range payloads {
		items[i] = map[string]any{"queue": queue, "partition": partition, "payload": p}
	}
	b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/push", map[string]any{"items": items})
}

// configure sets queue's options (merged into the stored ones, docs/api.md §5.6).
func (b *broker) configure(t testing.TB, queue string, options map[string]any) {
	t.Helper()
	b.must(t, http.StatusOK, http.MethodPost, "/api/v1/configure", map[string]any{"queue": queue, "options": options})
}

// popAnswer is a 200 pop answer, the fields the tests read (docs/api.md §5.2).
type popAnswer struct {
	ConsumerGroup string `json:"consumerGroup"`
	Messages      []struct {
		TransactionID string          `json:"transactionId"`
		PartitionID   string          `json:"partitionId"`
		LeaseID       string          `json:"leaseId"`
		Data          json.RawMessage `json:"data"`
	} `json:"messages"`
}

// pop takes up to batch messages of queue for group ("" for the queue mode) without
// waiting: nil when there is nothing (204).
func (b *broker) pop(t testing.TB, queue, group string, batch int) *popAnswer {
	t.Helper()
	path := fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&wait=false", queue, batch)
	if group != "" {
		path += "&consumerGroup=" + group
	}
	code, raw := b.call(t, http.MethodGet, path, "")
	switch code {
	case http.StatusNoContent:
		return nil
	case http.StatusOK:
		var p popAnswer
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatalf("pop %s: %v: %s", path, err, raw)
		}
		return &p
	}
	t.Fatalf("pop %s: status %d: %s", path, code, raw)
	return nil
}

// ackAll acknowledges every message of p with status (docs/api.md §5.3) and returns the
// items' answers.
func (b *broker) ackAll(t testing.TB, p *popAnswer, status string) []ackAnswer {
	t.Helper()
	items := make([]map[string]any, len(p.Messages))
	for i, m := range p.Messages {
		items[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"leaseId": m.LeaseID, "status": status}
	}
	raw := b.must(t, http.StatusOK, http.MethodPost, "/api/v1/ack/batch",
		map[string]any{"consumerGroup": p.ConsumerGroup, "acknowledgments": items})
	var out []ackAnswer
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("ack answer %s: %v", raw, err)
	}
	for i, a := range out {
		if !a.Success {
			t.Fatalf("ack item %d (%s): %s", i, status, raw)
		}
	}
	return out
}

type ackAnswer struct {
	Success bool `json:"success"`
	DLQ     bool `json:"dlq"`
}

// payloadOf decodes a popped message's data into a map.
func payloadOf(t testing.TB, data json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(data), &m); err != nil {
		t.Fatalf("message data %s: %v", data, err)
	}
	return m
}

// eventually polls cond until it holds, failing the test with what after timeout: the
// only way these tests wait.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: still waiting for %s", timeout, what)
		}
		<-tick.C
	}
}
