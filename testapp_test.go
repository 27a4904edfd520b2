package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/config"
)

func TestMain(m *testing.M) {
	if os.Getenv(brokerEnv) == "1" { // a child broker of TestSpoolSurvivesSIGKILL
		os.Exit(runBroker())
	}
	pgtest.Main(m)
}

// testApp is a broker wired exactly as queen-server is, on a fresh database, serving on a
// loopback port.
type testApp struct {
	*App
	URL    string // http://127.0.0.1:port
	DBURL  string
	cancel context.CancelFunc
	done   chan error
}

// startApp starts a broker on a fresh database; env adds configuration variables
// (QUEEN_PG_URL is set).
func startApp(t testing.TB, env map[string]string) *testApp {
	t.Helper()
	return startAppWith(t, pgtest.NewDatabase(t), env)
}

// startAppOn starts another broker on an existing database.
func startAppOn(t testing.TB, db string) *testApp {
	t.Helper()
	return startAppWith(t, db, nil)
}

func startAppWith(t testing.TB, db string, env map[string]string) *testApp {
	t.Helper()
	// Each broker owns its spool directory (a shared one would be locked by the first).
	vars := map[string]string{"QUEEN_PG_URL": db, "DB_POOL_SIZE": "40", "LOG_LEVEL": "warn",
		"FILE_BUFFER_DIR": filepath.Join(t.TempDir(), "spool")}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.Parse(vars)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	app, cleanup, err := InitializeApp(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		cleanup()
		t.Fatal(err)
	}
	ta := &testApp{App: app, URL: "http://" + ln.Addr().String(), DBURL: db, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := app.Serve(ctx, ln)
		cleanup()
		ta.done <- err
	}()
	t.Cleanup(func() { _ = ta.stop() })
	return ta
}

// stop shuts the broker down gracefully and returns Serve's error (once).
func (a *testApp) stop() error {
	a.cancel()
	select {
	case err, ok := <-a.done:
		if ok {
			close(a.done)
		}
		return err
	case <-time.After(60 * time.Second):
		return context.DeadlineExceeded
	}
}

// do sends a request with a raw body and returns status and body.
func (a *testApp) do(t testing.TB, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, a.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// pushResult is one element of a push response, decoded strictly by field name.
type pushResult struct {
	Index         int    `json:"index"`
	MessageID     string `json:"message_id"`
	TransactionID string `json:"transaction_id"`
	QueueName     string `json:"queueName"`
	Status        string `json:"status"`
	Offset        *int64 `json:"offset"`
}

// sideTx begins a transaction on a connection of its own to the broker's database,
// closed (and the transaction rolled back) at the test's end.
func (a *testApp) sideTx(t testing.TB) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	return tx
}

// push posts items (marshalled as {"items": items}) and decodes a 201 answer.
func (a *testApp) push(t testing.TB, items ...map[string]any) []pushResult {
	t.Helper()
	b, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		t.Fatal(err)
	}
	code, body := a.do(t, http.MethodPost, "/api/v1/push", string(b))
	if code != http.StatusCreated {
		t.Fatalf("push: status %d, body %s", code, body)
	}
	var out []pushResult
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("push response %s: %v", body, err)
	}
	return out
}

// Limit is the current push concurrency limit.
func (a *testApp) Limit() int { return a.App.Limiter.Limit() }
