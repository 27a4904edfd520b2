package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testDataDir returns a not yet existing data directory inside a fresh temporary directory.
// t.TempDir is not used: its 0700 directories cannot be traversed by the postgres user the server
// runs as when the tests run as root.
func testDataDir(t *testing.T) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "pglocal-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, "data")
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// startServer starts a server and stops it at cleanup (which runs before the directory removal).
func startServer(t *testing.T, dataDir string, opts Options) *Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx, dataDir, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { stopServer(t, s) })
	return s
}

func stopServer(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// withConn runs fn on a fresh connection to url (30 s budget).
func withConn(t *testing.T, url string, fn func(ctx context.Context, conn *pgx.Conn) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(ctx)
	if err := fn(ctx, conn); err != nil {
		t.Fatal(err)
	}
}

// queryString runs sql on url and returns the single value it yields, as text.
func queryString(t *testing.T, url, sql string) string {
	t.Helper()
	var v string
	withConn(t, url, func(ctx context.Context, conn *pgx.Conn) error {
		if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	})
	return v
}

func exec1(t *testing.T, url, sql string) {
	t.Helper()
	withConn(t, url, func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	})
}

func TestStartSettings(t *testing.T) {
	t.Parallel()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		opts     Options
		wantPort int // 0: any
		want     map[string]string
	}{
		{
			name: "defaults",
			want: map[string]string{
				"max_connections":         "300",
				"fsync":                   "on",
				"listen_addresses":        "127.0.0.1",
				"unix_socket_directories": "",
				"server_encoding":         "UTF8",
			},
		},
		{
			name: "explicit port, max connections and settings",
			opts: Options{
				Port:           port,
				MaxConnections: 20,
				Settings:       map[string]string{"fsync": "off", "work_mem": "8MB", "listen_addresses": "*"},
			},
			wantPort: port,
			want: map[string]string{
				"max_connections":  "20",
				"fsync":            "off",
				"work_mem":         "8MB",
				"listen_addresses": "127.0.0.1", // pglocal's own settings win
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, testDataDir(t), tt.opts)
			if !strings.HasPrefix(s.URL(), "postgres://postgres@127.0.0.1:") || !strings.HasSuffix(s.URL(), "/postgres?sslmode=disable") {
				t.Errorf("URL() = %q, want postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable", s.URL())
			}
			if tt.wantPort != 0 && !strings.Contains(s.URL(), ":"+strconv.Itoa(tt.wantPort)+"/") {
				t.Errorf("URL() = %q, want port %d", s.URL(), tt.wantPort)
			}
			if got := queryString(t, s.URL(), "SELECT 1::text"); got != "1" {
				t.Errorf("SELECT 1 = %q", got)
			}
			for name, want := range tt.want {
				if got := queryString(t, s.URL(), "SHOW "+name); got != want {
					t.Errorf("SHOW %s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestStartReusesDataDir(t *testing.T) {
	t.Parallel()
	dir := testDataDir(t)

	first := startServer(t, dir, Options{})
	exec1(t, first.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('from run 1')")
	// As on a signal-handler path: a context that is already done, and two callers at once.
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- first.Stop(cancelled) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Stop with a done context: %v", err)
		}
	}
	stopServer(t, first) // idempotent

	second := startServer(t, dir, Options{})
	if got := queryString(t, second.URL(), "SELECT v FROM kept"); got != "from run 1" {
		t.Errorf("run 2 reads %q, want the row written in run 1", got)
	}
	serverLog, err := os.ReadFile(filepath.Join(dir, logFileName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(serverLog, []byte("not properly shut down")) {
		t.Errorf("run 2 had to recover: run 1 was not shut down cleanly\n%s", serverLog)
	}
}

// TestCrashThenRestart: a crashed server (immediate shutdown) comes back on the same data
// directory and port with its committed rows, after crash recovery.
func TestCrashThenRestart(t *testing.T) {
	t.Parallel()
	dir := testDataDir(t)
	first := startServer(t, dir, Options{})
	exec1(t, first.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('committed')")
	pid := first.PID()
	if pid <= 0 {
		t.Fatalf("PID() = %d", pid)
	}
	if err := first.Crash(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("postmaster %d still runs after Crash", pid)
	}
	port := first.URL()[strings.LastIndex(first.URL(), ":")+1 : strings.LastIndex(first.URL(), "/")]
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("port of %s: %v", first.URL(), err)
	}
	second := startServer(t, dir, Options{Port: n})
	if second.URL() != first.URL() {
		t.Errorf("restarted on %s, want %s", second.URL(), first.URL())
	}
	if got := queryString(t, second.URL(), "SELECT v FROM kept"); got != "committed" {
		t.Errorf("after the crash the table reads %q", got)
	}
	serverLog, err := os.ReadFile(filepath.Join(dir, logFileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(serverLog, []byte("not properly shut down")) {
		t.Errorf("the restart did not recover from a crash: was it one?\n%s", serverLog)
	}
}

func TestStartStopsLeftoverServer(t *testing.T) {
	t.Parallel()
	dir := testDataDir(t)
	leftover := startServer(t, dir, Options{})

	// As if an earlier run had been killed before stopping its server.
	s := startServer(t, dir, Options{})
	if !leftover.done() {
		t.Error("the leftover server still runs after a new Start on its data directory")
	}
	if got := queryString(t, s.URL(), "SELECT 1::text"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	emptyBin := t.TempDir()
	tests := []struct {
		name         string
		opts         Options
		prepare      func(t *testing.T, dataDir string)
		wantNoBin    bool
		wantContains []string
	}{
		{
			name:         "BinDir is an empty directory",
			opts:         Options{BinDir: emptyBin},
			wantNoBin:    true,
			wantContains: []string{"apt-get install postgresql", "QUEEN_PG_URL", emptyBin},
		},
		{
			name:         "BinDir does not exist",
			opts:         Options{BinDir: filepath.Join(emptyBin, "missing")},
			wantNoBin:    true,
			wantContains: []string{"apt-get", "QUEEN_PG_URL", "PG_HOST"},
		},
		{
			name: "data directory holds something else",
			prepare: func(t *testing.T, dataDir string) {
				if err := os.MkdirAll(dataDir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dataDir, "notes.txt"), []byte("mine"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantContains: []string{"not empty", "PG_VERSION"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dataDir := testDataDir(t)
			if tt.prepare != nil {
				tt.prepare(t, dataDir)
			}
			tt.opts.Logger = testLogger(t)
			s, err := Start(context.Background(), dataDir, tt.opts)
			if err == nil {
				stopServer(t, s)
				t.Fatal("Start succeeded, want an error")
			}
			if got := errors.Is(err, ErrNoBinaries); got != tt.wantNoBin {
				t.Errorf("errors.Is(err, ErrNoBinaries) = %v, want %v; err: %v", got, tt.wantNoBin, err)
			}
			for _, want := range tt.wantContains {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestClearLeftover(t *testing.T) {
	if !canInspect() {
		t.Fatal("leftover detection inspects processes through /proc, which this system lacks")
	}
	t.Parallel()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		pid      int // 0: no postmaster.pid
		wantKept bool
	}{
		{name: "no lock file"},
		{name: "pid no longer runs: left to postgres", pid: dead.Process.Pid, wantKept: true},
		{name: "pid reused by an unrelated process: removed", pid: os.Getpid(), wantKept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir() // no server runs here, so no permission concerns
			pidFile := filepath.Join(dir, pidFileName)
			if tt.pid != 0 {
				content := fmt.Sprintf("%d\n%s\n", tt.pid, dir)
				if err := os.WriteFile(pidFile, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := clearLeftover(context.Background(), dir, testLogger(t)); err != nil {
				t.Fatalf("clearLeftover: %v", err)
			}
			_, err := os.Stat(pidFile)
			if kept := err == nil; kept != tt.wantKept {
				t.Errorf("postmaster.pid kept = %v, want %v", kept, tt.wantKept)
			}
		})
	}
}

func TestEnsureTraversable(t *testing.T) {
	u, err := lookupServerUser()
	if err != nil {
		t.Fatal(err)
	}
	if u == nil {
		// Not root: the server would run as ourselves. A stand-in user that owns nothing
		// here exercises the same mode changes on directories we own.
		u = &serverUser{name: "stand-in", uid: uint32(os.Getuid()) + 1, gid: uint32(os.Getgid()) + 1}
	}
	tests := []struct {
		name string
		mode os.FileMode
		want os.FileMode
	}{
		{name: "owner-only directory gets o+x", mode: 0o700, want: 0o701},
		{name: "searchable directory is left alone", mode: 0o755, want: 0o755},
		{name: "readable but not searchable gets o+x", mode: 0o744, want: 0o745},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "parent")
			if err := os.Mkdir(parent, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(parent, tt.mode); err != nil { // umask-proof
				t.Fatal(err)
			}
			if err := u.ensureTraversable(filepath.Join(parent, "data"), testLogger(t)); err != nil {
				t.Fatalf("ensureTraversable: %v", err)
			}
			fi, err := os.Stat(parent)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != tt.want {
				t.Errorf("mode = %o, want %o", got, tt.want)
			}
		})
	}
}

func TestCancelledStartLeavesUsableDir(t *testing.T) {
	t.Parallel()
	dir := testDataDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if s, err := Start(ctx, dir, Options{Logger: testLogger(t)}); err == nil {
		stopServer(t, s) // this machine was quicker than the deadline: nothing to check
	} else {
		t.Logf("cancelled Start: %v", err)
	}
	s := startServer(t, dir, Options{})
	if got := queryString(t, s.URL(), "SELECT 1::text"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
}
