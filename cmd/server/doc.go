// Command queen-server is the queen-go broker: Queen MQ's HTTP API on PostgreSQL.
//
// Configuration comes from environment variables; `queen-server --help` lists them all,
// with defaults and meanings, and an invalid value stops start-up (exit 2) with a
// message naming the variable. With no database configured it starts an embedded
// PostgreSQL from the machine's binaries in QUEEN_DATA_DIR and stops it on exit.
//
// SIGINT/SIGTERM stop it gracefully: the listener closes, in-flight pushes commit and are
// answered (within QUEEN_SHUTDOWN_TIMEOUT_MS), fusion drains, the pool closes, the
// embedded PostgreSQL stops, and the process exits 0. A start-up failure exits 1.
package main
