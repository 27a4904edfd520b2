package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/internal/brokertest"
)

const (
	// startTimeout bounds building and starting a broker (schema, pool, spool, listener).
	startTimeout = 2 * time.Minute
	// stopTimeout bounds a graceful stop: in-flight requests get this long to finish.
	stopTimeout = time.Minute
)

// broker is one queen-go broker under test, built and started exactly as queen-server
// builds and starts it, serving on a loopback port.
type broker struct {
	URL   string // http://127.0.0.1:port
	DB    string // its database: another broker may be started on it (startBrokerOn)
	Spool string // its FILE_BUFFER_DIR

	srv    *brokertest.Broker // nil for a broker of another process (remoteBroker)
	client *http.Client

	stopOnce sync.Once
	stopErr  error
	checked  atomic.Bool // the test called stop and judged its error itself

	apiProblems apiProblems // OpenAPI check failures of requests sent without a test (openapi_test.go)
}

// startBroker starts a broker on a fresh database; env adds or overrides configuration
// variables.
func startBroker(t testing.TB, env map[string]string) *broker {
	t.Helper()
	return startBrokerOn(t, pgtest.NewDatabase(t), env)
}

// startBrokerOn starts a broker on an existing database (of another broker, which keeps
// running): several brokers may share one PostgreSQL. Each gets a spool directory of its
// own, since a spool has one owner.
func startBrokerOn(t testing.TB, db string, env map[string]string) *broker {
	t.Helper()
	b, err := launchBroker(t, db, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// launchBroker is startBrokerOn that reports a broker refusing to start (its
// configuration, or its construction) instead of failing the test; logs, when not nil,
// receives the broker's log lines instead of stderr.
func launchBroker(t testing.TB, db string, env map[string]string, logs io.Writer) (*broker, error) {
	t.Helper()
	vars := map[string]string{
		"QUEEN_PG_URL":    db,
		"PORT":            "0",
		"QUEEN_BIND_ADDR": "127.0.0.1",
		"DB_POOL_SIZE":    "40",
		"LOG_LEVEL":       "warn",
		"FILE_BUFFER_DIR": filepath.Join(t.TempDir(), "spool"),
		// Listings read afresh on every request: tests list, change and list again at
		// once (TestAdminListingsShared covers the sharing).
		"QUEEN_ADMIN_SHARE_MS": "0",
	}
	maps.Copy(vars, env)
	srv, err := brokertest.Start(vars, logs, startTimeout)
	if err != nil {
		return nil, err
	}
	b := &broker{URL: srv.URL, DB: db, Spool: vars["FILE_BUFFER_DIR"], srv: srv, client: newClient()}
	t.Cleanup(func() {
		b.apiProblems.report(t)
		if err := b.shutdown(); err != nil && !b.checked.Load() {
			t.Errorf("stop the broker at %s: %v", b.URL, err)
		}
	})
	return b, nil
}

// remoteBroker is a broker another process runs at url: the same requests, nothing to
// stop but the client's connections.
func remoteBroker(t testing.TB, url string) *broker {
	b := &broker{URL: url, client: newClient()}
	t.Cleanup(func() {
		b.apiProblems.report(t)
		b.client.CloseIdleConnections()
	})
	return b
}

// newClient is a client of its own per broker, so that the broker's stop can close its
// idle connections (and their goroutines) instead of leaving them to the leak check.
func newClient() *http.Client {
	return &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
}

// stop shuts the broker down as SIGTERM does (App.Stop: stop accepting, answer the
// parked long polls, let in-flight requests finish), then runs the injector's cleanup.
// It returns the stop's error, the same on every call; the test judges it.
func (b *broker) stop() error {
	b.checked.Store(true)
	return b.shutdown()
}

func (b *broker) shutdown() error {
	b.stopOnce.Do(func() {
		defer b.client.CloseIdleConnections()
		if b.srv == nil {
			return
		}
		// Connections the client opened but never used look new to the server, which
		// waits up to 5 s before it treats them as idle: close them first.
		b.client.CloseIdleConnections()
		b.stopErr = b.srv.Stop(stopTimeout)
	})
	return b.stopErr
}

// request sends body (nil: none) to path and returns the answer with its whole body. It
// does not fail the test, so goroutines may use it; ctx cancels it. The exchange is
// checked against the OpenAPI document (openapi_test.go): a problem fails the test of
// reportingTo(ctx), else the broker's test at its cleanup; badInput(ctx) skips the
// request's check.
func (b *broker) request(ctx context.Context, method, path string, body io.Reader) (*http.Response, []byte, error) {
	return b.requestAuth(ctx, method, path, "", body)
}

// requestAuth is request with an Authorization header (none when authorization is "").
func (b *broker) requestAuth(ctx context.Context, method, path, authorization string, body io.Reader) (*http.Response, []byte, error) {
	resp, raw, problem, err := b.exchange(ctx, method, path, authorization, body)
	if problem != "" {
		b.reportAPI(ctx, problem)
	}
	return resp, raw, err
}

// exchange sends one request and reads the whole answer, then checks both against the
// OpenAPI document: problem says what does not match ("" when all does).
func (b *broker) exchange(ctx context.Context, method, path, authorization string, body io.Reader) (
	resp *http.Response, raw []byte, problem string, err error) {
	req, err := http.NewRequestWithContext(ctx, method, b.URL+path, body)
	if err != nil {
		return nil, nil, "", err
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// The check needs the whole body: a copy from GetBody (NewRequest sets it for the
	// readers it knows), else what the transport reads, kept by a wrapper set after
	// NewRequest has taken the length from the reader (a wrapped one goes out chunked).
	var tee *teeBody
	if req.GetBody == nil && req.Body != nil && req.Body != http.NoBody {
		tee = &teeBody{r: req.Body}
		req.Body = tee
	}
	resp, err = b.client.Do(req)
	if err != nil {
		return nil, nil, "", err
	}
	defer resp.Body.Close()
	raw, err = io.ReadAll(resp.Body)
	if err != nil {
		return resp, raw, "", err
	}
	sent, whole := []byte(nil), true
	switch {
	case req.GetBody != nil:
		if rc, gerr := req.GetBody(); gerr == nil {
			sent, _ = io.ReadAll(rc)
		}
	case tee != nil:
		sent, whole = tee.read()
	}
	if !whole {
		// Answered before the body was all sent (a 413 for a body over the limit): what
		// was sent is no request to check, the answer still is.
		ctx = badInput(ctx)
	}
	return resp, raw, checkAPI(ctx, req, sent, resp, raw), nil
}

// teeBody is a request body that keeps what the transport reads of it.
type teeBody struct {
	r    io.ReadCloser
	mu   sync.Mutex // the transport reads on a goroutine of its own
	sent bytes.Buffer
	eof  bool
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.mu.Lock()
	b.sent.Write(p[:n])
	b.eof = b.eof || err == io.EOF
	b.mu.Unlock()
	return n, err
}

func (b *teeBody) Close() error { return b.r.Close() }

// read returns what was read, and whether that is the whole body.
func (b *teeBody) read() ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.sent.Bytes()), b.eof
}

// do is request for the test's goroutine: a transport error, or an exchange that does
// not match the OpenAPI document, fails the test. A body whose reader hides its length
// is sent chunked.
func (b *broker) do(t testing.TB, method, path string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	return b.doCtx(t, context.Background(), method, path, body)
}

// doBad is do for a request the test means to be invalid (a malformed body, a bad
// parameter, a wrong method): its answer is checked against the OpenAPI document, the
// request is not.
func (b *broker) doBad(t testing.TB, method, path string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	return b.doCtx(t, badInput(context.Background()), method, path, body)
}

func (b *broker) doCtx(t testing.TB, ctx context.Context, method, path string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	resp, raw, problem, err := b.exchange(ctx, method, path, "", body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if problem != "" {
		t.Errorf("OpenAPI check: %s", problem)
	}
	return resp, raw
}

// get is do for a GET: its status and body.
func (b *broker) get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	resp, raw := b.do(t, http.MethodGet, path, nil)
	return resp.StatusCode, raw
}

// post is do for a POST of a JSON body: its status and body.
func (b *broker) post(t testing.TB, path, body string) (int, []byte) {
	t.Helper()
	resp, raw := b.do(t, http.MethodPost, path, strings.NewReader(body))
	return resp.StatusCode, raw
}

// postBad is post for a body the test means to be invalid (doBad).
func (b *broker) postBad(t testing.TB, path, body string) (int, []byte) {
	t.Helper()
	resp, raw := b.doBad(t, http.MethodPost, path, strings.NewReader(body))
	return resp.StatusCode, raw
}

// decodeStrict decodes raw into v, failing on unknown fields and trailing data.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pushResult is one element of a push answer (docs/api.md §5.1).
type pushResult struct {
	Index         int    `json:"index"`
	MessageID     string `json:"message_id"`
	TransactionID string `json:"transaction_id"`
	QueueName     string `json:"queueName"`
	Status        string `json:"status"`
	Offset        *int64 `json:"offset"`
	Error         string `json:"error"` // only on an item refused for encryption (failed)
}

// push posts items (as {"items": items}) and decodes the 201 answer strictly.
func (b *broker) push(t testing.TB, items ...map[string]any) []pushResult {
	t.Helper()
	code, raw := b.post(t, "/api/v1/push", mustJSON(t, map[string]any{"items": items}))
	if code != http.StatusCreated {
		t.Fatalf("push: status %d, body %s", code, raw)
	}
	var out []pushResult
	if err := decodeStrict(raw, &out); err != nil {
		t.Fatalf("push answer %s: %v", raw, err)
	}
	if len(out) != len(items) {
		t.Fatalf("push: %d results for %d items: %s", len(out), len(items), raw)
	}
	return out
}

// popResp is a 200 pop answer (docs/api.md §5.2).
type popResp struct {
	Success           bool     `json:"success"`
	Queue             string   `json:"queue"`
	Partition         string   `json:"partition"`
	PartitionID       string   `json:"partitionId"`
	LeaseID           string   `json:"leaseId"`
	ConsumerGroup     string   `json:"consumerGroup"`
	Messages          []popMsg `json:"messages"`
	PartitionsClaimed int      `json:"partitionsClaimed"`
}

type popMsg struct {
	ID              string          `json:"id"`
	TransactionID   string          `json:"transactionId"`
	TraceID         *string         `json:"traceId"`
	Data            json.RawMessage `json:"data"`
	ProducerSub     *string         `json:"producerSub"`
	CreatedAt       string          `json:"createdAt"`
	PartitionID     string          `json:"partitionId"`
	Partition       string          `json:"partition"`
	LeaseID         string          `json:"leaseId"`
	ConsumerGroup   string          `json:"consumerGroup"`
	DeliveryAttempt int             `json:"deliveryAttempt"`
}

// createdAt is the message's createdAt (its segment's commit time).
func (m popMsg) createdAt(t testing.TB) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, m.CreatedAt)
	if err != nil {
		t.Fatalf("createdAt %q: %v", m.CreatedAt, err)
	}
	return at
}

