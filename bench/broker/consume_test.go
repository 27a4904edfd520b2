package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// benchPop is the part of a pop answer the consume benchmarks read.
type benchPop struct {
	Messages []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
		Data          struct {
			T int64 `json:"t"` // send time (Unix ns) in the latency benchmark's payloads
		} `json:"data"`
	} `json:"messages"`
}

// popAndAck pops with path (a 204 gives 0 messages) and acknowledges everything popped in
// one ack/batch as completed. The pop's answer is passed to seen, if not nil, as soon as
// it arrives.
func popAndAck(c *rawClient, buf *[]byte, path string, seen func(p *benchPop, at time.Time)) (n int, pop, ack time.Duration, err error) {
	t0 := time.Now()
	code, body, err := c.do(http.MethodGet, path, nil)
	t1 := time.Now()
	if err != nil {
		return 0, 0, 0, err
	}
	if code == http.StatusNoContent {
		return 0, t1.Sub(t0), 0, nil
	}
	var p benchPop
	if code != http.StatusOK {
		return 0, 0, 0, fmt.Errorf("pop: status %d: %s", code, body)
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return 0, 0, 0, fmt.Errorf("pop: %w", err)
	}
	if seen != nil {
		seen(&p, t1)
	}
	b := append((*buf)[:0], `{"acknowledgments":[`...)
	for i, m := range p.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, `{"transactionId":%q,"partitionId":%q,"leaseId":%q,"status":"completed"}`,
			m.TransactionID, m.PartitionID, m.LeaseID)
	}
	b = append(b, `]}`...)
	*buf = b
	code, body, err = c.do(http.MethodPost, "/api/v1/ack/batch", b)
	t2 := time.Now()
	if err != nil {
		return 0, 0, 0, err
	}
	if code != http.StatusOK || bytes.Contains(body, []byte(`"success":false`)) {
		return 0, 0, 0, fmt.Errorf("ack: status %d: %.300s", code, body)
	}
	return len(p.Messages), t1.Sub(t0), t2.Sub(t1), nil
}

// prefill pushes total messages to queue with requests of 1000 items: 10 partitions of
// 100 consecutive items each, cycling over partitions, so each partition gets its
// messages in segments of 100.
func prefill(b *testing.B, a *broker, queue string, partitions, total int) loadResult {
	b.Helper()
	const perReq, perPart = 1000, 100
	var (
		next     atomic.Int64
		firstErr atomic.Pointer[error]
	)
	workers := 4
	clients := make([]*rawClient, workers)
	bodies := make([][]byte, workers)
	for i := range clients {
		clients[i] = newRawClient(a.URL)
		defer clients[i].close()
	}
	res := runLoad(workers, time.Hour, func(w, _ int) (int, error) {
		r := int(next.Add(1) - 1)
		if r >= total/perReq {
			return 0, errLoadDone
		}
		body := append(bodies[w][:0], `{"items":[`...)
		for i := range perReq {
			if i > 0 {
				body = append(body, ',')
			}
			p := (r*(perReq/perPart) + i/perPart) % partitions
			body = fmt.Appendf(body, `{"queue":%q,"partition":"p%d","transactionId":"r%d-i%d","payload":%s}`,
				queue, p, r, i, benchPayload(r*perReq+i))
		}
		body = append(body, `]}`...)
		bodies[w] = body
		if err := clients[w].push(body); err != nil {
			firstErr.CompareAndSwap(nil, &err)
			return 0, errLoadDone
		}
		return perReq, nil
	})
	if err := firstErr.Load(); err != nil {
		b.Fatalf("prefill push: %v", *err) // a missing message makes the measured phase meaningless
	}
	return res
}

// unconsumed counts the messages of queue after the queue-mode group's cursors.
func unconsumed(b *testing.B, db *pgxpool.Pool, queue string) int64 {
	b.Helper()
	var n int64
	err := db.QueryRow(context.Background(), `SELECT coalesce(sum(lp.last_offset - coalesce(lc.committed, lp.log_start - 1)), 0)
		  FROM queen.log_partitions lp JOIN queen.queues q ON q.id = lp.queue_id
		  LEFT JOIN queen.log_consumers lc ON lc.partition_id = lp.id AND lc.consumer_group = '__QUEUE_MODE__'
		 WHERE q.name = $1`, queue).Scan(&n)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// durations collects samples from several goroutines.
type durations struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *durations) add(d ...time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d...)
	s.mu.Unlock()
}

func (s *durations) sorted() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.Sort(s.d)
	return s.d
}

