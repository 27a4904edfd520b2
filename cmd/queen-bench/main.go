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
  pipeline  the ordered pipeline of seed 001, verified at the end
  verify    verify the logs of an earlier pipeline run (-dir)

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
	fs := flag.NewFlagSet("queen-bench "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common load.Common
	common.Out = stdout
	var ready time.Duration
	addCommon := func(d time.Duration) {
		fs.StringVar(&common.URL, "url", "http://localhost:6632", "broker base URL")
		fs.DurationVar(&common.Duration, "duration", d, "length of the measured phase")
		fs.DurationVar(&ready, "ready-timeout", 0, "first wait up to this long for GET /health to answer 200")
	}
	var runMode func() (int, error)
	switch mode {
	case "push":
		c := load.PushConfig{}
		addCommon(10 * time.Second)
		fs.StringVar(&c.Queue, "queue", "bench-push", "queue")
		fs.IntVar(&c.Conns, "conns", 64, "concurrent connections")
		fs.IntVar(&c.Batch, "batch", 1, "messages per request (one partition per request)")
		fs.IntVar(&c.Partitions, "partitions", 1000, "partitions, chosen at random per request")
		fs.IntVar(&c.PayloadBytes, "payload", 110, "payload size, bytes")
		fs.Int64Var(&c.Count, "count", 0, "stop after this many messages (0: -duration)")
		runMode = func() (int, error) {
			c.Common = common
			s, err := load.RunPush(ctx, c)
			s.Print(stdout)
			return 0, err
		}
	case "consume":
		c := load.ConsumeConfig{}
		addCommon(10 * time.Second)
		fs.StringVar(&c.Queue, "queue", "bench-push", "queue")
		fs.IntVar(&c.Consumers, "consumers", 8, "concurrent consumers")
		fs.StringVar(&c.Group, "group", "", "consumer group (empty: queue mode)")
		fs.IntVar(&c.Batch, "batch", 100, "pop batch")
		fs.IntVar(&c.Partitions, "partitions", 1, "partitions per wildcard pop")
		fs.IntVar(&c.Pinned, "pinned", 0, "> 0: consumer i pops only partition p(i mod pinned)")
		fs.BoolVar(&c.Wait, "wait", true, "long-poll")
		fs.IntVar(&c.TimeoutMS, "timeout", 1000, "long-poll timeout, ms")
		fs.BoolVar(&c.AutoAck, "autoack", false, "autoAck pops instead of explicit acks")
		fs.Float64Var(&c.FailRate, "fail-rate", 0, "fraction of batches acked with one message failed")
		fs.Int64Var(&c.Count, "count", 0, "stop after this many messages (0: -duration)")
		runMode = func() (int, error) {
			c.Common = common
			s, err := load.RunConsume(ctx, c)
			s.Print(stdout)
			return 0, err
		}
	case "latency":
		c := load.LatencyConfig{}
		addCommon(10 * time.Second)
		fs.StringVar(&c.Queue, "queue", "bench-latency", "queue")
		fs.Float64Var(&c.Rate, "rate", 500, "messages per second, one per request")
		fs.IntVar(&c.Producers, "producers", 32, "producer connections (each pushes one message at a time: enough of them that a slow push does not delay the next scheduled ones)")
		fs.IntVar(&c.Partitions, "partitions", 100, "partitions")
		fs.IntVar(&c.Consumers, "consumers", 8, "long-poll consumers")
		fs.IntVar(&c.Batch, "batch", 100, "pop batch")
		fs.IntVar(&c.PopParts, "pop-partitions", 10, "partitions per pop")
		fs.IntVar(&c.TimeoutMS, "timeout", 5000, "long-poll timeout, ms (parked pops wake on commits; this only bounds an idle wait, and the run's end)")
		runMode = func() (int, error) {
			c.Common = common
			s, err := load.RunLatency(ctx, c)
			s.Print(stdout)
			return 0, err
		}
	case "pipeline":
		c := load.PipelineConfig{}
		addCommon(60 * time.Second)
		fs.StringVar(&c.Dir, "dir", "", "run directory for stage logs and produced.meta (default: a new temporary directory)")
		fs.StringVar(&c.Prefix, "prefix", "", "queue name prefix (default: cm-<unix time>)")
		fs.IntVar(&c.Entities, "entities", 100, "entities per flow (one partition each, in every queue)")
		fs.Float64Var(&c.Rate, "rate", 500, "ingress events per second, both flows together")
		fs.DurationVar(&c.Ramp, "ramp", 5*time.Second, "linear ramp before the measured phase")
		fs.IntVar(&c.Fanout, "fanout", 5, "consumer groups on each derived queue")
		fs.DurationVar(&c.WorkMin, "work-min", 10*time.Millisecond, "first-stage simulated work, lower bound")
		fs.DurationVar(&c.WorkMax, "work-max", 30*time.Millisecond, "first-stage simulated work, upper bound")
		fs.IntVar(&c.PopBatch, "pop-batch", 100, "pop batch")
		fs.IntVar(&c.PopParts, "pop-partitions", 10, "partitions per wildcard pop")
		fs.IntVar(&c.Consumers, "consumers", 2, "consumers per (queue, group)")
		fs.IntVar(&c.Producers, "producers", 16, "ingress connections per flow")
		fs.DurationVar(&c.Drain, "drain", 5*time.Second, "consumption after the cutoff, before verifying")
		fs.IntVar(&c.DedupWindow, "dedup-window", 300, "queues' dedupWindowSeconds")
		fs.IntVar(&c.CompletedRetention, "completed-retention", 300, "queues' completedRetentionSeconds")
		fs.IntVar(&c.LeaseTime, "lease-time", 60, "queues' leaseTime, seconds")
		runMode = func() (int, error) {
			c.Common = common
			if c.Prefix == "" {
				c.Prefix = fmt.Sprintf("cm-%d", time.Now().Unix())
			}
			if c.Dir == "" {
				d, err := os.MkdirTemp("", "queen-pipeline-")
				if err != nil {
					return 2, err
				}
				c.Dir = d
			}
			fmt.Fprintf(stdout, "pipeline: run directory %s, queues %s-*\n", c.Dir, c.Prefix)
			s, rep, err := load.RunPipeline(ctx, c)
			s.Print(stdout)
			return verdict(stdout, rep, err)
		}
	case "verify":
		var dir string
		var ackErrors int64
		fs.StringVar(&dir, "dir", "", "run directory of an earlier pipeline run")
		fs.Int64Var(&ackErrors, "ack-errors", 0, "ack failures recorded during that run (order violations are then not fatal)")
		runMode = func() (int, error) {
			if dir == "" {
				return 2, errors.New("-dir is required")
			}
			rep, err := verify.Dir(dir, verify.Options{AckErrors: ackErrors})
			return verdict(stdout, rep, err)
		}
	default:
		fmt.Fprintf(stderr, "queen-bench: unknown mode %q\n\n%s", mode, usage)
		return 2
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if ready > 0 {
		if err := load.WaitReady(ctx, common.URL, ready); err != nil {
			fmt.Fprintf(stderr, "queen-bench %s: %v\n", mode, err)
			return 2
		}
	}
	code, err := runMode()
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
