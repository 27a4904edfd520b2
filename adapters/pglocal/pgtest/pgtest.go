package pgtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"

	"github.com/queen-go/queen/adapters/pglocal"
)

// envURL names the environment variable holding the URL of an existing server to use instead of
// a throwaway cluster.
const envURL = "QUEEN_TEST_PG_URL"

const (
	startTimeout = 2 * time.Minute
	stopTimeout  = time.Minute
	opTimeout    = time.Minute
	// nameAttempts bounds retries when a database name is taken by a leftover of an earlier run.
	nameAttempts = 5
	// sqlstate of CREATE DATABASE for a name that exists.
	duplicateDatabase = "42P04"
)

// cluster is the throwaway server of this test process, started on first use.
var cluster struct {
	mu       sync.Mutex
	server   *pglocal.Server // nil until started
	dir      string          // temporary directory holding the cluster
	startErr error           // remembered so a failed start is not retried by every test
}

var dbSeq atomic.Int64

// standbyWAL is the WAL a test cluster keeps for a standby (NewStandby) that has not
// connected yet: pg_basebackup uses no slot, and every CREATE DATABASE logs its whole
// template (some 8 MB) while DROP DATABASE checkpoints, so without it the segment a new
// standby starts from can be recycled before it asks for it, and it never catches up.
const standbyWAL = "256MB"

// further are more throwaway clusters of this test process (NewDatabaseOn), each started
// on first use and stopped with the first.
var further struct {
	mu      sync.Mutex
	servers map[int]*pglocal.Server
	dirs    map[int]string
}

// Main runs the package's tests (call from TestMain: `func TestMain(m *testing.M) { pgtest.Main(m) }`),
// stops the throwaway cluster if this process started one, and then fails the run when a
// goroutine is left behind (goleak; opts add ignores): every pool, broker and component a
// test started must be stopped by it. It exits with m.Run's code, or 1 on a leak.
func Main(m *testing.M, opts ...goleak.Option) {
	os.Exit(Finish(m.Run(), opts...))
}

// Finish is Main after m.Run, for a TestMain with more to stop between the tests and the
// leak check (e2e/browser stops its browser): it stops the throwaway cluster and returns
// code, or 1 when a goroutine is left behind.
func Finish(code int, opts ...goleak.Option) int {
	if err := shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if code == 0 {
		if err := goleak.Find(opts...); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: goroutines left behind by the tests: %v\n", err)
			code = 1
		}
	}
	return code
}

// Server returns the admin URL of the server in use (starting it if needed) — used by benchmarks
// that want to compare raw inserts.
func Server(t testing.TB) string {
	t.Helper()
	u, err := adminURL()
	if err != nil {
		t.Fatalf("pgtest: no PostgreSQL server for tests: %v", err)
	}
	return u
}

// NewDatabase returns the URL of a fresh, empty database that only this test uses. It is dropped
// at test cleanup (WITH (FORCE), so connections the test left open do not prevent it).
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabaseAt(t, Server(t))
}