// BenchmarkPopAck: throughput of the consume path. A queue of 1000 partitions is
// prefilled (40,000 messages per second of QUEEN_BENCH_SECONDS, at least 200,000;
// timed apart), then 8 consumers pop (wildcard, batch=100) and ack everything popped in
// one ack/batch, until QUEEN_BENCH_SECONDS (10) elapse or the queue is drained. Reports
// acked msgs/s and the pop+ack cycle's p50/p99. Run with -benchtime 1x.
func BenchmarkPopAck(b *testing.B) {
	const (
		queue     = "bench-popack"
		consumers = 8
		popPath   = "/api/v1/pop/queue/" + queue + "?batch=100"
	)
	d := benchDuration()
	total := max(200_000, int(40_000*d.Seconds())) / 1000 * 1000
	b.ReportAllocs()
	for b.Loop() {
		a := startBroker(b, nil)
		db, err := pgxpool.New(context.Background(), a.DB)
		if err != nil {
			b.Fatal(err)
		}
		fill := prefill(b, a, queue, benchPartitions, total)
		b.Logf("prefill: %d messages in %v (%.0f msgs/s)", fill.msgs, fill.elapsed.Round(time.Millisecond), fill.rate())
		settle(b, a.DB)

		clients := make([]*rawClient, consumers)
		bufs := make([][]byte, consumers)
		for i := range clients {
			clients[i] = newRawClient(a.URL)
		}
		var (
			acked, empties atomic.Int64
			firstErr       atomic.Pointer[error]
			pops, acks     durations
			cycles         durations
		)
		res := runLoad(consumers, d, func(w, _ int) (int, error) {
			if acked.Load() >= int64(total) {
				return 0, errLoadDone
			}
			n, pop, ack, err := popAndAck(clients[w], &bufs[w], popPath, nil)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return 0, err
			}
			if n == 0 {
				empties.Add(1)
				return 0, nil
			}
			acked.Add(int64(n))
			pops.add(pop)
			acks.add(ack)
			cycles.add(pop + ack)
			return n, nil
		})
		for _, c := range clients {
			c.close()
		}
		left := unconsumed(b, db, queue)
		db.Close()
		cyc := cycles.sorted()
		b.ReportMetric(res.rate(), "msgs/s")
		b.ReportMetric(percentile(cyc, 0.50), "p50_ms")
		b.ReportMetric(percentile(cyc, 0.99), "p99_ms")
		b.ReportMetric(percentile(pops.sorted(), 0.50), "pop-p50_ms")
		b.ReportMetric(percentile(acks.sorted(), 0.50), "ack-p50_ms")
		b.Logf("pop+ack: %d msgs acked in %v = %.0f msgs/s (%d pops, %d empty, %d errors, cpu %.0f%%); %d left unconsumed; "+
			"cycle p50 %.1f ms p99 %.1f ms, pop p50 %.1f ms p99 %.1f ms, ack p50 %.1f ms p99 %.1f ms",
			res.msgs, res.elapsed.Round(time.Millisecond), res.rate(), res.requests, empties.Load(), res.errors,
			100*res.cpuBusy, left, percentile(cyc, 0.5), percentile(cyc, 0.99),
			percentile(pops.sorted(), 0.5), percentile(pops.sorted(), 0.99),
			percentile(acks.sorted(), 0.5), percentile(acks.sorted(), 0.99))
		if res.errors > 0 {
			b.Errorf("%d errors during the run, the first: %v", res.errors, *firstErr.Load())
		}
		if want := int64(total) - res.msgs; left != want {
			b.Errorf("%d messages unconsumed, want %d (pushed %d, acked %d)", left, want, total, res.msgs)
		}
	}
}

