package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/bench/verify"
)

const usage = `usage: queen-bench <mode> [flags]

modes:
  push      push as fast as N connections allow
  consume   pop and acknowledge with N consumers
  latency   paced producer and long-poll consumers: push-to-pop latency
  pipeline  the ordered pipeline (docs/benchmarks.md), verified at the end
  verify    verify the logs of an earlier pipeline run (-dir)
  prefill   fill a queue fast: N messages over P partitions, many partitions per request
  idle      park long polls on an idle queue: SQL calls/s, broker and PostgreSQL CPU
  rss       broker memory with many partitions seeded, then after the hot-list's sweep
  report    the side-by-side table of a bench-hotlist run's result lines (-file); with
            -report FILE, an HTML page of saved results (a run's JSON lines too)
  floor     serve the HTTP floor: the broker's routes with a push that only waits
            for a simulated 3 ms commit cycle (load it with push -broker-pid)
  soak      the soak of docs/reliability.md (L3): the verified fault load for 30 min,
            the broker's RSS, goroutines, FDs, connections, backlog and dead tuples
            sampled into a CSV, then the verifier and the leak criteria; exit 1 on
            FAIL (make soak)

Every load mode also takes:
  -progress auto|on|off  a live status line on stderr, redrawn each second (auto: only
                         when stderr is a terminal, so never in CI logs or pipes)
  -report FILE           after the run, a self-contained HTML report: configuration,
                         throughput and latency over time, errors, CPU per message,
                         the verifier's verdict (verify takes it too)
report -file F -report FILE renders saved JSON summary or result lines as HTML.

queen-bench <mode> -h lists the mode's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	mode, rest := args[0], args[1:]
	setup, ok := modes[mode]
	if !ok {
		fmt.Fprintf(stderr, "queen-bench: unknown mode %q\n\n%s", mode, usage)
		return 2
	}
	m := &modeFlags{fs: flag.NewFlagSet("queen-bench "+mode, flag.ContinueOnError), common: load.Common{Out: stdout}}
	m.fs.SetOutput(stderr)
	runMode := setup(ctx, m)
	if err := m.fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if m.ready > 0 {
		if err := load.WaitReady(ctx, m.common.URL, m.ready); err != nil {
			fmt.Fprintf(stderr, "queen-bench %s: %v\n", mode, err)
			return 2
		}
	}
	if err := m.prof.start(); err != nil {
		fmt.Fprintf(stderr, "queen-bench %s: %v\n", mode, err)
		return 2
	}
	m.live(stdout, stderr)
	started := time.Now()
	code, err := runMode()
	if perr := m.prof.stop(); perr != nil {
		fmt.Fprintf(stderr, "queen-bench %s: %v\n", mode, perr)
		code = max(code, 2)
	}
	if m.html != "" {
		// Written whatever the run's outcome: a failed run's page shows its error.
		if herr := m.writeRunReport(mode, rest, started, err); herr != nil {
			fmt.Fprintf(stderr, "queen-bench %s: %v\n", mode, herr)
			code = max(code, 2)
		} else {
			fmt.Fprintf(stderr, "queen-bench %s: report written to %s\n", mode, m.html)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "queen-bench %s: %v\n", mode, err)
		return max(code, 2)
	}
	return code
}

// verdict prints the verifier's table, verdict line and JSON line; 1 on FAIL.
func verdict(out io.Writer, rep verify.Report, err error) (int, error) {
	if err != nil {
		return 2, err
	}
	fmt.Fprint(out, rep.Table())
	fmt.Fprintln(out, rep.JSON())
	if !rep.Pass {
		return 1, nil
	}
	return 0, nil
}
