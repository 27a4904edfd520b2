package history

import (
	"runtime"
	"time"

	"github.com/queen-go/queen/core/process"
	"github.com/queen-go/queen/ports"
)

// Figures are the sources of the process figures a Recorder samples. Each is called
// from the Recorder's loop only, every Options.Sample and at each flush (one sample
// serves both when they come together).
type Figures struct {
	// CPU is the process's cumulative CPU time in µs [getrusage(RUSAGE_SELF); 0 where
	// there is none]: each flush writes the difference since the previous one.
	CPU func() (userUs, sysUs int64)
	// Memory is the process's resident and virtual size in bytes [/proc/self/statm;
	// else the Go runtime's mapped memory].
	Memory func() (rss, virtual int64)
	// Goroutines [runtime.NumGoroutine].
	Goroutines func() int64
	// Pool reads the database pool [none]: the figures are its size (the most
	// connections it opens), those in use, and the free slots as Queen counts them, the
	// size less those in use (the pool opens the others on demand).
	Pool func() ports.PoolStat
	// SpoolPending is the spooled records not replayed yet [none].
	SpoolPending func() int64
	// DBErrors is the database statements that failed since the process started
	// (cumulative) [none]: each flush writes the difference since the previous one,
	// added to what DBError counted.
	DBErrors func() int64
	// Parked calls f for each queue with long polls parked now, with how many [none]
	// (core/consume's Waker.EachParked).
	Parked func(f func(tenant, queue string, n int))
}

func (f *Figures) defaults() {
	if f.CPU == nil {
		f.CPU = process.CPU
	}
	if f.Memory == nil {
		f.Memory = process.Memory
	}
	if f.Goroutines == nil {
		f.Goroutines = func() int64 { return int64(runtime.NumGoroutine()) }
	}
}

// sampler accumulates the samples taken since the last flush. It belongs to the loop.
type sampler struct {
	fig       ports.BrokerFigures // gauges only; the flush adds the rest
	parked    map[string]int64    // queue name -> most parked at once (summed over tenants)
	parkedMax int64               // most parked at once over every queue
	cpuUser   int64               // CPU time at the last flush, µs
	cpuSys    int64
	dbErrors  int64     // Figures.DBErrors at the last flush
	at        time.Time // the last sample's
}

// sample takes one sample of every figure.
func (r *Recorder) sample() {
	f, s := &r.opts.Figures, &r.fig
	first := s.fig.Samples == 0
	rss, virtual := f.Memory()
	gauge(&s.fig.RSS, rss, first)
	s.fig.VirtualBytes = virtual
	if f.Pool != nil {
		p := f.Pool()
		size, active := int64(p.MaxConns()), int64(p.AcquiredConns())
		s.fig.PoolSize = size
		gauge(&s.fig.PoolIdle, size-active, first)
		gauge(&s.fig.PoolActive, active, first)
	}
	if f.SpoolPending != nil {
		n := f.SpoolPending()
		s.fig.SpoolPendingMax, s.fig.SpoolPendingLast = max(s.fig.SpoolPendingMax, n), n
	}
	g := f.Goroutines()
	s.fig.GoroutinesMax, s.fig.GoroutinesLast = max(s.fig.GoroutinesMax, g), g
	s.fig.Samples++
	s.at = time.Now()
	if f.Parked != nil {
		r.sampleParked()
	}
}

// sampleParked records the parked long polls: each queue's counters keep their largest
// count, the broker its largest per queue name and in total.
func (r *Recorder) sampleParked() {
	s := &r.fig
	var total int64
	byName := make(map[string]int64)
	r.opts.Figures.Parked(func(tenant, queue string, n int) {
		if n <= 0 {
			return
		}
		c := r.entry(tenant, queue)
		raise(&c.parkedMax, int64(n))
		r.settle(tenant, queue, c)
		byName[queue] += int64(n)
		total += int64(n)
	})
	for q, n := range byName {
		if s.parked == nil {
			s.parked = make(map[string]int64)
		}
		s.parked[q] = max(s.parked[q], n)
	}
	s.parkedMax = max(s.parkedMax, total)
}

// take returns the figures and parked polls sampled since the last flush, with the CPU
// time used since then, and starts afresh.
func (s *sampler) take(cpu func() (int64, int64)) (ports.BrokerFigures, map[string]int64, int64) {
	fig, parked, parkedMax := s.fig, s.parked, s.parkedMax
	u, sy := cpu()
	fig.CPUUserUs, fig.CPUSysUs = max(u-s.cpuUser, 0), max(sy-s.cpuSys, 0)
	s.cpuUser, s.cpuSys = u, sy
	s.fig, s.parked, s.parkedMax = ports.BrokerFigures{}, nil, 0
	return fig, parked, parkedMax
}

// gauge adds sample v to g; first says it is the span's first sample.
func gauge(g *ports.Gauge, v int64, first bool) {
	if first {
		*g = ports.Gauge{Sum: v, Min: v, Max: v, Last: v}
		return
	}
	g.Sum += v
	g.Min, g.Max, g.Last = min(g.Min, v), max(g.Max, v), v
}
