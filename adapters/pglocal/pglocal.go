package pglocal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	defaultMaxConnections = 300
	// readyTimeout bounds the wait for a started server to accept connections. It is generous
	// because a server killed earlier replays its WAL before accepting anything.
	readyTimeout = 2 * time.Minute
	// portAttempts is how often Start retries with a new port when it picked one itself and
	// another process grabbed it between our probe and the server's bind.
	portAttempts = 3
	// minStopGrace is how long Stop waits for the fast shutdown even when its context is already
	// done, as it typically is on a signal-handler path, before escalating.
	minStopGrace = 10 * time.Second
	// escalateWait is how long Stop waits after each escalation (SIGQUIT, then SIGKILL).
	escalateWait = 5 * time.Second
)

// Options configure Start. The zero value is ready to use.
type Options struct {
	BinDir         string            // "" = discover: directory of `initdb` on PATH, else newest /usr/lib/postgresql/*/bin
	Port           int               // 0 = pick a free loopback TCP port (listen on 127.0.0.1 only)
	MaxConnections int               // 0 = 300
	Settings       map[string]string // extra server settings passed as -c key=value (e.g. "fsync":"off")
	Logger         *slog.Logger      // nil = slog.Default()
}

func (o Options) withDefaults() Options {
	if o.MaxConnections == 0 {
		o.MaxConnections = defaultMaxConnections
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Server is a running PostgreSQL started by Start. Its methods are safe for concurrent use.
type Server struct {
	url     string
	dataDir string
	log     *slog.Logger
	proc    *os.Process
	exited  chan struct{} // closed once the postmaster has exited and been reaped
	waitErr error         // the postmaster's exit status; read only after exited is closed
}

// Start initialises dataDir with initdb when it holds no cluster yet (reuses it otherwise), starts
// `postgres` as a child process and waits until it accepts connections. A leftover server of an
// earlier run on the same dataDir is stopped first (see the package documentation).
func Start(ctx context.Context, dataDir string, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	log := opts.Logger
	binDir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	u, err := lookupServerUser()
	if err != nil {
		return nil, err
	}
	dir, err := prepareDataDir(dataDir, u, log)
	if err != nil {
		return nil, err
	}
	if err := initCluster(ctx, binDir, dir, u, log); err != nil {
		return nil, err
	}
	if err := clearLeftover(ctx, dir, log); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := startOnce(ctx, binDir, dir, u, opts)
		if err == nil || opts.Port != 0 || attempt == portAttempts || !errors.Is(err, errPortTaken) {
			return s, err
		}
		log.Info("pglocal: port taken meanwhile, retrying with another", "err", err)
	}
}

var errPortTaken = errors.New("port already in use")

// startOnce starts the postmaster on one port and waits until it is ready, or stops it again.
func startOnce(ctx context.Context, binDir, dir string, u *serverUser, opts Options) (*Server, error) {
	port := opts.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	logFile, err := openLog(dir, u)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	offset := logSize(dir)

	began := time.Now()
	cmd := exec.Command(filepath.Join(binDir, "postgres"), serverArgs(dir, port, opts)...)
	cmd.Dir = dir
	cmd.Stdin = nil // /dev/null: the server must not compete with us for the terminal
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = u.procAttr(true)
	setParentDeathSignal(cmd.SysProcAttr)

	s := &Server{
		url:     fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
		dataDir: dir,
		log:     opts.Logger,
		exited:  make(chan struct{}),
	}
	if err := s.run(cmd); err != nil {
		return nil, fmt.Errorf("pglocal: start postgres on %s: %w", dir, err)
	}
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		msg := logTail(dir, offset)
		if strings.Contains(msg, "could not bind") || strings.Contains(msg, "could not create any TCP/IP sockets") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, fmt.Errorf("pglocal: postgres on %s (port %d) did not become ready: %w\nserver log (%s):\n%s",
			dir, port, err, filepath.Join(dir, logFileName), msg)
	}
	s.log.Info("pglocal: server ready", "dir", dir, "port", port, "pid", s.proc.Pid,
		"took", time.Since(began).Round(time.Millisecond))
	return s, nil
}

