package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
)

// BenchmarkPushBundle: one fused bundle of 26 single-message segments on distinct
// partitions (the size fusion makes under 64 single-message clients), through
// PushSegments. Allocations per segment are the broker's share; the time is mostly the
// database's.
func BenchmarkPushBundle(b *testing.B) {
	s, err := Open(context.Background(), pgtest.NewDatabase(b), Options{PoolSize: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	const segsPerBundle = 26
	segs := make([]ports.Segment, segsPerBundle)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for k := range segs {
			segs[k] = oneFrame("bench", fmt.Sprintf("p%d", (i*segsPerBundle+k)%1000), fmt.Sprintf("t%d-%d", i, k))
		}
		if _, err := s.PushSegments(context.Background(), segs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*segsPerBundle), "µs/segment")
}
