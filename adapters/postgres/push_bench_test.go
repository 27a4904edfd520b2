package postgres

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/ports"
)

// BenchmarkPushBundle: one fused bundle of 26 single-message segments on distinct
// partitions (the size fusion makes under 64 single-message clients), through
// PushSegments. Allocations and CPU per segment (cpu-µs/segment: this process's CPU,
// encoding, the round trip's system calls and decoding) are the broker's share; the
// elapsed time is mostly the database's. The sub-benchmarks measure the encryption
// guard: plain segments of an unencrypted queue (the common case: the flag read once
// per bundle), sealed ones (no read), and plain ones through log_push_multi_v3 (the
// allocator without the guard).
func BenchmarkPushBundle(b *testing.B) {
	v3 := bundleStmt{name: "queen_push_multi_v3_bench",
		sql: strings.Replace(strings.Replace(pushStmt.sql, "log_push_multi_v4", "log_push_multi_v3", 1),
			", $8::bool[])", ") WHERE $8::bool[] IS NULL OR $8::bool[] IS NOT NULL", 1)}
	for _, bc := range []struct {
		name  string
		stmt  bundleStmt
		plain bool
	}{{"plain", pushStmt, true}, {"sealed", pushStmt, false}, {"v3", v3, true}} {
		b.Run(bc.name, func(b *testing.B) { benchPushBundle(b, bc.stmt, bc.plain) })
	}
}

func benchPushBundle(b *testing.B, stmt bundleStmt, plain bool) {
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
	cpu0 := processCPU(b)
	for i := range b.N {
		for k := range segs {
			segs[k] = oneFrame("bench", fmt.Sprintf("p%d", (i*segsPerBundle+k)%1000), fmt.Sprintf("t%d-%d", i, k))
			segs[k].Plain = plain
		}
		err := s.run(context.Background(), "bench", func(ctx context.Context, c *pgxpool.Conn) error {
			_, err := pushBundleWith(ctx, c, stmt, segs)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*segsPerBundle), "µs/segment")
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N*segsPerBundle), "cpu-µs/segment")
}

// processCPU is the CPU time this process used (user and system): the broker's side of
// a bundle call, without the database's.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
