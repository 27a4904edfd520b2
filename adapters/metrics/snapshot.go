package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// snapshot is a collector over one source read once per scrape: every family it reports
// comes from the same reading, so the figures of one scrape agree with each other (pool
// size against idle and active, spool pending against failed), and a source that takes
// a lock or walks a structure (the spool's file list, pgxpool's Stat) is read once, not
// once per family.
type snapshot[S any] struct {
	read  func() S
	stats []stat[S]
}

// stat is one series of a snapshot: an unlabelled family, or one series of a family
// whose labels are constant (the retention job, fusion's op).
type stat[S any] struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(S) float64
}

func newSnapshot[S any](read func() S) *snapshot[S] { return &snapshot[S]{read: read} }

// counter adds a counter series; value must never decrease while the process lives.
func (c *snapshot[S]) counter(name, help string, labels prometheus.Labels, value func(S) float64) {
	c.stats = append(c.stats, stat[S]{prometheus.NewDesc(name, help, nil, labels), prometheus.CounterValue, value})
}

// gauge adds a gauge series.
func (c *snapshot[S]) gauge(name, help string, labels prometheus.Labels, value func(S) float64) {
	c.stats = append(c.stats, stat[S]{prometheus.NewDesc(name, help, nil, labels), prometheus.GaugeValue, value})
}

func (c *snapshot[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.stats {
		ch <- s.desc
	}
}

func (c *snapshot[S]) Collect(ch chan<- prometheus.Metric) {
	v := c.read()
	for _, s := range c.stats {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(v))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
