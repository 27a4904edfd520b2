package pglocal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	logFileName = "postgres.log"
	pidFileName = "postmaster.pid"
	// leftoverStopTimeout bounds the wait for a leftover server to finish its fast shutdown.
	leftoverStopTimeout = 60 * time.Second
)

// hasCluster reports whether dir already holds an initialised cluster.
func hasCluster(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "PG_VERSION"))
	return err == nil
}

// prepareDataDir creates dir (0700, owned by the server user) unless it exists, checks that the
// server user can reach it, and returns its absolute path with symlinks resolved (the form postgres
// reports as its working directory, which the leftover check compares with).
func prepareDataDir(dataDir string, u *serverUser, log *slog.Logger) (string, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("pglocal: data directory %s: %w", dataDir, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("pglocal: create parent of %s: %w", dir, err)
	}
	dir = resolve(filepath.Join(resolve(filepath.Dir(dir)), filepath.Base(dir)))
	if err := u.ensureTraversable(dir, log); err != nil {
		return "", err
	}
	err = os.Mkdir(dir, 0o700)
	switch {
	case err == nil:
		return dir, u.chown(dir)
	case !errors.Is(err, fs.ErrExist):
		return "", fmt.Errorf("pglocal: create data directory %s: %w", dir, err)
	case hasCluster(dir):
		return dir, nil
	}
	return dir, adoptEmptyDir(dir, u)
}

// adoptEmptyDir prepares an existing directory without a cluster for initdb, which accepts it
// only when empty: a non-empty one is refused here with a clearer message than initdb's.
func adoptEmptyDir(dir string, u *serverUser) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("pglocal: read data directory %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("pglocal: data directory %s is not empty but holds no cluster (no PG_VERSION); "+
			"empty it or choose another directory", dir)
	}
	// PostgreSQL insists on 0700 (or 0750) and on owning its data directory.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("pglocal: chmod %s: %w", dir, err)
	}
	return u.chown(dir)
}

// initCluster runs initdb on dir when it holds no cluster yet. initdb's output is appended to the
// server log on success and quoted in the error on failure.
func initCluster(ctx context.Context, binDir, dir string, u *serverUser, log *slog.Logger) error {
	if hasCluster(dir) {
		return nil
	}
	began := time.Now()
	// On cancellation initdb is asked to stop, so that it removes what it wrote (a
	// half-made cluster would look reusable next time).
	if err := runTool(ctx, binDir, dir, u, "initdb", "-D", dir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"); err != nil {
		return err
	}
	log.Info("pglocal: initialised cluster", "dir", dir, "version", versionOf(dir), "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// runTool runs one of PostgreSQL's programs (initdb, pg_basebackup) as the server user
// in dir and appends its output to the server log there. On ctx's end it is asked to
// stop (SIGTERM: it cleans up what it wrote) and killed only if it does not exit within
// 10 s.
func runTool(ctx context.Context, binDir, dir string, u *serverUser, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, name), args...)
	cmd.Dir = dir // our own working directory may be unreachable for the server user
	cmd.SysProcAttr = u.procAttr(false)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		return fmt.Errorf("pglocal: %s %s: %w\n%s", name, dir, err, tail(out.Bytes(), 20))
	}
	return appendToLog(dir, u, out.Bytes())
}

// openLog opens the server log for appending, owned by the server user.
func openLog(dir string, u *serverUser) (*os.File, error) {
	path := filepath.Join(dir, logFileName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pglocal: open server log: %w", err)
	}
	if err := u.chown(path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func appendToLog(dir string, u *serverUser, b []byte) error {
	f, err := openLog(dir, u)
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("pglocal: write server log: %w", werr)
	}
	return nil
}

// logTail returns the last lines the server wrote to its log since offset, for error messages.
func logTail(dir string, offset int64) string {
	b, err := os.ReadFile(filepath.Join(dir, logFileName))
	if err != nil {
		return fmt.Sprintf("(server log unreadable: %v)", err)
	}
	if offset > int64(len(b)) {
		offset = 0
	}
	return tail(b[offset:], 20)
}

func logSize(dir string) int64 {
	fi, err := os.Stat(filepath.Join(dir, logFileName))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// tail returns the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// readPostmasterPID returns the pid recorded in dir's postmaster.pid (its first line), if any.
func readPostmasterPID(dir string) (int, bool) {
	f, err := os.Open(filepath.Join(dir, pidFileName))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	return pid, err == nil && pid > 0
}

// clearLeftover deals with a postmaster.pid left by an earlier run (see "Leftover servers" in the
// package documentation): it stops our own leftover server, or removes a lock file whose pid was
// reused by an unrelated process. Anything else is left to postgres.
func clearLeftover(ctx context.Context, dir string, log *slog.Logger) error {
	pid, ok := readPostmasterPID(dir)
	if !ok || !canInspect() {
		return nil
	}
	if isPostgresIn(pid, dir) {
		return stopLeftover(ctx, pid, dir, log)
	}
	if processGone(pid) || anyPostgresIn(dir) {
		// Dead pid: postgres replaces the stale file itself. Orphaned backends still running in
		// the directory: postgres must see the old lock and shared memory to refuse safely.
		return nil
	}
	log.Warn("pglocal: removing stale postmaster.pid whose pid now belongs to another process", "dir", dir, "pid", pid)
	if err := os.Remove(filepath.Join(dir, pidFileName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pglocal: remove stale %s: %w", pidFileName, err)
	}
	return nil
}

// stopLeftover fast-shuts-down a postmaster an earlier run of ours left running on dir.
func stopLeftover(ctx context.Context, pid int, dir string, log *slog.Logger) error {
	log.Warn("pglocal: stopping server left running by an earlier run", "dir", dir, "pid", pid)
	if err := signalPID(pid, syscall.SIGINT); err != nil && !processGone(pid) {
		return fmt.Errorf("pglocal: stop leftover server (pid %d) on %s: %w", pid, dir, err)
	}
	ctx, cancel := context.WithTimeout(ctx, leftoverStopTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !processGone(pid) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pglocal: leftover server (pid %d) on %s did not stop: %w", pid, dir, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}
