// Package pglocal runs a private PostgreSQL server from the PostgreSQL binaries installed on the
// machine (initdb and postgres). The broker uses it as its embedded default when no database is
// configured, and tests use it (through the pgtest subpackage) to get a throwaway cluster.
//
// # Job
//
// Start finds the binaries (Options.BinDir, else the directory of initdb on PATH, else the newest
// /usr/lib/postgresql/*/bin, where Debian and Ubuntu put them), initialises the data directory with
// initdb when it holds no cluster yet, starts postgres as a child process listening on 127.0.0.1 only,
// and returns once the server accepts connections. Stop shuts it down (fast shutdown) and waits for it.
// StartStandby does the same for a streaming standby of a running server: pg_basebackup -R copies
// the primary into the data directory (as the server user), then the copy starts as Start starts
// a server, on its own port.
//
// # Invariants
//
//   - pglocal never touches a server it did not start: it only signals the postmaster it started
//     itself, or one recorded in postmaster.pid of the very data directory it was given (see below).
//     It never assumes port 5432 and never talks to a system service.
//   - The server listens on 127.0.0.1 only (a free port is picked when Options.Port is 0); the Unix
//     socket is disabled (empty unix_socket_directories), so nothing is written to /var/run/postgresql
//     or /tmp and clients connect over TCP with trust authentication as the user "postgres".
//   - PostgreSQL refuses to run as root. When the calling process is root, initdb and postgres run as
//     the OS user "postgres": the data directory and the log file are owned by it, and any parent
//     directory of the data directory that it could not traverse gets the other-execute bit (o+x)
//     added, which is logged.
//   - The server runs in its own process group, so a Ctrl-C on the terminal does not reach it: the
//     owner stops it in order with Stop (typically from its own signal handler). Its standard input
//     is /dev/null. On Linux it also receives SIGINT (fast shutdown) if the process that started it
//     dies without calling Stop, so a crash or a killed test binary does not leave it running.
//
// # Leftover servers
//
// When postmaster.pid exists at Start (a previous run was killed before it could stop its server):
//
//   - if the pid in it is still a running postgres whose working directory is this data directory,
//     that server is a leftover of ours: Start sends it SIGINT and waits for it to exit before
//     starting a fresh one;
//   - if the pid is not running, postgres itself recognises the lock file as stale and replaces it;
//   - if the pid was reused by an unrelated process (which would make postgres refuse to start) and
//     no postgres process is running in this data directory, Start removes the stale lock file.
//
// The identity checks read /proc, so the last two refinements only apply on Linux; elsewhere the
// decision is left to postgres.
//
// # Data directory layout
//
// The data directory given to Start is an ordinary PostgreSQL cluster directory (mode 0700, owned by
// the server user) created by
//
//	initdb -D <dataDir> -U postgres --auth=trust -E UTF8 --locale=C
//
// and holds, besides the usual PG_VERSION, base/, global/, pg_wal/, postgresql.conf, ...:
//
//	postgres.log    server log (stdout and stderr of initdb and postgres), appended across runs
//	postmaster.pid  lock file written by the running postmaster, removed at clean shutdown
//
// Server settings chosen by pglocal (port, listen address, socket directory, max_connections) and
// Options.Settings are passed on the command line with -c, so postgresql.conf is left as initdb
// wrote it and a reused directory picks up the settings of the current Start.
package pglocal
