package postgres

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
)

// readOnlyServer starts a cluster of this test's own that holds a database named dbName
// and then takes no writes (default_transaction_read_only, as a hot standby answers
// target_session_attrs=read-write), and returns its host:port.
func readOnlyServer(t *testing.T, dbName string) string {
	t.Helper()
	admin := pgtest.NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{"CREATE DATABASE " + pgx.Identifier{dbName}.Sanitize(),
		"ALTER SYSTEM SET default_transaction_read_only = on", "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestMultiHostURLFindsTheWritableServer: with several hosts and
// target_session_attrs=read-write (docs/reliability.md, "Failover"), every connection the
// Store opens (the pool's, the LISTEN connection of the peer hints) skips a host that is
// down and one that takes no writes, and lands on the writable server.
func TestMultiHostURLFindsTheWritableServer(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDatabase(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	writable := u.Host
	readOnly := readOnlyServer(t, strings.TrimPrefix(u.Path, "/"))
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	q.Set("connect_timeout", "5")
	u.RawQuery = q.Encode()
	u.Host = "127.0.0.1:1," + readOnly + "," + writable // down, read-only, writable
	s, err := Open(context.Background(), u.String(), Options{PoolSize: 4, ApplicationName: "multihost"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	var port int
	if err := s.pool.QueryRow(ctx, "SELECT inet_server_port()").Scan(&port); err != nil {
		t.Fatal(err)
	}
	if want := writable[strings.LastIndex(writable, ":")+1:]; strconv.Itoa(port) != want {
		t.Fatalf("the pool connected to port %d, want the writable server's %s", port, want)
	}
	// The LISTEN connection is opened from the same configuration: it must be on the
	// writable server too (seen there in pg_stat_activity).
	lctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Listen(lctx, func([]ports.Hint) {}) }()
	defer func() { stop(); <-done }()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'multihost hints'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the LISTEN connection is not on the writable server")
		}
	}
}
