package broker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkAckBatch: the cost of one POST /api/v1/ack/batch by its size. For each layout
// and size (10 to 5,000 items), every round pushes a fresh backlog, pops it whole under
// one lease, and times the one ack/batch that completes every message, then the same
// acks again without their lease (a client's retry: every item is below the cursor by
// then, and the lease is gone). Only those two
// calls are timed. Layouts: one partition or 100, with backlogs pushed in segments of 10
// messages per partition (a steady producer), and one partition whose backlog is one
// segment (one big push: its hash sidecar row is stored out of line). Reports µs per
// acked item, which must stay flat as the batch grows. Run with -benchtime 3x (make
// bench-ack).
func BenchmarkAckBatch(b *testing.B) {
	a := startBroker(b, nil)
	c := newRawClient(a.URL)
	defer c.close()
	layouts := []struct {
		name       string
		parts, seg int // seg 0: the whole backlog in one segment
	}{
		{"partitions=1/segment=10", 1, 10},
		{"partitions=100/segment=10", 100, 10},
		{"partitions=1/segment=all", 1, 0},
	}
	for _, l := range layouts {
		for _, n := range []int{10, 100, 1000, 5000} {
			b.Run(fmt.Sprintf("%s/items=%d", l.name, n), func(b *testing.B) {
				b.ReportAllocs()
				var first, retry []float64
				round := 0
				for b.Loop() {
					b.StopTimer()
					queue := fmt.Sprintf("ack-bench-%d-%d-%d-%d", l.parts, l.seg, n, round)
					round++
					ackBenchFill(b, c, queue, l.parts, l.seg, n)
					body, again := ackBenchPop(b, c, queue, l.parts, n)
					b.StartTimer()
					first = append(first, ackBenchCall(b, c, body, n, false))
					retry = append(retry, ackBenchCall(b, c, again, n, true))
				}
				slices.Sort(first)
				slices.Sort(retry)
				b.ReportMetric(first[len(first)/2], "µs/item")
				b.ReportMetric(first[len(first)/2]*float64(n)/1000, "ms/call")
				b.ReportMetric(retry[len(retry)/2], "retry-µs/item")
			})
		}
	}
}

// ackBenchCall posts one ack/batch of n items, checks that every item succeeded (as a
// no-op when noop), and returns the call's wall time in µs per item.
func ackBenchCall(b *testing.B, c *rawClient, body []byte, n int, noop bool) float64 {
	t0 := time.Now()
	code, resp, err := c.do(http.MethodPost, "/api/v1/ack/batch", body)
	d := time.Since(t0)
	b.StopTimer()
	defer b.StartTimer()
	if err != nil || code != http.StatusOK {
		b.Fatalf("ack: %d %v %.300s", code, err, resp)
	}
	var res []struct {
		Success bool    `json:"success"`
		Error   *string `json:"error"`
		Noop    bool    `json:"noop"`
	}
	if err := json.Unmarshal(resp, &res); err != nil || len(res) != n {
		b.Fatalf("ack answer (%d items): %v %.300s", n, err, resp)
	}
	for i, r := range res {
		if !r.Success || r.Noop != noop {
			b.Fatalf("ack item %d: %+v (want noop %v)", i, r, noop)
		}
	}
	return float64(d.Microseconds()) / float64(n)
}

// ackBenchFill pushes n messages to queue spread evenly over parts partitions, in
// requests that give each partition a segment of seg messages (0: all of them at once).
func ackBenchFill(b *testing.B, c *rawClient, queue string, parts, seg, n int) {
	b.Helper()
	per := max(n/parts, 1)
	if seg == 0 {
		seg = per
	}
	var body []byte
	for base := 0; base < per; base += seg {
		body = append(body[:0], `{"items":[`...)
		k := 0
		for p := range min(parts, n) {
			for i := base; i < min(base+seg, per); i++ {
				if k > 0 {
					body = append(body, ',')
				}
				k++
				body = fmt.Appendf(body, `{"queue":%q,"partition":"p%d","transactionId":"p%d-m%d","payload":{"i":%d}}`,
					queue, p, p, i, i)
			}
		}
		body = append(body, `]}`...)
		if err := c.push(body); err != nil {
			b.Fatal(err)
		}
	}
}

// ackBenchPop pops queue's whole backlog of n messages under one lease and returns the
// ack/batch body that completes all of it, and the same without the lease.
func ackBenchPop(b *testing.B, c *rawClient, queue string, parts, n int) (body, again []byte) {
	b.Helper()
	code, raw, err := c.do(http.MethodGet,
		fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&partitions=%d&wait=false", queue, n, parts), nil)
	if err != nil || code != http.StatusOK {
		b.Fatalf("pop: %d %v %.300s", code, err, raw)
	}
	var p benchPop
	if err := json.Unmarshal(raw, &p); err != nil {
		b.Fatal(err)
	}
	if len(p.Messages) != n {
		b.Fatalf("pop: %d messages, want %d", len(p.Messages), n)
	}
	body, again = []byte(`{"acknowledgments":[`), []byte(`{"acknowledgments":[`)
	for i, m := range p.Messages {
		if i > 0 {
			body, again = append(body, ','), append(again, ',')
		}
		body = fmt.Appendf(body, `{"transactionId":%q,"partitionId":%q,"leaseId":%q,"status":"completed"}`,
			m.TransactionID, m.PartitionID, m.LeaseID)
		again = fmt.Appendf(again, `{"transactionId":%q,"partitionId":%q,"status":"completed"}`,
			m.TransactionID, m.PartitionID)
	}
	return append(body, `]}`...), append(again, `]}`...)
}
