package main

import (
	"fmt"
	"os"
	"time"

	"github.com/queen-go/queen/bench/load"
)

// cpuReading is one reading of the cluster's and this process's CPU time; ok* say which
// could be read.
type cpuReading struct {
	pg, self     time.Duration
	okPG, okSelf bool
}

// readCPU reads the cluster's CPU (load.ClusterCPU of -pg-pid, when set) and this
// process's (load.ProcessCPU): the readings queen-bench's -pg-pid takes, so both sides'
// figures mean the same. An unreadable cluster is said on the log.
func (p *peer) readCPU() cpuReading {
	var r cpuReading
	var err error
	if p.cfg.PGPid > 0 {
		if r.pg, err = load.ClusterCPU(p.cfg.PGPid); err == nil {
			r.okPG = true
		} else {
			fmt.Fprintf(p.cfg.Log, "cpu: PostgreSQL (pid %d): %v\n", p.cfg.PGPid, err)
		}
	}
	if r.self, err = load.ProcessCPU(os.Getpid()); err == nil {
		r.okSelf = true
	}
	return r
}

// cpuPerMessage adds to extra, for each process read at both ends, its CPU seconds
// (pg_cpu_s, bench_cpu_s) and µs of CPU per message (pg_us_per_msg, bench_us_per_msg),
// under queen-bench's names. Nothing when no message was counted.
func cpuPerMessage(a, b cpuReading, msgs int64, extra map[string]any) {
	if msgs <= 0 {
		return
	}
	add := func(name string, ok bool, d time.Duration) {
		if ok {
			extra[name+"_cpu_s"] = d.Seconds()
			extra[name+"_us_per_msg"] = float64(d.Microseconds()) / float64(msgs)
		}
	}
	add("pg", a.okPG && b.okPG, b.pg-a.pg)
	add("bench", a.okSelf && b.okSelf, b.self-a.self)
}
