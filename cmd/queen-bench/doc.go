// Command queen-bench measures a Queen-compatible broker through its public HTTP API
// and proves its ordering promise.
//
//	queen-bench push     -url URL -conns 64 -batch 1 -partitions 1000 -duration 10s
//	queen-bench consume  -url URL -consumers 8 -batch 100 -partitions 1 -duration 10s
//	queen-bench latency  -url URL -rate 500 -partitions 100 -consumers 8 -duration 10s
//	queen-bench pipeline -url URL -entities 100 -rate 500 -duration 60s -dir ./run
//	queen-bench verify   -dir ./run
//	queen-bench prefill  -url URL -partitions 10000 -messages 20000 -batch 1000
//	queen-bench idle     -url URL -queue Q -consumers 50 -duration 60s -pg-pid PID -pg-url DB
//	queen-bench rss      -url URL -partitions 100000 -sweep-wait 130s
//	queen-bench report   -file results.jsonl [-report results.html]
//	queen-bench floor    -addr 127.0.0.1:6632 -cycle 3ms
//	queen-bench soak     -url URL -rate 2000 -partitions 1000 -duration 30m -warmup 5m -csv soak.csv -broker-pid PID -pg-url DB
//
// Every load mode prints a progress line each second, then a summary and one JSON line
// of figures. pipeline and verify print the verifier's table and verdict and exit 1 on
// FAIL; soak prints a line per sample (CSV row), then its summary, the verifier's table,
// the leak criteria's table and a verdict line, and exits 1 when a criterion fails; report prints the hot-list on/off table of scripts/bench-hotlist.sh; floor
// serves the HTTP floor (bench/floor) until interrupted; any other error exits 2.
// See docs/benchmarks.md.
//
// # Live status line
//
// Every load mode takes -progress auto|on|off (default auto). With auto, when stderr is
// a terminal, the run keeps one status line on stderr, redrawn in place with a carriage
// return once a second: elapsed time, the mode's messages so far (its first counter:
// msgs, pushed, events, accepted, ...), their rate over the last second, and the errors
// counted; it is erased when the run ends. Piped, redirected or in CI, stderr is no
// terminal and nothing is drawn; on forces the line, off suppresses it. The progress
// lines, the summary and the JSON line on stdout are the same either way (when stdout is
// the same terminal they scroll above the live line). The detection is the character-
// device bit of stderr's mode, so 2>/dev/null counts as a terminal: the line is lost there.
//
// # HTML report
//
// Every load mode, and verify, take -report FILE: after the run (whatever its outcome),
// a self-contained HTML page (inline CSS and SVG, no script, nothing fetched) is written
// to FILE, and "report written to FILE" to stderr. It shows the configuration (mode,
// target URL, command line with URL passwords redacted, start time, durations, machine,
// every flag), throughput per second over the run, latency percentiles (table, per-second
// chart, whole-run histogram), errors, gauges over time, the CPU per message of
// PostgreSQL, the broker and the tool where measured, the verifier's verdict and counts
// (pipeline, verify, soak with its leak criteria), the other figures and the JSON line.
// The time series behind the charts is recorded by the progress goroutine from the
// counters it already reads each second (one point per second, at most 3,600 points:
// a longer run merges neighbours), so the load's hot path does no extra work.
//
// report -file F -report FILE renders saved results instead: the result lines of
// scripts/bench-hotlist.sh (with the side-by-side table, also printed as before), or the
// saved stdout of any run (its {"mode":...} JSON lines, and a pipeline's verifier line;
// other lines are skipped). Saved lines hold no time series, so those pages have no
// charts over time and say so.
package main
