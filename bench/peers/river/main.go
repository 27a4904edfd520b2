package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// runMain parses the flags, runs and prints the summary; it returns the exit status (2:
// bad flags, 1: the run failed; a summary taken before the failure is printed all the same).
func runMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("peer-river", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var maxConns int
	fs.StringVar(&c.DSN, "dsn", "", "PostgreSQL URL of a database this run owns (River's tables are created there, and river_job emptied)")
	fs.Float64Var(&c.Rate, "rate", 500, "jobs per second, one per Insert")
	fs.IntVar(&c.Producers, "producers", 32, "goroutines the pacer feeds, each doing one Insert per scheduled instant")
	fs.IntVar(&c.Workers, "workers", 16, "MaxWorkers of the default queue")
	fs.DurationVar(&c.FetchCooldown, "fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown: the least time between two fetches (River's default: 100ms)")
	fs.DurationVar(&c.FetchPoll, "fetch-poll", 50*time.Millisecond, "River's FetchPollInterval: the fetch without a notification (River's default: 1s)")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "paced phase")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "jobs scheduled in the first warmup are worked but not measured")
	fs.IntVar(&c.PGPid, "pg-pid", 0, "pid of the postmaster of the database's PostgreSQL on this machine: the cluster's CPU per worked job (pg_us_per_msg)")
	fs.BoolVar(&c.Migrate, "migrate", true, "run River's migrations up first (idempotent)")
	fs.IntVar(&maxConns, "max-conns", 0, "the pgx pool's size (0: producers + 8)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case c.DSN == "":
		fmt.Fprintln(stderr, "peer-river: -dsn is required")
		return 2
	case c.Rate <= 0 || c.Producers < 1 || c.Workers < 1 || c.Duration <= 0 || maxConns < 0:
		fmt.Fprintln(stderr, "peer-river: -rate, -producers, -workers and -duration must be positive")
		return 2
	}
	c.MaxConns = int32(maxConns)
	c.Out, c.Log = stdout, stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := newPeer(c).run(ctx)
	if s.Mode != "" {
		s.Print(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "peer-river: %v\n", err)
		return 1
	}
	return 0
}
