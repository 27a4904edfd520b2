package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// brokerBin is queen-server built with -race by TestMain: the broker runs as a process
// of its own, so SIGKILL and SIGTERM are real, and the race detector watches it while
// things break.
var brokerBin string

// buildBroker builds cmd/server with the race detector into dir.
func buildBroker(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		// go test puts its toolchain's GOROOT in the environment of the test binary.
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, statErr := os.Stat(goBin); os.Getenv("GOROOT") == "" || statErr != nil {
			return "", fmt.Errorf("the go command is needed to build the broker: %w", err)
		}
	}
	out := filepath.Join(dir, "queen-server")
	cmd := exec.Command(goBin, "build", "-race", "-o", out, "github.com/queen-go/queen/cmd/server")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -race ./cmd/server: %v\n%s", err, b)
	}
	return out, nil
}

// brokerProc is one broker process. Restarts keep its port, database and spool
// directory, as a supervisor restarting it on the same host would.
type brokerProc struct {
	t     testing.TB
	URL   string
	Spool string
	port  int
	env   map[string]string
	tmpfs string // size of a tmpfs mounted on the spool directory for the process ("": none)
	log   *os.File
	cmd   *exec.Cmd
	done  chan struct{} // closed when the current process has exited
	state *os.ProcessState
}

// startBroker starts a broker on db with a fresh spool directory; env adds or overrides
// its configuration. The test's cleanup stops it (SIGTERM, then SIGKILL).
func startBroker(t testing.TB, db string, env map[string]string) *brokerProc {
	t.Helper()
	return startBrokerTmpfs(t, db, env, "")
}

// startBrokerTmpfs is startBroker with the spool directory on a tmpfs of size bytes
// (mount's size=, e.g. "512k") that only the broker's process sees: a small disk that
// fills (docs/reliability.md F9). It needs root and unshare (util-linux); the test skips without
// them. The tmpfs lives as long as the process: a restart starts on an empty spool.
func startBrokerTmpfs(t testing.TB, db string, env map[string]string, size string) *brokerProc {
	if size != "" {
		if os.Geteuid() != 0 {
			t.Skip("a tmpfs spool needs root (mount in a private mount namespace)")
		}
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("a tmpfs spool needs unshare (util-linux)")
		}
	}
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	vars := map[string]string{
		"QUEEN_PG_URL":    db,
		"PORT":            strconv.Itoa(port),
		"QUEEN_BIND_ADDR": "127.0.0.1",
		"DB_POOL_SIZE":    "20",
		"LOG_LEVEL":       "warn",
		"FILE_BUFFER_DIR": filepath.Join(dir, "spool"),
		// Short waits so that faults are detected and recovered from within seconds.
		"DB_STATEMENT_TIMEOUT": "2000",
		"FILE_BUFFER_FLUSH_MS": "50",
	}
	maps.Copy(vars, env)
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	b := &brokerProc{t: t, URL: "http://127.0.0.1:" + strconv.Itoa(port), Spool: vars["FILE_BUFFER_DIR"],
		port: port, env: vars, tmpfs: size, log: logf}
	t.Cleanup(func() {
		b.stop()
		logf.Close()
		if t.Failed() {
			if tail := b.logTail(4000); tail != "" {
				t.Logf("broker log (%s):\n%s", logf.Name(), tail)
			}
		}
	})
	b.start()
	return b
}

// start launches the process and waits until /health answers.
func (b *brokerProc) start() {
	b.t.Helper()
	cmd := newBrokerCmd(context.Background(), b.env)
	if b.tmpfs != "" {
		// A mount namespace of its own: the tmpfs is the broker's only, never the host's.
		cmd = exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
			`mkdir -p "$1" && mount -t tmpfs -o size="$2" tmpfs "$1" && exec "$3"`, "sh", b.Spool, b.tmpfs, brokerBin)
	}
	cmd.Env = brokerEnv(b.env)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	fmt.Fprintf(b.log, "=== start %s\n", time.Now().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start broker: %v", err)
	}
	b.cmd, b.done, b.state = cmd, make(chan struct{}), nil
	done := b.done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	b.waitHealthy()
}

// newBrokerCmd is the broker's command with env on top of the test's environment.
func newBrokerCmd(ctx context.Context, env map[string]string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, brokerBin)
	cmd.Env = brokerEnv(env)
	return cmd
}

