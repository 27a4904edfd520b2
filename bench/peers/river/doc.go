// Command peer-river measures River's push-to-consume latency the way `queen-bench
// latency` measures queen-go's, so scripts/bench-latency.sh can run the two side by side
// on one PostgreSQL with the same CPU pinning (make bench-latency).
//
// # What maps to what
//
//   - Push is River's client.Insert of one job: its own transaction (the INSERT into
//     river_job and, at most once per FetchCooldown per queue, the NOTIFY that wakes the
//     queue's fetcher), as queen-bench pushes one message per HTTP request.
//   - Pop is the start of the job's Work: River's producer fetched it (woken by that
//     NOTIFY, or by its FetchPollInterval poll) and an executor began to run it, as
//     queen-bench's long-poll consumer receiving the message. The worker does nothing
//     else; River marks the job completed after Work returns (its batched completer),
//     as queen-bench acks after it has measured.
//   - Producers: -producers goroutines take the scheduled instants of load.Pace and do one
//     Insert each per instant, as queen-bench's producer connections; the job's args
//     carry the instant (ns), and the latency is the time from it to the work start, so a
//     slow insert shows as latency rather than lowering the offered rate (no coordinated
//     omission). Jobs scheduled in the first -warmup are worked but not measured.
//   - Consumers: the default queue's MaxWorkers (-workers), as queen-bench's -consumers.
//
// The output is queen-bench's: a load.Meter's progress line every second (counters
// inserted, worked, errors; the backlog), then load.Summary's human summary and its JSON
// line, last on stdout: p50_ms ... p999_ms, p100_ms over the measured jobs, rates, and in
// extra the insert round trip (insert_p50_ms, insert_p99_ms, insert_p999_ms), the send
// lag of the pacer's instants (send_lag_p50_ms, send_lag_p99_ms), the inserted jobs
// that were measured and the latencies recorded (measured, latency_count: equal when
// every measured job was worked), the River settings, and the CPU per worked
// job: of the PostgreSQL cluster (-pg-pid: pg_cpu_s, pg_us_per_msg) and of this process
// (bench_cpu_s, bench_us_per_msg), which holds the producers and River itself (River is
// a library: its fetcher, executors, completer and maintenance run here, where queen-go's
// run in the broker). The CPU window is the run's: warm-up and drain included, client
// start and stop excluded.
//
// # River's settings
//
// River's defaults, except the flags: the default queue's MaxWorkers (-workers),
// FetchCooldown (-fetch-cooldown, River's default 100 ms) and FetchPollInterval
// (-fetch-poll, default 1 s), and the pgx pool's size (-max-conns: each producer holds a
// connection for its insert, River a few of its own; pgxpool's default of
// max(4, cores) would queue the producers). The logger writes warnings to stderr (River's
// default writes to stdout, where the summary line must come last). Completed jobs are
// kept 24 hours (CompletedJobRetentionPeriod's default), so they stay in river_job during
// a run, as consumed messages stay in queen-go's log until its retention runs; the
// leader's maintenance (job cleaner, rescuer, scheduler, ...) runs as in any deployment,
// and its CPU is counted.
//
// # Each run
//
// With -migrate (default) rivermigrate brings the database's River schema up to date
// (idempotent). Then river_job is truncated, so every run starts with an empty table
// whatever earlier runs left in the database (scripts/bench-latency.sh reuses one
// database for every round). The client starts, the paced phase runs for -duration,
// then the run waits up to 5 s for the worked count to reach the inserted one (as
// queen-bench latency drains), the summary is taken, and the client stops gracefully
// (bounded: after 10 s it cancels the jobs still running).
package main