// decodePop interprets a pop's status and body: nil for 204, the answer for 200.
func decodePop(code int, raw []byte) (*popResp, error) {
	switch code {
	case http.StatusNoContent:
		if len(raw) != 0 {
			return nil, errors.New("204 with a body " + strconv.Quote(string(raw)))
		}
		return nil, nil
	case http.StatusOK:
		var out popResp
		if err := decodeStrict(raw, &out); err != nil {
			return nil, errors.New("pop answer " + string(raw) + ": " + err.Error())
		}
		return &out, nil
	default:
		return nil, errors.New("status " + strconv.Itoa(code) + ", body " + string(raw))
	}
}

// pop GETs path: nil on 204, the answer on 200; anything else fails the test.
func (b *broker) pop(t testing.TB, path string) *popResp {
	t.Helper()
	code, raw := b.get(t, path)
	p, err := decodePop(code, raw)
	if err != nil {
		t.Fatalf("pop %s: %v", path, err)
	}
	return p
}

// ackResp is one element of an ack answer (docs/api.md §5.3).
type ackResp struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
	Noop          bool    `json:"noop"`
}

// ackItemOf is the ack of m with status ("" = no status key) under its lease.
func ackItemOf(m popMsg, status string) map[string]any {
	it := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID}
	if status != "" {
		it["status"] = status
	}
	return it
}

