package porttest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// MetricsFixture is a MetricsWriter over an empty history, and reads of what it stored.
type MetricsFixture struct {
	Writer ports.MetricsWriter
	// Queues and Brokers return every stored row, in any order.
	Queues  func(t *testing.T) []ports.QueueMinute
	Brokers func(t *testing.T) []ports.BrokerMinute
	// Rollups, when set, returns every stored rollup row of width minutes (5 or 60), its
	// bucket's first minute as Minute: each must equal its minutes summed (parked_max
	// the largest minute's, lag_max_ms the largest). Nil for a writer without rollups.
	Rollups func(t *testing.T, width int) []ports.QueueMinute
}

// MetricsWriter runs the conformance suite of ports.MetricsWriter; newFixture must
// return a history of its own on every call.
//
// The merge rules it checks: a queue row's counters all add (parked_max too: it is
// summed over brokers, each broker sending its increase) but the lag maximum, which
// takes the larger; a broker row's sums add, its maxima take the larger, its gauges'
// minima the smaller (a side with no samples has none) and their lasts the later flush's,
// its parked counts the larger per queue; a flush's (Instance, Seq) is applied once.
func MetricsWriter(t *testing.T, newFixture func(t *testing.T) MetricsFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f MetricsFixture)
	}{
		{"a flush reads back as written", testMetricsRoundTrip},
		{"flushes of one minute add up", testMetricsAdditive},
		{"two brokers in one minute: queue rows sum, broker rows apart", testMetricsTwoBrokers},
		{"a flush's instance and seq apply it once", testMetricsOnce},
		{"minutes and tenants stay apart", testMetricsApart},
		{"maxima, minima and lasts merge", testMetricsMerge},
		{"a flush naming a row twice is refused whole", testMetricsDuplicateRow},
		{"an empty flush is accepted", testMetricsEmpty},
		{"a cancelled context fails and stores nothing", testMetricsCancelled},
		{"concurrent flushes of many brokers all add up", testMetricsConcurrent},
		{"the 5- and 60-minute rollups equal their minutes", testMetricsRollups},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

const (
	instanceA = "01900000-0000-7000-8000-00000000000a"
	instanceB = "01900000-0000-7000-8000-00000000000b"
)

// minute0 is the minute the cases write.
var minute0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func writeMetrics(t *testing.T, f MetricsFixture, fl ports.MetricsFlush) {
	t.Helper()
	if err := f.Writer.WriteMetrics(context.Background(), fl); err != nil {
		t.Fatalf("WriteMetrics(%s/%d): %v", fl.Instance, fl.Seq, err)
	}
}

// queueRows reads the stored queue rows, sorted by minute, tenant and queue.
func queueRows(t *testing.T, f MetricsFixture) []ports.QueueMinute {
	t.Helper()
	out := f.Queues(t)
	for i := range out {
		out[i].Minute = out[i].Minute.UTC()
	}
	slices.SortFunc(out, func(a, b ports.QueueMinute) int {
		return cmp.Or(a.Minute.Compare(b.Minute), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Queue, b.Queue))
	})
	return out
}

// brokerRows reads the stored broker rows, sorted by minute and broker; an empty parked
// map reads as nil.
func brokerRows(t *testing.T, f MetricsFixture) []ports.BrokerMinute {
	t.Helper()
	out := f.Brokers(t)
	for i := range out {
		out[i].Minute = out[i].Minute.UTC()
		if len(out[i].Parked) == 0 {
			out[i].Parked = nil
		}
	}
	slices.SortFunc(out, func(a, b ports.BrokerMinute) int {
		return cmp.Or(a.Minute.Compare(b.Minute), cmp.Compare(a.Broker, b.Broker))
	})
	return out
}

func wantQueueRows(t *testing.T, f MetricsFixture, want ...ports.QueueMinute) {
	t.Helper()
	got := queueRows(t, f)
	if len(got) != len(want) {
		t.Fatalf("queue rows:\n%s\nwant:\n%s", dump(got), dump(want))
	}
	for i := range got {
		if !got[i].Minute.Equal(want[i].Minute) || got[i].Tenant != want[i].Tenant || got[i].Queue != want[i].Queue ||
			got[i].Counters != want[i].Counters {
			t.Fatalf("queue row %d:\n%+v\nwant:\n%+v", i, got[i], want[i])
		}
	}
	wantRollups(t, f, got)
}

