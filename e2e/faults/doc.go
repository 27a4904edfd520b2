// Package faults proves the broker's promises while things break (docs/reliability.md): nothing
// answered queued, buffered or duplicate is ever lost, each partition stays in order
// (also across a PostgreSQL outage and a spool replay), a duplicate is stored once.
//
// # The harness
//
//   - PostgreSQL: a cluster of the package's own (adapters/pglocal on a fixed port, fsync
//     and synchronous commit on), never QUEEN_TEST_PG_URL's server and never shared, since
//     the faults crash it (SIGQUIT: `pg_ctl stop -m immediate`), restart it on the same
//     port, and freeze it (SIGSTOP/SIGCONT of its postmaster and that postmaster's
//     children only). Each scenario gets a database of its own.
//   - The broker: cmd/server built with -race by TestMain and run as a process, so
//     SIGKILL and SIGTERM are real; restarts keep its port, database and spool directory.
//   - The load (bench/load.StartFaultLoad with L1): docs/reliability.md's L1 shape at a
//     rate CI's two cores allow.
//     Producers own their partitions, so a partition's sequence is well defined; the
//     payload is {"p", "seq"} and the transaction id "<run>:<partition>:<seq>"; a push
//     not accepted item for item is retried with the same ids before the partition's next
//     sequence is pushed. Every answer goes to the ledger (bench/verify.Ledger). Two
//     consumer groups of two consumers each pop in long polls and log every delivery
//     (bench/verify.GroupLog) before acking; poison messages always fail their ack and
//     1 % of batches fail one item once.
//   - The verdict: the mandatory final drain (producers stopped, spool empty, two empty
//     long polls in a row per consumer), then bench/verify.CheckLedger (no accepted item
//     lost, no stored duplicate, strict order of first deliveries, no gap, nothing in
//     flight) and the database invariants (invariants_test.go: contiguous offsets, one
//     copy per transaction id, no double dead letter, no lease held, every cursor at its
//     partition's end), and the spool's backlog and quarantine empty.
//
// # The scenarios
//
// scenarios_test.go holds the runner (broker, load, fault, drain, verdict) with the
// control, F1 and F3; targeted_test.go the faults of make test that need no load or
// check more than the verifier (F9, F11, F12, F14, F16, F17, F22); l2_test.go L2, whose
// copiers are this test binary re-executed (QUEEN_FAULTS_COPIER), so that kill -9 is
// real; matrix_test.go the rest of docs/reliability.md's matrix, which only make faults
// runs; failover_test.go the failovers of a Patroni cluster (ha_test.go: scripts/ha.sh's
// etcd and three PostgreSQL nodes, each behind an internal/netproxy proxy for the brokers
// and one on its Patroni's way to etcd, so that a test can partition a node), whose
// planned switchover runs in make test; they need patroni and etcd (QUEEN_SKIP_HA=1
// skips them). Their second table: the longest time without a queued answer, pushes
// spooled, redeliveries.
// docs/reliability.md holds the table of a whole run and what the runs found.
//
// TestMain prints the table of every scenario that ran (fault, acknowledged, delivered,
// lost, order violations, stored duplicates, time to recover) and writes it to the file
// QUEEN_FAULTS_TABLE names. Without QUEEN_FAULTS_FULL only the fast faults run (make
// test, CI); `make faults` runs the whole matrix.
//
// # The import rule
//
// Like e2e/, the scenarios speak to the broker over HTTP only (bench/load's client); in
// addition they may use pgx to read the database for the invariants,
// adapters/pglocal to run the cluster they break, and internal/netproxy to cut a
// Patroni node off. The root package's dependency test
// enforces it.
package faults
