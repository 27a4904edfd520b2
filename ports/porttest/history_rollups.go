package porttest

import (
	"cmp"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// rollupWidths are the widths of the rollups a writer keeps, in minutes.
var rollupWidths = []int{5, 60}

// rollupBucket is the first minute of the width-minute bucket holding m, aligned on the
// Unix epoch (schema/016_metrics.sql).
func rollupBucket(m time.Time, width int) time.Time {
	sec := m.Unix()
	w := int64(width) * 60
	return time.Unix(sec-((sec%w)+w)%w, 0).UTC()
}

// sumRollups is what the rollups of width hold for minutes: per bucket, tenant and queue
// the counters summed but the maxima (lag and parked), which take the largest minute's.
func sumRollups(minutes []ports.QueueMinute, width int) []ports.QueueMinute {
	type key struct {
		bucket        time.Time
		tenant, queue string
	}
	sums := map[key]*ports.QueueMinute{}
	var keys []key
	for _, m := range minutes {
		k := key{rollupBucket(m.Minute, width), m.Tenant, m.Queue}
		r, ok := sums[k]
		if !ok {
			r = &ports.QueueMinute{Minute: k.bucket, Tenant: k.tenant, Queue: k.queue}
			sums[k] = r
			keys = append(keys, k)
		}
		parked := max(r.ParkedMax, m.ParkedMax)
		r.Counters.Add(m.Counters)
		r.ParkedMax = parked
	}
	out := make([]ports.QueueMinute, 0, len(keys))
	for _, k := range keys {
		out = append(out, *sums[k])
	}
	sortQueueRows(out)
	return out
}

func sortQueueRows(rows []ports.QueueMinute) {
	slices.SortFunc(rows, func(a, b ports.QueueMinute) int {
		return cmp.Or(a.Minute.Compare(b.Minute), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Queue, b.Queue))
	})
}

// wantRollups checks that every rollup equals the sums of minutes (the stored minute
// rows), when the fixture reads rollups.
func wantRollups(t *testing.T, f MetricsFixture, minutes []ports.QueueMinute) {
	t.Helper()
	if f.Rollups == nil {
		return
	}
	for _, w := range rollupWidths {
		got := f.Rollups(t, w)
		for i := range got {
			got[i].Minute = got[i].Minute.UTC()
		}
		sortQueueRows(got)
		want := sumRollups(minutes, w)
		if len(got) != len(want) {
			t.Fatalf("%d-minute rollups:\n%s\nwant:\n%s", w, dump(got), dump(want))
		}
		for i := range got {
			if !got[i].Minute.Equal(want[i].Minute) || got[i].Tenant != want[i].Tenant || got[i].Queue != want[i].Queue ||
				got[i].Counters != want[i].Counters {
				t.Fatalf("%d-minute rollup %d:\n%+v\nwant:\n%+v", w, i, got[i], want[i])
			}
		}
	}
}

// testMetricsRollups: minutes on both sides of 5- and 60-minute boundaries, written by
// two brokers in several flushes (one flush holding several minutes of one bucket, as a
// flush after an outage does), parked maxima rising and falling: every rollup equals
// its minutes.
func testMetricsRollups(t *testing.T, f MetricsFixture) {
	at := func(min int) time.Time { return minute0.Add(time.Duration(min) * time.Minute) }
	row := func(min int, queue string, base, parked int64) ports.QueueMinute {
		q := ports.QueueMinute{Minute: at(min), Tenant: ports.DefaultTenant, Queue: queue, Counters: counters(base, true)}
		q.ParkedMax = parked
		return q
	}
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{
		row(-2, "orders", 0, 4), row(-1, "orders", 10, 9), row(0, "orders", 20, 2), row(4, "orders", 30, 1),
		row(5, "orders", 40, 3), row(61, "orders", 50, 5), row(0, "audit", 60, 0),
	}})
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceB, Seq: 1, Queues: []ports.QueueMinute{
		row(0, "orders", 100, 8), row(1, "orders", 110, 1), row(-1, "orders", 120, 1),
	}})
	writeMetrics(t, f, ports.MetricsFlush{Instance: instanceA, Seq: 1, Queues: []ports.QueueMinute{ // a retry: nothing
		row(0, "orders", 1000, 100),
	}})
	got := queueRows(t, f)
	if len(got) != 8 {
		t.Fatalf("queue rows:\n%s\nwant 8", dump(got))
	}
	wantRollups(t, f, got)
	if f.Rollups != nil {
		if n := len(f.Rollups(t, 60)); n != 4 { // orders 11:00, 12:00, 13:00; audit 12:00
			t.Fatalf("60-minute rollups: %d rows, want 4", n)
		}
	}
}
