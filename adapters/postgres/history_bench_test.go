package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
)

// BenchmarkMetricsFlush: one broker's flush of a minute in which it served 1,000 queues
// (1,000 queue rows and its broker row, one statement), every flush a new minute as at
// METRICS_FLUSH_MS's default. ms/flush is the statement's wall time; cpu-µs/flush this
// process's CPU for it (building the arrays, encoding, the round trip).
func BenchmarkMetricsFlush(b *testing.B) {
	s, err := Open(context.Background(), pgtest.NewDatabase(b), Options{PoolSize: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	const queues = 1000
	instance := uuid.NewString()
	start := time.Now().UTC().Truncate(time.Minute).Add(-24 * time.Hour)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	t0 := time.Now()
	for i := range b.N {
		minute := start.Add(time.Duration(i) * time.Minute)
		f := ports.MetricsFlush{Instance: instance, Seq: int64(i + 1), Queues: make([]ports.QueueMinute, queues)}
		var total ports.Counters
		for q := range f.Queues {
			c := ports.Counters{PushRequests: 60, PushMessages: 600, PopRequests: 60, PopMessages: 600,
				AckRequests: 60, AckSuccess: 600, LagCount: 600, LagSumMs: 6000, LagMaxMs: 40}
			f.Queues[q] = ports.QueueMinute{Minute: minute, Tenant: ports.DefaultTenant, Queue: fmt.Sprintf("q-%04d", q), Counters: c}
			total.Add(c)
		}
		f.Brokers = []ports.BrokerMinute{{Minute: minute, Broker: "bench", Hostname: "bench", Counters: total,
			Figures: ports.BrokerFigures{Samples: 12, RSS: ports.Gauge{Sum: 12 << 26, Min: 1 << 26, Max: 1 << 26, Last: 1 << 26}},
			Parked:  map[string]int64{"q-0001": 3}}}
		if err := s.WriteMetrics(context.Background(), f); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(time.Since(t0).Microseconds())/1000/float64(b.N), "ms/flush")
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/flush")
	b.ReportMetric(0, "ns/op")
}