func wantBrokerRows(t *testing.T, f MetricsFixture, want ...ports.BrokerMinute) {
	t.Helper()
	got := brokerRows(t, f)
	if len(got) != len(want) {
		t.Fatalf("broker rows:\n%s\nwant:\n%s", dump(got), dump(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Minute.Equal(w.Minute) || g.Broker != w.Broker || g.Hostname != w.Hostname || g.Port != w.Port ||
			g.Counters != w.Counters || g.Figures != w.Figures || !maps.Equal(g.Parked, w.Parked) {
			t.Fatalf("broker row %d:\n%+v\nwant:\n%+v", i, g, w)
		}
	}
}

func dump[T any](rows []T) string {
	s := ""
	for _, r := range rows {
		s += fmt.Sprintf("  %+v\n", r)
	}
	return s
}

// queueRow is a queue row of minute0 with every counter distinct.
func queueRow(tenant, queue string, base int64) ports.QueueMinute {
	return ports.QueueMinute{Minute: minute0, Tenant: tenant, Queue: queue, Counters: counters(base, true)}
}

// counters numbers every counter from base; partitions are left out of broker rows.
func counters(base int64, partitions bool) ports.Counters {
	c := ports.Counters{
		PushRequests: base + 1, PushMessages: base + 2, PopRequests: base + 3, PopMessages: base + 4,
		PopEmpty: base + 5, AckRequests: base + 6, AckSuccess: base + 7, AckFailed: base + 8,
		DLQMoves: base + 9, Transactions: base + 10, LagCount: base + 13, LagSumMs: base + 14,
		LagMaxMs: base + 15, ParkedMax: base + 16,
	}
	if partitions {
		c.PartitionsCreated, c.PartitionsDeleted = base+11, base+12
	}
	return c
}

// brokerRow is a broker row of minute0 with every figure distinct.
func brokerRow(broker string, base int64) ports.BrokerMinute {
	return ports.BrokerMinute{
		Minute: minute0, Broker: broker, Hostname: "host-" + broker, Port: 6632, Counters: counters(base, false),
		Figures: ports.BrokerFigures{
			CPUUserUs: base + 100, CPUSysUs: base + 101, Requests: base + 102, LatencySumUs: base + 103,
			LatencyMaxUs: base + 104, DBErrors: base + 105, Samples: 3,
			RSS:          ports.Gauge{Sum: 3 * (base + 200), Min: base + 190, Max: base + 210, Last: base + 200},
			PoolIdle:     ports.Gauge{Sum: 3 * (base + 20), Min: base + 19, Max: base + 21, Last: base + 20},
			PoolActive:   ports.Gauge{Sum: 3 * (base + 30), Min: base + 29, Max: base + 31, Last: base + 30},
			VirtualBytes: base + 300, PoolSize: base + 40, SpoolPendingMax: base + 50, SpoolPendingLast: base + 49,
			GoroutinesMax: base + 60, GoroutinesLast: base + 59,
		},
		Parked: map[string]int64{"orders": base + 7, "audit": base + 1},
	}
}

func testMetricsRoundTrip(t *testing.T, f MetricsFixture) {
	q1, q2 := queueRow(ports.DefaultTenant, "orders", 0), queueRow(otherTenant, "orders", 100)
	b := brokerRow("b1", 0)
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{q2, q1},
		Brokers: []ports.BrokerMinute{b}})
	wantQueueRows(t, f, q1, q2)
	wantBrokerRows(t, f, b)
}

func testMetricsAdditive(t *testing.T, f MetricsFixture) {
	q1, q2 := queueRow(ports.DefaultTenant, "orders", 0), queueRow(ports.DefaultTenant, "orders", 1000)
	q2.LagMaxMs = 3 // smaller than q1's: the maximum stays
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{q1}})
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 2, Queues: []ports.QueueMinute{q2}})
	want := q1
	want.Counters = sumQueue(q1.Counters, q2.Counters)
	wantQueueRows(t, f, want)
}

// sumQueue is a queue row's merge: everything adds but the lag maximum.
func sumQueue(a, b ports.Counters) ports.Counters {
	parked := a.ParkedMax + b.ParkedMax
	a.Add(b)
	a.ParkedMax = parked
	return a
}

