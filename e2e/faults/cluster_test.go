package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/adapters/pglocal"
)

// cluster is the fault tests' own PostgreSQL: started by this package on a port of its
// own, never QUEEN_TEST_PG_URL's server and never shared with another package, because
// the faults crash, restart and freeze it. One per test binary; scenarios run one at a
// time and each gets a database of its own.
type cluster struct {
	dir  string
	port int

	mu  sync.Mutex
	srv *pglocal.Server
}

// startCluster initialises and starts the cluster in dir on a free loopback port, with
// the durability settings of production (fsync and synchronous commit on: a crash must
// lose nothing that was committed).
func startCluster(dir string) (*cluster, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := &cluster{dir: dir, port: port}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *cluster) options() pglocal.Options {
	return pglocal.Options{Port: c.port, MaxConnections: 200,
		Settings: map[string]string{"fsync": "on", "synchronous_commit": "on",
			// Transactions across shards (e2e/faults/shards_test.go) prepare on each.
			"max_prepared_transactions": "20"}}
}

// start starts the server on the cluster's data directory and port.
func (c *cluster) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, c.dir, c.options())
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.srv = srv
	c.mu.Unlock()
	return nil
}

func (c *cluster) server() *pglocal.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.srv
}

// url is the admin database's URL; with db, that database's.
func (c *cluster) url(db string) string {
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// stop stops the server cleanly (fast shutdown).
func (c *cluster) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.server().Stop(ctx)
}

// crash is `pg_ctl stop -m immediate`: no checkpoint, crash recovery at the next start.
func (c *cluster) crash(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.server().Crash(ctx); err != nil {
		t.Fatal(err)
	}
}

// restart starts the server again after a crash or a stop, same directory and port.
func (c *cluster) restart(t testing.TB) {
	t.Helper()
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
}

// freeze and thaw send SIGSTOP and SIGCONT to the postmaster and its children: this
// cluster's processes only, found by parent pid, never by name.
func (c *cluster) freeze(t testing.TB) { c.signalAll(t, syscall.SIGSTOP) }
func (c *cluster) thaw(t testing.TB)   { c.signalAll(t, syscall.SIGCONT) }

func (c *cluster) signalAll(t testing.TB, sig syscall.Signal) {
	t.Helper()
	pm := c.server().PID()
	pids := append([]int{pm}, children(pm)...)
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
			t.Fatalf("signal %v to postgres %d: %v", sig, pid, err)
		}
	}
}

// children lists the processes whose parent is pid (/proc/PID/stat, field 4).
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if ok && len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, n)
		}
	}
	return out
}

// newDatabase creates an empty database for one scenario and returns its URL; the
// scenario's end drops it.
func (c *cluster) newDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("fault_%d", time.Now().UnixNano())
	c.admin(t, "CREATE DATABASE "+name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.url(""))
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	return c.url(name)
}

// admin runs one statement on the admin database.
func (c *cluster) admin(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.url(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