func brokerEnv(env map[string]string) []string {
	out := os.Environ()
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// waitHealthy polls /health until it answers 200, the process exits or a minute passes.
func (b *brokerProc) waitHealthy() {
	b.t.Helper()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-b.done:
			b.t.Fatalf("broker exited during start-up (%v):\n%s", b.cmd.ProcessState, b.logTail(4000))
		default:
		}
		if resp, err := client.Get(b.URL + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("broker not healthy within a minute:\n%s", b.logTail(4000))
}

// kill is kill -9: the process gets no chance to answer, flush or close anything.
func (b *brokerProc) kill() {
	b.t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		b.t.Fatalf("kill broker: %v", err)
	}
	<-b.done
}

// term sends SIGTERM and waits up to limit; it returns how long the exit took and the
// exit code (-1 when it had to be killed).
func (b *brokerProc) term(limit time.Duration) (time.Duration, int) {
	b.t.Helper()
	began := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		b.t.Fatalf("SIGTERM broker: %v", err)
	}
	select {
	case <-b.done:
		return time.Since(began), b.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		_ = b.cmd.Process.Kill()
		<-b.done
		return time.Since(began), -1
	}
}

// restart starts the process again after kill or term.
func (b *brokerProc) restart() {
	b.t.Helper()
	b.start()
}

// stop ends the process if it runs: SIGTERM, then SIGKILL after 30 s.
func (b *brokerProc) stop() {
	if b.cmd == nil {
		return
	}
	select {
	case <-b.done:
		return
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

// logTail returns the last n bytes of the broker's log.
func (b *brokerProc) logTail(n int64) string {
	raw, err := os.ReadFile(b.log.Name())
	if err != nil {
		return ""
	}
	if int64(len(raw)) > n {
		raw = raw[int64(len(raw))-n:]
	}
	return string(raw)
}

// metrics reads /metrics/prometheus.
func (b *brokerProc) metrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.URL+"/metrics/prometheus", nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// metric reads one sample of /metrics/prometheus (name with its labels, if any).
func (b *brokerProc) metric(ctx context.Context, name string) (float64, error) {
	body, err := b.metrics(ctx)
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("metric %s not exported", name)
}

// waitSpoolEmpty polls until the spool has nothing pending (queen_file_buffer_pending 0
// and no finalised file left) and returns when; the test fails after limit.
func (b *brokerProc) waitSpoolEmpty(t testing.TB, limit time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if b.spoolEmpty() {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the spool still holds records %v after the restart", limit)
	return time.Now()
}

// spoolEmpty reports whether the spool has nothing left to replay: its pending gauge at
// 0 and no finalised file.
func (b *brokerProc) spoolEmpty() bool {
	n, err := b.metric(context.Background(), "queen_file_buffer_pending")
	return err == nil && n == 0 && len(b.spoolBacklog()) == 0
}

// spoolBacklog lists the spool's files still waiting for replay: finalised files (.buf)
// and their positions; the quarantine (failed/) and the owner lock apart.
func (b *brokerProc) spoolBacklog() []string {
	var out []string
	for _, dir := range b.spoolDirs() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".buf") || strings.HasSuffix(e.Name(), ".pos") {
				out = append(out, filepath.Join(filepath.Base(dir), e.Name()))
			}
		}
	}
	return out
}

// spoolDirs are the broker's spool directory and, on several shards (QUEEN_SHARDS), the
// spool directory of each shard after the first within it (shard-N).
func (b *brokerProc) spoolDirs() []string {
	dirs, _ := filepath.Glob(filepath.Join(b.Spool, "shard-*"))
	return append([]string{b.Spool}, dirs...)
}

// quarantined lists the spool's quarantine (failed/): empty unless a scenario planted
// bad data.
func (b *brokerProc) quarantined() []string {
	var out []string
	for _, dir := range b.spoolDirs() {
		entries, _ := os.ReadDir(filepath.Join(dir, "failed"))
		for _, e := range entries {
			out = append(out, filepath.Join(filepath.Base(dir), e.Name()))
		}
	}
	return out
}

// rss is the broker process's resident memory, bytes (/proc/PID/status VmRSS).
func (b *brokerProc) rss(t testing.TB) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", b.cmd.Process.Pid)
	return 0
}
