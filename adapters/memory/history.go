package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

// Metrics is an in-memory ports.MetricsWriter: the metrics history one database would
// hold, merged as the PostgreSQL adapter merges it (queue counters add, their lag
// maximum takes the larger; broker rows add their sums, keep the smallest minima, the
// largest maxima, the last flush's last values and the largest parked count per queue).
// A flush whose (Instance, Seq) was applied before changes nothing. Fail makes writes
// fail, for outages.
type Metrics struct {
	mu      sync.Mutex
	applied map[flushID]bool
	queues  map[queueMinuteKey]ports.QueueMinute
	brokers map[brokerMinuteKey]ports.BrokerMinute
	fail    error
	writes  int // WriteMetrics calls, failed ones included
}

type flushID struct {
	instance string
	seq      int64
}

type queueMinuteKey struct {
	minute        time.Time
	tenant, queue string
}

type brokerMinuteKey struct {
	minute time.Time
	broker string
}

var _ ports.MetricsWriter = (*Metrics)(nil)

// NewMetrics returns an empty history.
func NewMetrics() *Metrics {
	return &Metrics{applied: map[flushID]bool{}, queues: map[queueMinuteKey]ports.QueueMinute{},
		brokers: map[brokerMinuteKey]ports.BrokerMinute{}}
}

// Fail makes every later write fail with err (nil: writes succeed again).
func (m *Metrics) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = err
}

// Writes is how many times WriteMetrics was called, failed calls included.
func (m *Metrics) Writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.writes
}

// Applied is how many distinct flushes were applied.
func (m *Metrics) Applied() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.applied)
}

// WriteMetrics implements ports.MetricsWriter. A flush naming a row twice is refused
// whole (ports.ErrInvalid), as the database refuses one statement upserting a row twice.
func (m *Metrics) WriteMetrics(ctx context.Context, f ports.MetricsFlush) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.fail != nil {
		return m.fail
	}
	if err := f.Check(); err != nil {
		return err
	}
	id := flushID{f.Instance, f.Seq}
	if m.applied[id] {
		return nil
	}
	m.applied[id] = true
	for _, q := range f.Queues {
		k := queueMinuteKey{q.Minute.UTC(), q.Tenant, q.Queue}
		old, ok := m.queues[k]
		if !ok {
			old = ports.QueueMinute{Minute: k.minute, Tenant: q.Tenant, Queue: q.Queue}
		}
		old.Counters = addQueueCounters(old.Counters, q.Counters)
		m.queues[k] = old
	}
	for _, b := range f.Brokers {
		k := brokerMinuteKey{b.Minute.UTC(), b.Broker}
		old, ok := m.brokers[k]
		if !ok {
			old = ports.BrokerMinute{Minute: k.minute, Broker: b.Broker}
		}
		m.brokers[k] = mergeBroker(old, b)
	}
	return nil
}

// addQueueCounters adds o to c as a queue row merges: every counter adds (the parked
// maximum too: it is summed over brokers, each sending its increase), the lag maximum
// takes the larger.
func addQueueCounters(c, o ports.Counters) ports.Counters {
	parked := c.ParkedMax + o.ParkedMax
	c.Add(o)
	c.ParkedMax = parked
	return c
}

// mergeBroker merges a flush's broker row b into the stored row old.
func mergeBroker(old, b ports.BrokerMinute) ports.BrokerMinute {
	out := old
	out.Hostname, out.Port = b.Hostname, b.Port
	out.Counters.Add(b.Counters) // sums add; lag and parked maxima take the larger
	of, bf := old.Figures, b.Figures
	f := ports.BrokerFigures{
		CPUUserUs: of.CPUUserUs + bf.CPUUserUs, CPUSysUs: of.CPUSysUs + bf.CPUSysUs,
		Requests: of.Requests + bf.Requests, LatencySumUs: of.LatencySumUs + bf.LatencySumUs,
		LatencyMaxUs: max(of.LatencyMaxUs, bf.LatencyMaxUs), DBErrors: of.DBErrors + bf.DBErrors,
		Samples:         of.Samples + bf.Samples,
		RSS:             mergeGauge(of.RSS, bf.RSS, of.Samples, bf.Samples),
		PoolIdle:        mergeGauge(of.PoolIdle, bf.PoolIdle, of.Samples, bf.Samples),
		PoolActive:      mergeGauge(of.PoolActive, bf.PoolActive, of.Samples, bf.Samples),
		VirtualBytes:    bf.VirtualBytes,
		PoolSize:        bf.PoolSize,
		SpoolPendingMax: max(of.SpoolPendingMax, bf.SpoolPendingMax), SpoolPendingLast: bf.SpoolPendingLast,
		GoroutinesMax: max(of.GoroutinesMax, bf.GoroutinesMax), GoroutinesLast: bf.GoroutinesLast,
	}
	out.Figures = f
	parked := maps.Clone(old.Parked)
	for q, n := range b.Parked {
		if parked == nil {
			parked = map[string]int64{}
		}
		parked[q] = max(parked[q], n)
	}
	out.Parked = parked
	return out
}

// mergeGauge merges gauge b (of bn samples) into a (of an samples): a side without
// samples has no minimum to compare.
func mergeGauge(a, b ports.Gauge, an, bn int64) ports.Gauge {
	switch {
	case an == 0:
		return b
	case bn == 0:
		return a
	}
	return ports.Gauge{Sum: a.Sum + b.Sum, Min: min(a.Min, b.Min), Max: max(a.Max, b.Max), Last: b.Last}
}

// QueueMinutes returns every stored queue row, by minute, tenant and queue.
func (m *Metrics) QueueMinutes() []ports.QueueMinute {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Collect(maps.Values(m.queues))
	slices.SortFunc(out, func(a, b ports.QueueMinute) int {
		return cmp.Or(a.Minute.Compare(b.Minute), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Queue, b.Queue))
	})
	return out
}

// BrokerMinutes returns every stored broker row, by minute and broker.
func (m *Metrics) BrokerMinutes() []ports.BrokerMinute {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ports.BrokerMinute, 0, len(m.brokers))
	for _, b := range m.brokers {
		b.Parked = maps.Clone(b.Parked)
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b ports.BrokerMinute) int {
		return cmp.Or(a.Minute.Compare(b.Minute), cmp.Compare(a.Broker, b.Broker))
	})
	return out
}