// BenchmarkPushToPopLatency: a paced producer pushes single messages at 500 msgs/s over
// 100 partitions for QUEEN_BENCH_SECONDS (10), each payload carrying its send time; 8
// long-polling consumers (wait=true, batch=100, partitions=10) note the arrival time and
// ack. Reports the p50/p99 push-to-pop latency and the backlog: messages unconsumed when
// the producer stops (backlog), and the largest pushed-minus-acked count sampled during
// the run. Messages sent in the first second (the warm-up: queue, partitions and cursors
// are created) are left out of the latency and send-lag percentiles.
func BenchmarkPushToPopLatency(b *testing.B) {
	const (
		queue      = "bench-latency"
		partitions = 100
		rate       = 500
		senders    = 32 // enough that slow pushes (p99 ~50 ms) do not hold the pace back
		consumers  = 8
		popPath    = "/api/v1/pop/queue/" + queue + "?wait=true&timeout=30000&batch=100&partitions=10"
		warmup     = time.Second
	)
	d := benchDuration()
	b.ReportAllocs()
	for b.Loop() {
		a := startBroker(b, nil)
		db, err := pgxpool.New(context.Background(), a.DB)
		if err != nil {
			b.Fatal(err)
		}
		var (
			pushed, acked, sendErrs, popErrs atomic.Int64
			pops                             atomic.Int64 // answers with messages
			maxBacklog                       atomic.Int64
			lat, lag, pushLat                durations
			stopping                         atomic.Bool
			wg                               sync.WaitGroup
		)
		start := time.Now()
		end := start.Add(d)
		measureFrom := start.Add(warmup).UnixNano()

		// Consumers park before the first push.
		cons := make([]*rawClient, consumers)
		for c := range cons {
			cons[c] = newRawClient(a.URL)
			wg.Go(func() {
				var buf []byte
				var mine []time.Duration
				for !stopping.Load() {
					n, _, _, err := popAndAck(cons[c], &buf, popPath, func(p *benchPop, at time.Time) {
						pops.Add(1)
						for _, m := range p.Messages {
							if m.Data.T >= measureFrom {
								mine = append(mine, time.Duration(at.UnixNano()-m.Data.T))
							}
						}
					})
					if err != nil {
						if !stopping.Load() {
							popErrs.Add(1)
						}
						continue
					}
					acked.Add(int64(n))
				}
				lat.add(mine...)
			})
		}

		// The producer: a pacer hands send slots to senders, each on its own connection.
		type slot struct {
			i  int
			at time.Time
		}
		slots := make(chan slot, rate)
		var sendWG sync.WaitGroup
		for range senders {
			c := newRawClient(a.URL)
			sendWG.Go(func() {
				defer c.close()
				var body []byte
				var myLag, myPush []time.Duration
				for sl := range slots {
					now := time.Now()
					if sl.at.UnixNano() >= measureFrom {
						myLag = append(myLag, now.Sub(sl.at))
					}
					body = fmt.Appendf(body[:0], `{"items":[{"queue":%q,"partition":"p%d","transactionId":"m%d","payload":{"t":%d}}]}`,
						queue, sl.i%partitions, sl.i, now.UnixNano())
					if err := c.push(body); err != nil {
						sendErrs.Add(1)
						continue
					}
					myPush = append(myPush, time.Since(now))
					pushed.Add(1)
				}
				lag.add(myLag...)
				pushLat.add(myPush...)
			})
		}
		monitorDone := make(chan struct{})
		go func() {
			defer close(monitorDone)
			for !stopping.Load() {
				if n := pushed.Load() - acked.Load(); n > maxBacklog.Load() {
					maxBacklog.Store(n)
				}
				pause(50 * time.Millisecond)
			}
		}()
		interval := time.Second / rate
		for i := 0; ; i++ {
			at := start.Add(time.Duration(i) * interval)
			if !at.Before(end) {
				break
			}
			pause(time.Until(at))
			slots <- slot{i, at}
		}
		close(slots)
		sendWG.Wait()
		elapsed := time.Since(start)
		backlog := unconsumed(b, db, queue)

		// Drain, then unpark the consumers.
		drainStart := time.Now()
		for unconsumed(b, db, queue) > 0 && time.Since(drainStart) < 30*time.Second {
			pause(20 * time.Millisecond)
		}
		drain := time.Since(drainStart)
		left := unconsumed(b, db, queue)
		stopping.Store(true)
		for _, c := range cons {
			c.close()
		}
		wg.Wait()
		<-monitorDone
		db.Close()

		l := lat.sorted()
		lg, pl := lag.sorted(), pushLat.sorted()
		sent := pushed.Load()
		b.ReportMetric(float64(sent)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(percentile(l, 0.50), "p50_ms")
		b.ReportMetric(percentile(l, 0.99), "p99_ms")
		b.ReportMetric(percentile(pl, 0.50), "push-p50_ms")
		b.ReportMetric(float64(backlog), "backlog")
		b.ReportMetric(float64(maxBacklog.Load()), "backlog-max")
		b.Logf("latency: %d msgs pushed in %v (%.0f msgs/s, %d push errors; push answered in p50 %.1f ms p99 %.1f ms; send lag p50 %.2f ms p99 %.2f ms), %d acked in %d pops, %d pop/ack errors; "+
			"push-to-pop p50 %.1f ms p90 %.1f ms p99 %.1f ms max %.1f ms over %d msgs; backlog at the end %d (max %d), drained in %v",
			sent, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), sendErrs.Load(), percentile(pl, 0.5), percentile(pl, 0.99),
			percentile(lg, 0.5), percentile(lg, 0.99), acked.Load(), pops.Load(), popErrs.Load(),
			percentile(l, 0.5), percentile(l, 0.9), percentile(l, 0.99), percentile(l, 1), len(l),
			backlog, maxBacklog.Load(), drain.Round(time.Millisecond))
		if sendErrs.Load() > 0 || popErrs.Load() > 0 || left > 0 {
			b.Errorf("%d push errors, %d pop/ack errors, %d messages never consumed", sendErrs.Load(), popErrs.Load(), left)
		}
	}
}
