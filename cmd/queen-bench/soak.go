package main

import (
	"context"
	"fmt"
	"time"

	"github.com/queen-go/queen/bench/load"
	"github.com/queen-go/queen/bench/report"
)

// soakMode is the soak of docs/reliability.md (load profile L3): the verified fault load
// (bench/load.StartFaultLoad, the L1 mix) over 1,000 partitions at 2,000 msg/s for 30
// minutes on a queue with completed-message retention, a CSV row of the broker's
// resources every 10 s, then the final drain, the verifier and the leak criteria over
// the samples after the warm-up. Exit 1 when a criterion fails.
func soakMode(ctx context.Context, m *modeFlags) func() (int, error) {
	var c load.SoakConfig
	var queue string
	var rate, partitions, producers, consumers, retention, pool int
	var slope, deadLive float64
	m.load(30 * time.Minute)
	m.fs.Lookup("duration").Usage = "length of the loaded phase, the warm-up included"
	m.fs.StringVar(&queue, "queue", "", "queue (default: soak-<unix time>, a new one)")
	m.fs.IntVar(&rate, "rate", 2000, "target accepted messages per second")
	m.fs.IntVar(&partitions, "partitions", 1000, "partitions, each owned by one producer")
	m.fs.IntVar(&producers, "producers", 4, "producers (L1: 4), each pushing one request at a time")
	m.fs.IntVar(&consumers, "consumers", 2, "consumers per group (L1: 2 groups of 2)")
	m.fs.IntVar(&retention, "completed-retention", 120, "queue's completedRetentionSeconds, with retentionEnabled (0: retention off)")
	m.fs.DurationVar(&c.Warmup, "warmup", 5*time.Minute, "samples before this are written but not checked; the one at its end is the reference of RSS, goroutines and FDs")
	m.fs.DurationVar(&c.Interval, "interval", 10*time.Second, "time between two samples (CSV rows)")
	m.fs.StringVar(&c.CSV, "csv", "soak.csv", "CSV file of the samples (overwritten)")
	m.fs.IntVar(&c.BrokerPid, "broker-pid", 0, "pid of the broker on this machine: RSS, open FDs and threads from /proc (else from its process_* and go_threads metrics)")
	m.fs.StringVar(&c.PGURL, "pg-url", "", "the broker's database URL: its connections (pg_stat_activity) and the hot tables' dead tuples (pg_stat_user_tables); empty: not measured")
	m.fs.IntVar(&pool, "pool-size", 160, "the broker's DB_POOL_SIZE: its connections may be this many plus its hint listener")
	m.fs.DurationVar(&c.DrainLimit, "drain-limit", 5*time.Minute, "longest final drain")
	m.fs.Float64Var(&deadLive, "dead-live", 0.2, "n_dead_tup / n_live_tup of each hot table at the end must stay below this")
	m.fs.Float64Var(&slope, "backlog-slope", 0.01, "most backlog growth allowed, as a fraction of -rate (least-squares slope after the warm-up)")
	return func() (int, error) {
		if queue == "" {
			queue = fmt.Sprintf("soak-%d", time.Now().Unix())
		}
		c.Common = m.common
		c.Load = load.L1(queue, rate)
		c.Load.Partitions, c.Load.Producers, c.Load.Consumers = partitions, producers, consumers
		if retention > 0 {
			c.Load.QueueOptions = map[string]any{"retentionEnabled": true, "completedRetentionSeconds": retention}
		}
		c.Limits = load.DefaultSoakLimits(float64(rate), pool)
		c.Limits.BacklogSlope, c.Limits.DeadLive = slope, deadLive
		res, err := load.RunSoak(ctx, c)
		if err != nil {
			return 2, err
		}
		out := m.common.Out
		res.Summary.Print(out)
		m.out.summary = &res.Summary
		m.out.verdict = report.FromFault(res.Report, res.Criteria, res.Verdict, res.Pass)
		fmt.Fprint(out, res.Report.String())
		fmt.Fprint(out, load.SoakTable(res.Criteria))
		fmt.Fprintln(out, res.Verdict)
		if !res.Pass {
			return 1, nil
		}
		return 0, nil
	}
}
