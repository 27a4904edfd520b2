// Package pgtest gives tests throwaway PostgreSQL databases.
//
// # Job
//
// NewDatabase returns the URL of a fresh, empty database (created from template0) that only the
// calling test uses, and drops it WITH (FORCE) at the test's cleanup, so tests can run in parallel
// without seeing each other's data; NewDatabaseWith does the same with per-database defaults
// (ALTER DATABASE ... SET), for a test that needs a database configured unlike the server (as
// legacy databases are: standard_conforming_strings = off). NewCluster starts a second cluster of
// the test's own (a multi-host connection string needs two servers); NewStandby starts a streaming
// standby of a cluster (pglocal.StartStandby), for the reads from replicas. Server returns the admin URL
// of the server in use, for benchmarks that compare with raw inserts. StoredMessages decodes what a broker stored for a
// queue, for the rare black-box test whose promise is about the stored bytes themselves
// (encryption at rest). Main wraps m.Run and stops what this package started:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// # Which server
//
//   - QUEEN_TEST_PG_URL set: that server is used, and pgtest only creates and drops its own
//     databases on it (named qt_<pid>_<n>); it never changes anything else there.
//   - Otherwise: one throwaway cluster per test process, started lazily with pglocal on first use
//     in its own temporary directory, stopped and removed by Main after the run. It keeps the
//     default durability (fsync on), because benchmarks run on it, and allows 300 connections.
//     If it cannot start (for instance, no PostgreSQL binaries are installed) every test that asks
//     for a database fails with the reason: tests are never skipped silently.
//
// # Invariants
//
//   - A database is used by exactly one test; its name is unique per process and the creation is
//     retried under a new name if a leftover of an earlier run already uses it.
//   - pgtest never touches a server it did not start other than through QUEEN_TEST_PG_URL.
//   - Without Main the throwaway cluster is still shut down when the test process exits (on Linux,
//     through pglocal's parent-death signal), but its temporary directory is left behind.
//
// # Layout
//
// The throwaway cluster lives in $TMPDIR/queen-pgtest-<random>/ (mode 0711 so the postgres user
// can traverse it when tests run as root), with the cluster in data/ as described in pglocal,
// including the server log data/postgres.log, which is worth reading when a test fails oddly.
package pgtest
