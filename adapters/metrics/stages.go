package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/queen-go/queen/core/stages"
)

// stagesCollector exports the latency paths' stage histograms (core/stages), read at
// scrape time: the core counts in its own lock-free histograms and never sees Prometheus.
type stagesCollector struct{ t *stages.Timers }

var (
	pushStageDesc = prometheus.NewDesc("queen_push_stage_seconds",
		"Time of each stage of a push: read (body read and parsed), wait (a segment's oldest frame waiting for its commit), commit (the bundle's database call, PostgreSQL's commit included), route (answers routed after the commit), answer (the answer written).",
		[]string{"stage"}, nil)
	popStageDesc = prometheus.NewDesc("queen_pop_stage_seconds",
		"Time of each stage of a message's way to a parked consumer: ready (a partition made ready in the hot-list until a pop takes it as a candidate), claim (a pop's claim call to the database), answer (a claim's messages decoded and written).",
		[]string{"stage"}, nil)
)

func (c stagesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pushStageDesc
	ch <- popStageDesc
}

func (c stagesCollector) Collect(ch chan<- prometheus.Metric) {
	emit := func(d *prometheus.Desc, named []stages.Named) {
		for _, n := range named {
			s := n.Hist.Read()
			buckets := make(map[float64]uint64, len(stages.Bounds))
			for i, b := range stages.Bounds {
				buckets[b] = s.Cumulative[i]
			}
			ch <- prometheus.MustNewConstHistogram(d, s.Count, s.SumSeconds, buckets, n.Stage)
		}
	}
	emit(pushStageDesc, c.t.Push.Stages())
	emit(popStageDesc, c.t.Pop.Stages())
}