func testMetricsTwoBrokers(t *testing.T, f MetricsFixture) {
	qa, qb := queueRow(ports.DefaultTenant, "orders", 0), queueRow(ports.DefaultTenant, "orders", 50)
	ba, bb := brokerRow("b1", 0), brokerRow("b2", 50)
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{qa},
		Brokers: []ports.BrokerMinute{ba}})
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceB, Seq: 1, Queues: []ports.QueueMinute{qb},
		Brokers: []ports.BrokerMinute{bb}})
	want := qa
	want.Counters = sumQueue(qa.Counters, qb.Counters)
	wantQueueRows(t, f, want)
	wantBrokerRows(t, f, ba, bb)
}

func testMetricsOnce(t *testing.T, f MetricsFixture) {
	q := queueRow(ports.DefaultTenant, "orders", 0)
	b := brokerRow("b1", 0)
	fl := ports.MetricsFlush{Instance: instanceA, Seq: 7, Queues: []ports.QueueMinute{q}, Brokers: []ports.BrokerMinute{b}}
	writeMetrics(t, f, fl)
	writeMetrics(t, f, fl) // a retry after an unknown outcome
	wantQueueRows(t, f, q)
	wantBrokerRows(t, f, b)
	// The same seq of another instance is another flush.
	fl.Instance, fl.Brokers = instanceB, nil
	writeMetrics(t, f, fl)
	want := q
	want.Counters = sumQueue(q.Counters, q.Counters)
	wantQueueRows(t, f, want)
}

func testMetricsApart(t *testing.T, f MetricsFixture) {
	q1 := queueRow(ports.DefaultTenant, "orders", 0)
	q2 := queueRow(otherTenant, "orders", 10)
	q3 := queueRow(ports.DefaultTenant, "orders", 20)
	q3.Minute = minute0.Add(time.Minute)
	q4 := queueRow(ports.DefaultTenant, "audit", 30)
	b1, b2 := brokerRow("b1", 0), brokerRow("b1", 10)
	b2.Minute = minute0.Add(time.Minute)
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{q1, q2, q3, q4},
		Brokers: []ports.BrokerMinute{b1, b2}})
	wantQueueRows(t, f, q4, q1, q2, q3)
	wantBrokerRows(t, f, b1, b2)
}

func testMetricsMerge(t *testing.T, f MetricsFixture) {
	first, second := brokerRow("b1", 0), brokerRow("b1", 0)
	second.Hostname, second.Port = "renamed", 7000
	second.LagMaxMs, second.ParkedMax = 1, 100 // smaller, larger
	g := &second.Figures
	g.LatencyMaxUs = 1
	g.Samples = 2
	g.RSS = ports.Gauge{Sum: 20, Min: 5, Max: 15, Last: 15}          // a smaller minimum
	g.PoolIdle = ports.Gauge{Sum: 200, Min: 90, Max: 110, Last: 110} // a larger maximum
	g.PoolActive = ports.Gauge{Sum: 60, Min: 29, Max: 31, Last: 1}   // another last
	g.VirtualBytes, g.PoolSize, g.SpoolPendingMax, g.SpoolPendingLast = 1, 2, 3, 4
	g.GoroutinesMax, g.GoroutinesLast = 1000, 999
	second.Parked = map[string]int64{"orders": 1, "mail": 4}
	// A third flush without samples (nothing sampled in it) keeps the gauges' minima
	// and lasts.
	third := ports.BrokerMinute{Minute: minute0, Broker: "b1", Hostname: "renamed", Port: 7000,
		Counters: ports.Counters{PushRequests: 1},
		Figures:  ports.BrokerFigures{VirtualBytes: 1, PoolSize: 2, SpoolPendingLast: 4, GoroutinesLast: 999}}
	for i, b := range []ports.BrokerMinute{first, second, third} {
		writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: int64(i + 1), Brokers: []ports.BrokerMinute{b}})
	}
	want := first
	want.Hostname, want.Port = "renamed", 7000
	want.Counters.Add(second.Counters)
	want.Counters.Add(third.Counters)
	want.LagMaxMs, want.ParkedMax = first.LagMaxMs, 100
	a, b := first.Figures, second.Figures
	want.Figures = ports.BrokerFigures{
		CPUUserUs: a.CPUUserUs + b.CPUUserUs, CPUSysUs: a.CPUSysUs + b.CPUSysUs, Requests: a.Requests + b.Requests,
		LatencySumUs: a.LatencySumUs + b.LatencySumUs, LatencyMaxUs: a.LatencyMaxUs, DBErrors: a.DBErrors + b.DBErrors,
		Samples:      5,
		RSS:          ports.Gauge{Sum: a.RSS.Sum + 20, Min: 5, Max: a.RSS.Max, Last: 15},
		PoolIdle:     ports.Gauge{Sum: a.PoolIdle.Sum + 200, Min: a.PoolIdle.Min, Max: 110, Last: 110},
		PoolActive:   ports.Gauge{Sum: a.PoolActive.Sum + 60, Min: a.PoolActive.Min, Max: a.PoolActive.Max, Last: 1},
		VirtualBytes: 1, PoolSize: 2, SpoolPendingMax: a.SpoolPendingMax, SpoolPendingLast: 4,
		GoroutinesMax: 1000, GoroutinesLast: 999,
	}
	want.Parked = map[string]int64{"orders": 7, "audit": 1, "mail": 4}
	wantBrokerRows(t, f, want)
}