// ackBatch posts {"consumerGroup": group, "acknowledgments": items} and decodes the 200.
func (b *broker) ackBatch(t testing.TB, group string, items ...map[string]any) []ackResp {
	t.Helper()
	body := map[string]any{"acknowledgments": items}
	if group != "" {
		body["consumerGroup"] = group
	}
	code, raw := b.post(t, "/api/v1/ack/batch", mustJSON(t, body))
	if code != http.StatusOK {
		t.Fatalf("ack: status %d, body %s", code, raw)
	}
	var out []ackResp
	if err := decodeStrict(raw, &out); err != nil {
		t.Fatalf("ack answer %s: %v", raw, err)
	}
	if len(out) != len(items) {
		t.Fatalf("ack: %d results for %d items: %s", len(out), len(items), raw)
	}
	return out
}

// ackAll acknowledges every message of p with status (completed when "").
func (b *broker) ackAll(t testing.TB, p *popResp, status string) []ackResp {
	t.Helper()
	items := make([]map[string]any, len(p.Messages))
	for i, m := range p.Messages {
		items[i] = ackItemOf(m, status)
	}
	return b.ackBatch(t, p.ConsumerGroup, items...)
}

// metric reads one sample of GET /metrics/prometheus by its exact name and labels, e.g.
// `queen_batch_items_fired_total{op="push"}`.
func (b *broker) metric(t testing.TB, sample string) float64 {
	t.Helper()
	code, raw := b.get(t, "/metrics/prometheus")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics/prometheus: status %d: %s", code, raw)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("sample %s: %v", sample, err)
			}
			return v
		}
	}
	t.Fatalf("no sample %s in /metrics/prometheus", sample)
	return 0
}