// newDatabaseAt is NewDatabase on the server at admin.
func newDatabaseAt(t testing.TB, admin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	name, err := createDatabase(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(admin, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	dbURL, err := withDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
}

// NewDatabaseOn is NewDatabase on the i-th cluster of this test process (1, 2, ...; 0 is
// NewDatabase's), started on first use with the same settings and shared by every test
// that asks for it: tests of a broker on several clusters (QUEEN_SHARDS) get separate
// servers without starting their own. With QUEEN_TEST_PG_URL there is one server: the
// database is on it.
func NewDatabaseOn(t testing.TB, i int) string {
	t.Helper()
	if i == 0 || os.Getenv(envURL) != "" {
		return NewDatabase(t)
	}
	further.mu.Lock()
	srv := further.servers[i]
	if srv == nil {
		s, dir, err := startCluster()
		if err != nil {
			further.mu.Unlock()
			t.Fatalf("pgtest: cluster %d: %v", i, err)
		}
		if further.servers == nil {
			further.servers, further.dirs = map[int]*pglocal.Server{}, map[int]string{}
		}
		further.servers[i], further.dirs[i] = s, dir
		srv = s
	}
	further.mu.Unlock()
	return newDatabaseAt(t, srv.URL())
}

// adminURL returns QUEEN_TEST_PG_URL, or the URL of the throwaway cluster, starting it once.
func adminURL() (string, error) {
	if u := os.Getenv(envURL); u != "" {
		return u, nil
	}
	cluster.mu.Lock()
	defer cluster.mu.Unlock()
	if cluster.server == nil && cluster.startErr == nil {
		cluster.server, cluster.dir, cluster.startErr = startCluster()
	}
	if cluster.startErr != nil {
		return "", cluster.startErr
	}
	return cluster.server.URL(), nil
}

// startCluster starts the throwaway cluster in a new temporary directory.
func startCluster() (*pglocal.Server, string, error) {
	dir, err := os.MkdirTemp("", "queen-pgtest-")
	if err != nil {
		return nil, "", fmt.Errorf("pgtest: temporary directory: %w", err)
	}
	// MkdirTemp makes it 0700; the postgres user the server runs as under root must pass through.
	if err := os.Chmod(dir, 0o711); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("pgtest: chmod %s: %w", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s, err := pglocal.Start(ctx, filepath.Join(dir, "data"), pglocal.Options{
		MaxConnections: 300,
		// Two-phase commit (transactions across shards) needs slots for prepared
		// transactions; 50 bound their shared memory.
		Settings: map[string]string{"max_prepared_transactions": "50", "wal_keep_size": standbyWAL},
		// Only problems are worth printing in the middle of test output.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("start throwaway cluster (or set %s): %w", envURL, err)
	}
	return s, dir, nil
}

// shutdown stops the throwaway clusters this process started and removes their
// directories.
func shutdown() error {
	further.mu.Lock()
	var errs []error
	for i, srv := range further.servers {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		err := srv.Stop(ctx)
		cancel()
		if err == nil {
			err = os.RemoveAll(further.dirs[i])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pgtest: shut down cluster %d in %s: %w", i, further.dirs[i], err))
		}
	}
	further.servers = nil
	further.mu.Unlock()
	return errors.Join(append(errs, shutdownFirst())...)
}

// shutdownFirst stops the first throwaway cluster, if this process started one.
func shutdownFirst() error {
	cluster.mu.Lock()
	defer cluster.mu.Unlock()
	if cluster.server == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	err := cluster.server.Stop(ctx)
	if err == nil {
		// Keep the directory (and its server log) when the server did not stop cleanly.
		err = os.RemoveAll(cluster.dir)
	}
	cluster.server = nil
	if err != nil {
		return fmt.Errorf("pgtest: shut down throwaway cluster in %s: %w", cluster.dir, err)
	}
	return nil
}

// openConn opens a connection to dbURL for one helper's statements, under a context
// bounded by opTimeout; done closes both. It fails the test if it cannot connect.
func openConn(t testing.TB, dbURL string) (ctx context.Context, conn *pgx.Conn, done func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		cancel()
		t.Fatalf("pgtest: connect: %v", err)
	}
	return ctx, conn, func() {
		_ = conn.Close(context.Background())
		cancel()
	}
}

// createDatabase creates an empty database with a name unique to this process and returns it.
func createDatabase(ctx context.Context, admin string) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to admin database: %w", err)
	}
	defer conn.Close(context.Background())
	for attempt := 1; ; attempt++ {
		name := fmt.Sprintf("qt_%d_%d", os.Getpid(), dbSeq.Add(1))
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0")
		if err == nil {
			return name, nil
		}
		var pgErr *pgconn.PgError
		if attempt == nameAttempts || !errors.As(err, &pgErr) || pgErr.Code != duplicateDatabase {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
}

// dropDatabase drops name, disconnecting any session still using it.
func dropDatabase(admin, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("drop database %s: connect to admin database: %w", name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// withDatabase returns the admin connection string pointed at database name. Both URL and
// keyword/value forms are accepted, since QUEEN_TEST_PG_URL may use either.
func withDatabase(admin, name string) (string, error) {
	if !strings.HasPrefix(admin, "postgres://") && !strings.HasPrefix(admin, "postgresql://") {
		// In keyword/value strings a later keyword overrides an earlier one.
		return admin + " dbname=" + name, nil
	}
	u, err := url.Parse(admin)
	if err != nil {
		// Not wrapped: url.Parse errors quote the URL, password included.
		return "", fmt.Errorf("%s is not a valid URL", envURL)
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String(), nil
}

// PostmasterPID is the pid of the throwaway cluster's postmaster (its CPU and its
// children's can be read in /proc: benchmarks report the database's CPU per operation),
// or 0 when the tests use QUEEN_TEST_PG_URL or the cluster is not started.
func PostmasterPID() int {
	cluster.mu.Lock()
	defer cluster.mu.Unlock()
	if cluster.server == nil {
		return 0
	}
	return cluster.server.PID()
}

// NewDatabaseWith is NewDatabase with per-database defaults (ALTER DATABASE ... SET name =
// value, in pairs: "standard_conforming_strings", "off"): every session the test opens on it
// starts with them, unless it sets its own. A test uses it to reproduce a database whose
// settings differ from the server's defaults, as legacy databases' do.
func NewDatabaseWith(t testing.TB, settings ...string) string {
	t.Helper()
	if len(settings)%2 != 0 {
		t.Fatalf("pgtest: NewDatabaseWith: settings come in name, value pairs: %q", settings)
	}
	dbURL := NewDatabase(t)
	ctx, conn, done := openConn(t, dbURL)
	defer done()
	db := pgx.Identifier{conn.Config().Database}.Sanitize()
	for i := 0; i < len(settings); i += 2 {
		// SET takes no bound parameter: the value is an escape-string literal, correct
		// whatever this session's standard_conforming_strings is.
		value := strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(settings[i+1])
		stmt := "ALTER DATABASE " + db + " SET " + pgx.Identifier{settings[i]}.Sanitize() + " = E'" + value + "'"
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("pgtest: %s: %v", stmt, err)
		}
	}
	return dbURL
}

// NewCluster starts a PostgreSQL cluster of the calling test's own, besides the shared
// one, and returns its admin URL (user postgres); it is stopped and removed at the test's
// cleanup. For tests that need a second server (a multi-host connection string, a
// server whose settings differ); without PostgreSQL binaries it fails the test.
func NewCluster(t testing.TB) string {
	t.Helper()
	return NewClusterWith(t, 20, nil)
}

// NewClusterWith is NewCluster with maxConnections connections and extra server
// settings (such as max_prepared_transactions).
func NewClusterWith(t testing.TB, maxConnections int, settings map[string]string) string {
	t.Helper()
	dir := t.TempDir() // pglocal opens it to the postgres user when running as root
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	all := map[string]string{"wal_keep_size": standbyWAL}
	maps.Copy(all, settings)
	s, err := pglocal.Start(ctx, filepath.Join(dir, "data"), pglocal.Options{MaxConnections: maxConnections, Settings: all,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatalf("pgtest: NewCluster: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("pgtest: stop the test's own cluster: %v", err)
		}
	})
	return s.URL()
}

// Standby is a streaming standby a test started (NewStandby).
type Standby struct {
	// URL is the standby's URL for the primary URL's database: read-only sessions that
	// see the primary's commits as the standby replays them.
	URL string
	srv *pglocal.Server
}

// Stop stops the standby before the test's end (a replica that goes away); the cleanup
// then has nothing left to do.
func (s *Standby) Stop(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.srv.Stop(ctx); err != nil {
		t.Fatalf("pgtest: stop the standby: %v", err)
	}
}

// NewStandby starts a streaming standby of the server at primaryURL (a URL this package
// gave: NewCluster's, or a database's on it; a standby copies the whole cluster, so a
// test's own NewCluster keeps the copy small) on its own port. It is stopped and removed
// at the test's cleanup; without PostgreSQL binaries it fails the test.
func NewStandby(t testing.TB, primaryURL string) *Standby {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	u, err := url.Parse(primaryURL)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Fatalf("pgtest: NewStandby: %q is not a postgres:// URL", primaryURL)
	}
	s, err := pglocal.StartStandby(ctx, primaryURL, filepath.Join(t.TempDir(), "standby"), pglocal.Options{
		MaxConnections: 300, // at least the primary's: a hot standby refuses fewer
		Logger:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatalf("pgtest: NewStandby: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("pgtest: stop the test's standby: %v", err)
		}
	})
	su, err := url.Parse(s.URL())
	if err != nil {
		t.Fatalf("pgtest: NewStandby: %v", err)
	}
	su.Path, su.RawPath = u.Path, u.RawPath
	return &Standby{URL: su.String(), srv: s}
}
