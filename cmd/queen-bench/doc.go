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
//	queen-bench report   -file results.jsonl
//	queen-bench floor    -addr 127.0.0.1:6632 -cycle 3ms
//	queen-bench soak     -url URL -rate 2000 -partitions 1000 -duration 30m -warmup 5m -csv soak.csv -broker-pid PID -pg-url DB
//
// Every load mode prints a progress line each second, then a summary and one JSON line
// of figures. pipeline and verify print the verifier's table and verdict and exit 1 on
// FAIL; soak prints a line per sample (CSV row), then its summary, the verifier's table,
// the leak criteria's table and a verdict line, and exits 1 when a criterion fails; report prints the hot-list on/off table of scripts/bench-hotlist.sh; floor
// serves issue 18's HTTP floor (bench/floor) until interrupted; any other error exits 2.
// See docs/benchmarks.md.
package main
