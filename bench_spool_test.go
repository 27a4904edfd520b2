package queen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/spoolfs"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// BenchmarkSpoolReplay measures the drain: records spooled on disk (as an outage leaves
// them: single-message pushes over 100 partitions) replayed into PostgreSQL by a broker
// through fusion, from its start until the spool is empty. Run with -benchtime 1x;
// QUEEN_BENCH_SPOOL_RECORDS sets the count (default 20000).
func BenchmarkSpoolReplay(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("QUEEN_BENCH_SPOOL_RECORDS")); err == nil && v > 0 {
		n = v
	}
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "spool")
		fsys, err := spoolfs.New(dir)
		if err != nil {
			b.Fatal(err)
		}
		sp, err := spool.Open(fsys, spool.Options{})
		if err != nil {
			b.Fatal(err)
		}
		sp.Start()
		recs := make([]spool.Record, 0, 1000)
		for i := range n {
			recs = append(recs, spool.Record{Tenant: ports.DefaultTenant, Queue: "replay", Partition: fmt.Sprintf("p%d", i%100),
				TransactionID: fmt.Sprintf("r-%d", i), MessageID: [16]byte{byte(i), byte(i >> 8), byte(i >> 16), 1},
				Payload: []byte(benchPayload(i))})
			if len(recs) == cap(recs) || i == n-1 {
				if err := sp.Append(context.Background(), recs); err != nil {
					b.Fatal(err)
				}
				recs = recs[:0]
			}
		}
		if err := sp.Close(); err != nil {
			b.Fatal(err)
		}
		// The broker starts draining as soon as it is built: time from its first replayed
		// batch to an empty spool, so start-up (schema, pool) is not counted.
		a := startApp(b, map[string]string{"FILE_BUFFER_DIR": dir, "FILE_BUFFER_FLUSH_MS": "10",
			"FILE_BUFFER_MAX_BATCH": os.Getenv("FILE_BUFFER_MAX_BATCH")})
		var first int64
		var start time.Time
		for first == 0 {
			if first = a.App.Drainer.Summary().Replayed; first == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		start = time.Now()
		b.StartTimer()
		for !a.App.Spool.Empty() {
			time.Sleep(2 * time.Millisecond)
		}
		b.StopTimer()
		el := time.Since(start)
		sum := a.App.Drainer.Summary()
		if sum.Replayed != int64(n) {
			b.Fatalf("replayed %d of %d (%+v)", sum.Replayed, n, sum)
		}
		b.ReportMetric(float64(int64(n)-first)/el.Seconds(), "msgs/s")
		st := a.App.Batcher.Stats()
		if st.Commits > 0 {
			b.ReportMetric(float64(st.Segments)/float64(st.Commits), "segments/commit")
		}
		_ = a.stop()
	}
}
