// Package report renders queen-bench runs as one self-contained HTML page: the
// configuration of a run, its throughput and latency over time, its errors, the CPU
// each process spent per message and the verifier's verdict, readable in any browser
// without a network, and small enough to attach to an issue.
//
// # Input
//
// A Page holds one Run (queen-bench <mode> -report FILE, after the run) or several
// (queen-bench report -file RESULTS -report FILE, from saved JSON summary lines). A Run
// carries the mode's load.Summary: its figures are those of the JSON line every mode
// prints, and its Series (the per-second time series the Meter records) and Latency
// (the whole run's latency histogram) exist only in the process that ran the load:
// saved results lack them, and the page says so where the charts would be.
//
// # The page
//
// Top to bottom, for each run (a <details> section per run when there are several):
//
//   - the verdict banner (PASS or FAIL), when the mode has a verifier;
//   - Configuration: mode, target URL, command line (passwords in URLs redacted), start
//     time, measured and wall duration, the machine (cores, GOMAXPROCS, Go version,
//     OS/arch, host) and every flag of the mode, the ones given on the command line
//     first and marked;
//   - Throughput: each counter's total and rate, then a line chart of each non-error
//     counter per second over the run (a point per progress interval);
//   - Latency: p50, p90, p99 and max of the whole run, what they measure, a chart of the
//     same percentiles per interval on a logarithmic axis, and the latency histogram;
//   - Errors: each failure counter's total, their rate over time when there were any,
//     and the run's error;
//   - Gauges: one small chart per gauge over time (backlog, the soak's RSS, ...);
//   - CPU per message: PostgreSQL's, the broker's and the tool's own µs per message and
//     CPU seconds (pg_us_per_msg, broker_us_per_msg, bench_us_per_msg), as a table and
//     bars, or how to measure them;
//   - Verifier: its verdict line, the counts (lost, duplicates, order violations, in
//     flight, ...) with the fatal ones marked, and its per-stage or per-group table (the
//     soak's leak criteria too);
//   - Other figures: the rest of the summary's "extra" map;
//   - the JSON summary line itself, as the mode printed it.
//
// Pages from saved results begin with where they came from and may end with page-level
// tables (the hot-list side-by-side table of queen-bench report).
//
// # Safety and self-containment
//
// The page is one html/template execution: every string (flag values, counter names,
// error messages, a hostile queue name) is escaped by the template, and the charts are
// inline SVG drawn by the same template from coordinates computed here, so no markup is
// built by concatenation. Styles are inline; there are no scripts, fonts or links to
// fetch. The output is also well-formed XML (void elements closed, attributes quoted),
// which is what the tests parse.
package report