func testMetricsDuplicateRow(t *testing.T, f MetricsFixture) {
	q := queueRow(ports.DefaultTenant, "orders", 0)
	b := brokerRow("b1", 0)
	for _, fl := range []ports.MetricsFlush{
		{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{q, q}, Brokers: []ports.BrokerMinute{b}},
		{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{q}, Brokers: []ports.BrokerMinute{b, b}},
	} {
		if err := f.Writer.WriteMetrics(context.Background(), fl); !errors.Is(err, ports.ErrInvalid) {
			t.Fatalf("WriteMetrics of a flush naming a row twice: %v, want ErrInvalid", err)
		}
	}
	wantQueueRows(t, f)
	wantBrokerRows(t, f)
	// Nothing of it was recorded, its (instance, seq) included.
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{q}})
	wantQueueRows(t, f, q)
}

func testMetricsEmpty(t *testing.T, f MetricsFixture) {
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1})
	wantQueueRows(t, f)
	wantBrokerRows(t, f)
}

func testMetricsCancelled(t *testing.T, f MetricsFixture) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fl := ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{queueRow(ports.DefaultTenant, "q", 0)}}
	if err := f.Writer.WriteMetrics(ctx, fl); err == nil {
		t.Fatal("WriteMetrics with a cancelled context succeeded")
	}
	wantQueueRows(t, f)
	writeMetrics(t, f, fl) // not recorded as applied
	wantQueueRows(t, f, fl.Queues[0])
}

// testMetricsConcurrent: brokers writing the same minute's queue rows at once, each
// naming them in another order, all add up (a writer that locks rows in the order given
// could deadlock).
func testMetricsConcurrent(t *testing.T, f MetricsFixture) {
	const brokers, queues = 6, 8
	var wg sync.WaitGroup
	errs := make([]error, brokers)
	for b := range brokers {
		wg.Go(func() {
			var qs []ports.QueueMinute
			for i := range queues {
				n := (i + b) % queues // another order per broker: rotated, reversed for odd ones
				if b%2 == 1 {
					n = (queues - 1 - i + b) % queues
				}
				qs = append(qs, ports.QueueMinute{Minute: minute0, Tenant: ports.DefaultTenant,
					Queue: fmt.Sprint("q", n), Counters: ports.Counters{PushRequests: 1, PushMessages: int64(b)}})
			}
			for seq := range 3 {
				fl := ports.MetricsFlush{Instance: fmt.Sprintf("01900000-0000-7000-8000-%012d", b), Seq: int64(seq + 1), Queues: qs}
				if err := f.Writer.WriteMetrics(context.Background(), fl); err != nil {
					errs[b] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent flushes: %v", err)
	}
	var want []ports.QueueMinute
	for i := range queues {
		want = append(want, ports.QueueMinute{Minute: minute0, Tenant: ports.DefaultTenant, Queue: fmt.Sprint("q", i),
			Counters: ports.Counters{PushRequests: 3 * brokers, PushMessages: 3 * (brokers * (brokers - 1) / 2)}})
	}
	wantQueueRows(t, f, want...)
}
