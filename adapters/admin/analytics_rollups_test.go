package admin

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// rollupMinutes writes three hours (from anaT0) of distinct figures for three queues,
// minutes and rollups (queueMinute), and returns them per queue and minute number.
func rollupMinutes(t *testing.T, f *fixture) map[string][]ports.Counters {
	t.Helper()
	out := map[string][]ports.Counters{}
	for qi, q := range []string{"billing.a", "ops.b", "gone.c"} {
		for m := range 180 {
			if (m+qi)%7 == 3 { // quiet minutes
				out[q] = append(out[q], ports.Counters{})
				continue
			}
			v := int64(m*(qi+1)%23 + 1)
			c := ports.Counters{PushRequests: v, PushMessages: 3 * v, PopRequests: v + 1, PopMessages: 2 * v, PopEmpty: v % 3,
				AckRequests: v, AckSuccess: v - 1, AckFailed: 1, DLQMoves: v % 2, Transactions: v % 4,
				PartitionsCreated: v % 5, PartitionsDeleted: v % 6, LagCount: v, LagSumMs: 10 * v, LagMaxMs: (v * 37) % 101,
				ParkedMax: (v * 13) % 17}
			f.queueMinute(t, tenant, anaMin(m), q, c)
			out[q] = append(out[q], c)
		}
	}
	return out
}

// sumMinutes is the counters of minutes [from, to] as the minute rows read: sums, and
// the largest lag and parked figures.
func sumMinutes(cs []ports.Counters, from, to int) ports.Counters {
	var s ports.Counters
	for _, c := range cs[from : to+1] {
		parked := max(s.ParkedMax, c.ParkedMax)
		s.Add(c)
		s.ParkedMax = parked
	}
	return s
}

// TestQueueReadsOverRollups: reads of spans whose bucket picks the 5- or 60-minute
// rollups give the figures of the minutes they cover, whole buckets of the rollup's
// width (ports.MetricsSpan.Whole), as a read of the minute rows does.
func TestQueueReadsOverRollups(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	f.push(t, "billing.a", "p", 1)
	f.push(t, "ops.b", "p", 1)
	data := rollupMinutes(t, f)
	names := []string{"billing.a", "gone.c", "ops.b"}

	tests := []struct {
		name        string
		span        ports.MetricsSpan
		first, last int // the minutes covered
		width       int // the source read, in minutes
	}{
		{"minutes", ports.MetricsSpan{From: anaMin(0), To: anaMin(179), Bucket: time.Minute}, 0, 179, 1},
		{"5-minute rollups", ports.MetricsSpan{From: anaMin(0), To: anaMin(179), Bucket: 5 * time.Minute}, 0, 179, 5},
		{"15-minute buckets of 5-minute rollups", ports.MetricsSpan{From: anaMin(0), To: anaMin(179), Bucket: 15 * time.Minute}, 0, 179, 5},
		{"hourly rollups", ports.MetricsSpan{From: anaMin(0), To: anaMin(179), Bucket: time.Hour}, 0, 179, 60},
		{"5-minute rollups widen an unaligned range", ports.MetricsSpan{From: anaMin(7), To: anaMin(62).Add(30 * time.Second), Bucket: 5 * time.Minute}, 5, 64, 5},
		{"hourly rollups widen an unaligned range", ports.MetricsSpan{From: anaMin(61), To: anaMin(62), Bucket: time.Hour}, 60, 119, 60},
		{"3-minute buckets read the minutes", ports.MetricsSpan{From: anaMin(7), To: anaMin(62), Bucket: 3 * time.Minute}, 7, 62, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w := tt.span.Rollup(); w != tt.width {
				t.Fatalf("Rollup() = %d, want %d", w, tt.width)
			}
			totals, err := f.admin.QueueTotals(ctx, tenant, tt.span, ports.ResourceFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var want []ports.QueueTotal
			for _, q := range names {
				want = append(want, ports.QueueTotal{Queue: q, Counters: sumMinutes(data[q], tt.first, tt.last), Partitions: map[string]int64{"billing.a": 1, "ops.b": 1}[q]})
			}
			if !reflect.DeepEqual(totals, want) {
				t.Fatalf("totals:\n%+v\nwant (minutes %d..%d):\n%+v", totals, tt.first, tt.last, want)
			}

			series, err := f.admin.QueueSeries(ctx, tenant, tt.span, ports.ResourceFilter{}, names)
			if err != nil {
				t.Fatal(err)
			}
			bucket := int(tt.span.Bucket / time.Minute)
			var wantSeries []ports.QueueBucket
			for b := tt.first - tt.first%bucket; b <= tt.last; b += bucket {
				for _, q := range names {
					from, to := max(b, tt.first), min(b+bucket-1, tt.last)
					if c := sumMinutes(data[q], from, to); c != (ports.Counters{}) {
						wantSeries = append(wantSeries, ports.QueueBucket{Bucket: anaMin(b), Queue: q, Counters: c})
					}
				}
			}
			if len(series) != len(wantSeries) {
				t.Fatalf("series: %d points, want %d", len(series), len(wantSeries))
			}
			for i := range series {
				if !reflect.DeepEqual(series[i], wantSeries[i]) {
					t.Fatalf("series point %d: %+v\nwant %+v", i, series[i], wantSeries[i])
				}
			}

			ns, err := f.admin.QueueSeries(ctx, tenant, tt.span, ports.ResourceFilter{Namespace: "billing"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ns {
				i := slicesIndexBucket(wantSeries, "billing.a", p.Bucket)
				if i < 0 || wantSeries[i].Counters != p.Counters {
					t.Fatalf("namespace billing, bucket %s: %+v, want billing.a's", p.Bucket, p.Counters)
				}
			}
		})
	}
}

func slicesIndexBucket(s []ports.QueueBucket, queue string, bucket time.Time) int {
	for i, b := range s {
		if b.Queue == queue && b.Bucket.Equal(bucket) {
			return i
		}
	}
	return -1
}
