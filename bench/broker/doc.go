// Package broker holds the benchmarks of the whole broker (test files only): push
// fusion over HTTP against plain PostgreSQL inserts, pop+ack throughput, push-to-pop
// latency, pushes right after a restart, one ack/batch by its size, and the spool's
// replay. Each starts queen-go through its public constructor (queen.InitializeApp, then
// App.Start) on a throwaway database (adapters/pglocal/pgtest) and drives it over HTTP
// with the load tool's raw client (bench/load). Unlike the black-box tests in e2e/, a
// benchmark may also talk to PostgreSQL (pgx): for the raw-insert baseline, a
// checkpoint between phases, and counting what is left unconsumed.
//
// Run them one at a time with -benchtime 1x (make bench, bench-consume, bench-ack,
// bench-restart); QUEEN_BENCH_SECONDS sets each measured phase (default 10 s).
// docs/benchmarks.md explains the figures.
package broker
