package stages

import (
	"sync/atomic"
	"time"
)

// Bounds are the histograms' upper bounds, in seconds: fine below a few milliseconds,
// where the stages of a push at low load lie, coarse up to the 10 s of a stalled one.
var Bounds = [...]float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075,
	0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// boundNs are Bounds in nanoseconds, for Observe's comparisons.
var boundNs = func() (ns [len(Bounds)]int64) {
	for i, b := range Bounds {
		ns[i] = int64(b * 1e9)
	}
	return ns
}()

// Histogram counts durations into Bounds. The zero value is ready to use.
type Histogram struct {
	counts [len(Bounds) + 1]atomic.Uint64 // the last one: above every bound
	sumNs  atomic.Int64
}

// Observe counts one duration (a negative one as 0).
func (h *Histogram) Observe(d time.Duration) {
	ns := max(int64(d), 0)
	i := 0
	for i < len(boundNs) && ns > boundNs[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(ns)
}

// Since observes the time elapsed since t.
func (h *Histogram) Since(t time.Time) { h.Observe(time.Since(t)) }

// Snapshot is a Histogram read at one moment, in Prometheus' shape.
type Snapshot struct {
	Count      uint64
	SumSeconds float64
	Cumulative [len(Bounds)]uint64 // observations at or below each bound
}

// Read returns the histogram's counts. Concurrent observations may land between the
// reads of two counters: Count is the sum of what was read, so the snapshot is
// consistent with itself.
func (h *Histogram) Read() Snapshot {
	var s Snapshot
	var run uint64
	for i := range Bounds {
		run += h.counts[i].Load()
		s.Cumulative[i] = run
	}
	s.Count = run + h.counts[len(Bounds)].Load()
	s.SumSeconds = float64(h.sumNs.Load()) / 1e9
	return s
}

// Named is one stage's histogram with its label value.
type Named struct {
	Stage string
	Hist  *Histogram
}

// Push holds the push path's stages (doc.go).
type Push struct {
	Read, Wait, Commit, Route, Answer Histogram
}

// Stages lists the push stages in the path's order, for exporters.
func (p *Push) Stages() []Named {
	return []Named{{"read", &p.Read}, {"wait", &p.Wait}, {"commit", &p.Commit}, {"route", &p.Route}, {"answer", &p.Answer}}
}

// Pop holds the stages of a message's way to a parked consumer (doc.go).
type Pop struct {
	Ready, Claim, Answer Histogram
}

// Stages lists the pop stages in the path's order, for exporters.
func (p *Pop) Stages() []Named {
	return []Named{{"ready", &p.Ready}, {"claim", &p.Claim}, {"answer", &p.Answer}}
}

// Timers are both paths' stages, one value the wiring hands to every component that
// times a stage.
type Timers struct {
	Push Push
	Pop  Pop
}

// New returns empty timers.
func New() *Timers { return &Timers{} }
