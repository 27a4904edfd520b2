package spoolfs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// benchDir is where benchmarks write: QUEEN_SPOOL_BENCH_DIR (to measure a given disk),
// else a temporary directory. A tmpfs makes fsync free and the figures meaningless.
func benchDir(b *testing.B) string {
	if d := os.Getenv("QUEEN_SPOOL_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "spoolbench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// benchRecord is a single push item of about 200 bytes on disk.
func benchRecord(i int) spool.Record {
	r := spool.Record{
		Tenant: ports.DefaultTenant, Queue: "bench", Partition: fmt.Sprint("p", i%16),
		TransactionID: fmt.Sprintf("00000000-0000-0000-0000-%012d", i),
		Payload:       []byte(`{"i":` + fmt.Sprint(i) + `,"pad":"` + strings.Repeat("x", 80) + `"}`),
	}
	r.MessageID[0] = byte(i)
	return r
}

// BenchmarkAppend measures durable single-record Appends: each returns after its fsync,
// so the concurrent case shows group commit (fsyncs/s well below msgs/s).
func BenchmarkAppend(b *testing.B) {
	for _, appenders := range []int{1, 64} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			s, err := spool.Open(newFS(b, benchDir(b)), spool.Options{})
			if err != nil {
				b.Fatal(err)
			}
			s.Start()
			defer s.Close()
			recs := make([]spool.Record, 1024)
			for i := range recs {
				recs[i] = benchRecord(i)
			}
			ctx := context.Background()
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range appenders {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if err := s.Append(ctx, recs[i%1024:i%1024+1]); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start).Seconds()
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(b.N)/elapsed, "msgs/s")
			b.ReportMetric(float64(st.Fsyncs)/elapsed, "fsyncs/s")
		})
	}
}

// BenchmarkReplay measures Next+Commit of 100-record batches: each Commit writes the
// position durably (or deletes the finished file).
func BenchmarkReplay(b *testing.B) {
	s, err := spool.Open(newFS(b, benchDir(b)), spool.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Close()
	chunk := make([]spool.Record, 1000)
	for i := range chunk {
		chunk[i] = benchRecord(i)
	}
	for n := 0; n < b.N; n += len(chunk) {
		if err := s.Append(context.Background(), chunk[:min(len(chunk), b.N-n)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	replayed := 0
	for {
		batch, err := s.Next(100)
		if err != nil {
			b.Fatal(err)
		}
		if batch == nil {
			break
		}
		replayed += len(batch.Records)
		if err := s.Commit(batch); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start).Seconds()
	b.StopTimer()
	if replayed != b.N {
		b.Fatalf("replayed %d of %d", replayed, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed, "msgs/s")
}