// bufferStatus reads GET /api/v1/status/buffers: records spooled and not replayed,
// records set aside (corrupt or rejected), and whether the drain reaches the database.
func (b *broker) bufferStatus(t testing.TB) (pending, failed int64, healthy bool) {
	t.Helper()
	code, raw := b.get(t, "/api/v1/status/buffers")
	var st struct {
		Pending   int64 `json:"pending"`
		Failed    int64 `json:"failed"`
		DBHealthy bool  `json:"dbHealthy"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &st) != nil {
		t.Fatalf("status/buffers: %d %s", code, raw)
	}
	return st.Pending, st.Failed, st.DBHealthy
}

// waitDrained waits until the spool has nothing left to replay.
func (b *broker) waitDrained(t testing.TB, within time.Duration) {
	t.Helper()
	eventually(t, within, "the spool to drain", func() bool {
		n, _, _ := b.bufferStatus(t)
		return n == 0
	})
}

// eventually polls cond until it holds, failing the test with what after timeout. It is
// the only way these tests wait: for a condition a client can observe, or, where the
// behaviour under test is about time itself (dedup windows, delays, lease expiry), for
// the clock to pass a point derived from what the broker answered.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: still waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// elapse waits until d has passed since at: for behaviour that is about time itself.
func elapse(t testing.TB, at time.Time, d time.Duration) {
	t.Helper()
	eventually(t, d+5*time.Second, d.String()+" to pass", func() bool { return time.Since(at) >= d })
}
