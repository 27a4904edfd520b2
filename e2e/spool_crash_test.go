package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queen-go/queen"
	"github.com/queen-go/queen/config"
)

// childBrokerEnv makes the test binary run as a broker (see TestMain): the crash test
// needs a broker in another process to kill.
const childBrokerEnv = "QUEEN_E2E_CHILD_BROKER"

// childReady prefixes the line a child broker prints once it listens, with its address.
const childReady = "child broker listening on "

// runChildBroker is the child process of TestSpoolSurvivesSIGKILL: queen-server's
// wiring, configured from the environment, until it is killed (or interrupted).
func runChildBroker() int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app, cleanup, err := queen.InitializeApp(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer cleanup()
	if err := app.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(childReady + app.Addr().String())
	var failed error
	select {
	case <-ctx.Done():
	case failed = <-app.Failed():
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := app.Stop(sctx); err != nil || failed != nil {
		fmt.Fprintln(os.Stderr, failed, err)
		return 1
	}
	return 0
}

// startChildBroker runs a broker in a child process on db with spoolDir and returns the
// process and the broker's URL, once it listens.
func startChildBroker(t *testing.T, db, spoolDir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childBrokerEnv+"=1", "QUEEN_PG_URL="+db, "FILE_BUFFER_DIR="+spoolDir,
		"PORT=0", "QUEEN_BIND_ADDR=127.0.0.1", "LOG_LEVEL=warn", "DB_POOL_SIZE=8")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		defer close(addr)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), childReady); ok {
				addr <- a
				return
			}
		}
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatal("the child broker exited before listening")
		}
		return cmd, "http://" + a
	case <-time.After(startTimeout):
		t.Fatal("the child broker did not start listening")
	}
	return nil, ""
}

// setMaintenance turns push maintenance on or off through b; the flag lives in the
// database, so every broker on it follows.
func setMaintenance(t testing.TB, b *broker, on bool) {
	t.Helper()
	if code, body := b.post(t, "/api/v1/system/maintenance", fmt.Sprintf(`{"enabled":%v}`, on)); code != 200 {
		t.Fatalf("maintenance %v: %d %s", on, code, body)
	}
}

// TestSpoolSurvivesSIGKILL kills a broker with SIGKILL while its spool holds records that
// were answered buffered, and starts another broker on the same spool directory: it
// replays them, exactly once and in order.
func TestSpoolSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	spoolDir := filepath.Join(t.TempDir(), "spool")
	// A first broker creates the schema and turns push maintenance on (in the database):
	// every push of the child is spooled.
	first := startBroker(t, nil)
	setMaintenance(t, first, true)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	cmd, url := startChildBroker(t, first.DB, spoolDir)
	child := remoteBroker(t, url)
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

	b := startBrokerOn(t, first.DB, map[string]string{"FILE_BUFFER_DIR": spoolDir, "FILE_BUFFER_FLUSH_MS": "20"})
	setMaintenance(t, b, false)
	b.waitDrained(t, 30*time.Second)
	b.ledger(t, "crash", want)
}