// serverArgs builds the postgres command line. Options.Settings come first so the settings
// pglocal relies on (loopback only, no Unix socket, the port) win over them.
func serverArgs(dir string, port int, opts Options) []string {
	args := []string{"-D", dir}
	for _, k := range slices.Sorted(maps.Keys(opts.Settings)) {
		args = append(args, "-c", k+"="+opts.Settings[k])
	}
	return append(args,
		"-c", "max_connections="+strconv.Itoa(opts.MaxConnections),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=",
		"-c", "port="+strconv.Itoa(port),
	)
}

// run starts cmd and reaps it in a goroutine locked to its OS thread: on Linux the kernel sends the
// parent-death signal when the *thread* that forked the child exits, so that thread must live
// exactly as long as the server does.
func (s *Server) run(cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		s.proc = cmd.Process
		started <- nil
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return <-started
}

// freePort asks the kernel for a free loopback port. The port is released before postgres binds
// it, so Start retries on the rare collision.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pglocal: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady connects until the server accepts a connection, it exits, or the wait is over.
func (s *Server) waitReady(ctx context.Context) error {
	cfg, err := pgx.ParseConfig(s.url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	retry := time.NewTicker(50 * time.Millisecond)
	defer retry.Stop()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.ConnectConfig(attempt, cfg)
		cancelAttempt()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("server exited during startup: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%w (last connection error: %v)", ctx.Err(), err)
		case <-retry.C:
		}
	}
}

// URL returns the connection URL of the server's admin database, e.g.
// postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable.
func (s *Server) URL() string { return s.url }

// Stop shuts the server down with a fast shutdown (SIGINT to the postmaster: sessions are
// disconnected, a checkpoint is written) and waits for it to exit. It is idempotent and safe to
// call concurrently, e.g. from a signal handler and a deferred cleanup at once.
//
// Stop waits until ctx is done, but at least minStopGrace even if ctx is already done (as on a
// signal-handler path), then escalates to an immediate shutdown (SIGQUIT, crash recovery on next
// start) and finally SIGKILL, and returns an error saying so.
func (s *Server) Stop(ctx context.Context) error {
	if s.done() {
		return nil
	}
	s.signal(syscall.SIGINT)
	grace := time.NewTimer(minStopGrace)
	defer grace.Stop()
	ctxDone, graceOver := ctx.Done(), grace.C
	for ctxDone != nil || graceOver != nil {
		select {
		case <-s.exited:
			return nil
		case <-ctxDone:
			ctxDone = nil
		case <-graceOver:
			graceOver = nil
		}
	}
	if s.done() {
		return nil
	}
	if s.kill() {
		return fmt.Errorf("pglocal: fast shutdown of %s did not finish, server killed: %w", s.dataDir, ctx.Err())
	}
	return fmt.Errorf("pglocal: server on %s does not exit (pid %d): %w", s.dataDir, s.proc.Pid, ctx.Err())
}

// kill escalates to an immediate shutdown, then SIGKILL, and reports whether the server is gone.
func (s *Server) kill() bool {
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGKILL} {
		s.signal(sig)
		select {
		case <-s.exited:
			return true
		case <-time.After(escalateWait):
		}
	}
	return false
}

func (s *Server) signal(sig syscall.Signal) {
	if err := s.proc.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.log.Warn("pglocal: signal server", "signal", sig, "pid", s.proc.Pid, "err", err)
	}
}

func (s *Server) done() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// PID returns the postmaster's process id (its backends are its children): for fault
// tests that freeze the server (SIGSTOP) or watch its processes.
func (s *Server) PID() int { return s.proc.Pid }

// Crash stops the server the way a power cut would: an immediate shutdown (SIGQUIT: no
// checkpoint, crash recovery on the next Start of the same data directory), then SIGKILL
// if it lingers. For fault tests; it waits until the postmaster has exited or ctx is done.
func (s *Server) Crash(ctx context.Context) error {
	for _, sig := range []syscall.Signal{syscall.SIGQUIT, syscall.SIGKILL} {
		s.signal(sig)
		select {
		case <-s.exited:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("pglocal: crash %s: %w", s.dataDir, ctx.Err())
		case <-time.After(escalateWait):
		}
	}
	return fmt.Errorf("pglocal: server on %s (pid %d) survives SIGKILL", s.dataDir, s.proc.Pid)
}
