package queen

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/config"
)

// brokerEnv makes the test binary run as a broker (see TestMain): the crash test needs
// a broker in another process to kill.
const brokerEnv = "QUEEN_TEST_RUN_BROKER"

// runBroker is the child process of TestSpoolSurvivesSIGKILL: queen-server's wiring,
// configured from the environment, until it is killed.
func runBroker() int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	app, cleanup, err := InitializeApp(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer cleanup()
	if err := app.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func setFlag(t *testing.T, db, key string, on bool) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `INSERT INTO queen.system_state (key, value) VALUES ($1, jsonb_build_object('enabled', $2::boolean))
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, on); err != nil {
		t.Fatal(err)
	}
}

// TestSpoolSurvivesSIGKILL kills a broker with SIGKILL while its spool holds records that
// were answered buffered, and starts another broker on the same spool directory: it
// replays them, exactly once and in order.
func TestSpoolSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	spoolDir := filepath.Join(t.TempDir(), "spool")
	// The schema must exist before the flag is set: a first broker applies it.
	first := startApp(t, map[string]string{"FILE_BUFFER_DIR": filepath.Join(t.TempDir(), "other")})
	db := first.DBURL
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	setFlag(t, db, "maintenance_mode", true)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), brokerEnv+"=1", "QUEEN_PG_URL="+db, "FILE_BUFFER_DIR="+spoolDir,
		fmt.Sprintf("PORT=%d", port), "QUEEN_BIND_ADDR=127.0.0.1", "LOG_LEVEL=warn", "DB_POOL_SIZE=8")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	child := &testApp{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	waitHealthy(t, child.URL, 60*time.Second)

	want := map[string][]int{}
	for seq := range 20 {
		part := fmt.Sprintf("p%d", seq%3)
		res := child.push(t, map[string]any{"queue": "crash", "partition": part, "payload": map[string]int{"seq": seq}})
		if res[0].Status != "buffered" {
			t.Fatalf("push during maintenance: %q, want buffered", res[0].Status)
		}
		want[part] = append(want[part], seq)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	setFlag(t, db, "maintenance_mode", false)
	b := startAppWith(t, db, map[string]string{"FILE_BUFFER_DIR": spoolDir, "FILE_BUFFER_FLUSH_MS": "20"})
	b.waitDrained(t, 30*time.Second)
	b.ledger(t, "crash", want)
}

// waitHealthy polls GET /health.
func waitHealthy(t *testing.T, base string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("broker at %s not healthy after %s", base, within)
}
