package load

import (
	"fmt"
	"io"
	"os"
	"time"
)

// CPUPids names the processes on this machine whose CPU a load mode attributes to the
// messages of its measured phase (the headline of docs/benchmarks.md, "Performance round 2": PostgreSQL CPU per committed
// message). 0: that process is not measured. The load tool's own CPU is always read.
type CPUPids struct {
	PG     int // the postmaster: the whole cluster's CPU (ClusterCPU)
	Broker int // the broker process
}

// cpuReading is one reading of the three processes' CPU time.
type cpuReading struct {
	pg, broker, self       time.Duration
	okPG, okBroker, okSelf bool
}

// readCPU reads the processes of p and this one; an unreadable process is left out
// (and said so on out, once per reading).
func readCPU(p CPUPids, out io.Writer) cpuReading {
	var r cpuReading
	var err error
	if p.PG > 0 {
		if r.pg, err = ClusterCPU(p.PG); err == nil {
			r.okPG = true
		} else if out != nil {
			fmt.Fprintf(out, "cpu: PostgreSQL (pid %d): %v\n", p.PG, err)
		}
	}
	if p.Broker > 0 {
		if r.broker, err = ProcessCPU(p.Broker); err == nil {
			r.okBroker = true
		} else if out != nil {
			fmt.Fprintf(out, "cpu: broker (pid %d): %v\n", p.Broker, err)
		}
	}
	if r.self, err = ProcessCPU(os.Getpid()); err == nil {
		r.okSelf = true
	}
	return r
}

// cpuPerMessage adds to extra the µs of CPU per message of each process read at both
// ends (pg_us_per_msg, broker_us_per_msg, bench_us_per_msg), and the CPU seconds of
// each (pg_cpu_s, ...). Nothing when no message was counted.
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
	add("broker", a.okBroker && b.okBroker, b.broker-a.broker)
	add("bench", a.okSelf && b.okSelf, b.self-a.self)
}

// WithCPU runs a measured phase between two readings of p and adds the CPU per message
// of s.Totals[counter] to s.Extra.
func WithCPU(p CPUPids, out io.Writer, counter string, run func() (Summary, error)) (Summary, error) {
	a := readCPU(p, out)
	s, err := run()
	b := readCPU(p, out)
	if s.Extra == nil {
		s.Extra = map[string]any{}
	}
	cpuPerMessage(a, b, s.Totals[counter], s.Extra)
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	return s, err
}
