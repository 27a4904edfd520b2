// Package load drives a Queen-compatible broker through its public HTTP API for
// queen-bench: push, consume and latency load, and the ordered pipeline (docs/benchmarks.md, "The ordered pipeline") whose
// logs bench/verify checks.
//
// It speaks only HTTP, so it measures any broker by URL, and it uses its own minimal
// keep-alive HTTP/1.1 client (Client): on a small machine the load generator shares the
// CPU with the system under test, and net/http's client costs more per request than a
// broker's push path. The client understands Content-Length and chunked answers and
// bodiless 204s.
//
// Invariants of every mode:
//   - Errors are counted and shown, never hidden; every retry the tool makes is counted
//     (the pipeline retries a failed push until it is stored, so a producer never skips
//     a sequence number: a skipped one would be a gap the broker did not cause).
//   - At the end of a run each worker finishes the request in progress instead of
//     dropping it: a pop the client drops still holds its lease on the broker.
//   - Latency is measured from the scheduled instant (Pace), not from the send, so a
//     slow producer shows up as latency instead of lowering the offered rate.
//
// Progress, time series and the live line (stats.go, series.go, live.go): a Meter's
// goroutine reads the counters once a second for the progress line, and records the same
// interval in a Series (counts per counter, gauges, the interval's latency percentiles)
// that Summary.Series hands to the HTML report (bench/report) and never to the JSON line.
// The workers only ever touch the Meter's atomics, as before. The series is bounded
// (maxPoints; a longer run merges neighbours). When Common.Out is a LiveWriter, the Meter
// (and the soak) also keep a live status line on the terminal, erased at the end.
//
// The fault load (faultload.go, StartFaultLoad; L1 is the shape of docs/reliability.md): producers
// own their partitions (payload {"p", "seq"}, transaction id "<run>:<partition>:<seq>")
// and push a partition's next sequence only once the previous ones are accepted, retrying
// with the same ids; every answer goes to a bench/verify.Ledger. Consumer groups pop in
// long polls, log every delivery in a bench/verify.GroupLog before they ack, always fail
// poison messages and fail one item of a share of batches once. Drain is the mandatory
// final drain; Verify applies bench/verify.CheckLedger. The fault scenarios (e2e/faults)
// and queen-bench soak run it.
//
// The soak (soak.go, soak_run.go; RunSoak, the soak of docs/reliability.md under load
// profile L3) runs the fault load with completed-message retention on the queue
// (QueueOptions) for 30 minutes and appends a CSV row every 10 s: accepted and delivered
// messages, push p50/p99 and pop-to-ack p99 of the interval (FaultRun's PushSamplesFrom
// and AckSamplesFrom), the broker's RSS, goroutines, open FDs and threads (/proc and
// /metrics/prometheus), its PostgreSQL connections, the backlog (Progress), the hot
// tables' dead and live tuples and the spool's pending records. After the final drain and
// the verifier, CheckSoak, a pure function of the samples, applies the leak criteria to
// the samples after the warm-up (DefaultSoakLimits says how the open ones are read: FDs
// "flat", the backlog's trend as a least-squares slope below 1 % of the rate).
//
// The pipeline (pipeline.go, pipeline_run.go): two flows, each an ingress queue, a
// first-stage group that works and re-emits one derived message per event (a batch's
// derived messages in one push, each entity's contiguous and in order, before the ack),
// and a derived queue with Fanout groups. Entity e owns partition "e<e>" in every queue
// and is pushed by producer e mod Producers only, one request at a time, so its
// sequence order is its commit order. Every consumer logs "entity sequence" per received
// message into its stage's log; produced-<flow>.meta holds each entity's last produced
// sequence; the stages file lists the stages and their ground truth, so `queen-bench
// verify -dir` can check the run again later.
package load
