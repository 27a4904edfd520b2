package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkMessagesBrowse: GET /api/v1/messages with the page Queen's CLI asks for when
// it drains a queue (limit=10000), on a queue of 10,000 messages of 1 KiB over 10
// partitions, against a page of 1,000 (the old maximum) and a browse filtered by status
// (which reads the segment rows in steps). For each it reports the median time of 5
// calls, the answer's size, what the process allocated during a call (broker and the
// raw client, whose read buffer is reused after the first call) and the live heap's peak
// above its level before the call (sampled every millisecond). The broker runs in this
// process. Run with -benchtime 1x (make bench-admin runs it with the other admin routes).
func BenchmarkMessagesBrowse(b *testing.B) {
	const messages, partitions, payloadBytes = 10000, 10, 1024
	routes := []string{
		"/api/v1/messages?queue=browse&limit=1000",
		"/api/v1/messages?queue=browse&limit=10000",
		"/api/v1/messages?queue=browse&limit=10000&status=pending",
	}
	for b.Loop() {
		br := startBroker(b, map[string]string{"LOG_LEVEL": "error"})
		c := newRawClient(br.URL)
		defer c.close()
		t0 := time.Now()
		browseFill(b, c, messages, partitions, payloadBytes)
		b.Logf("fill: %d messages of %d bytes over %d partitions in %v", messages, payloadBytes, partitions,
			time.Since(t0).Round(time.Millisecond))
		for _, route := range routes {
			var times []time.Duration
			var size int
			var alloc, peak uint64
			for range 5 {
				m := measureCall(b, c, route)
				times = append(times, m.elapsed)
				size, alloc, peak = m.size, max(alloc, m.alloc), max(peak, m.peak)
			}
			slices.Sort(times)
			b.Logf("GET %-58s median %7v (min %v, max %v), answer %5.1f MiB, allocated <= %5.1f MiB, heap peak <= +%5.1f MiB",
				route, times[len(times)/2].Round(100*time.Microsecond), times[0].Round(100*time.Microsecond),
				times[len(times)-1].Round(100*time.Microsecond), mib(size), mib(int(alloc)), mib(int(peak)))
		}
	}
}

func mib(n int) float64 { return float64(n) / (1 << 20) }

// browseFill pushes n messages of about size bytes (hex text: compressible by half, as
// real payloads often are) round-robin over the partitions, 500 per request.
func browseFill(b *testing.B, c *rawClient, n, partitions, size int) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, size/2)
	var body []byte
	for i := 0; i < n; {
		body = append(body[:0], `{"items":[`...)
		for k := 0; k < 500 && i < n; k, i = k+1, i+1 {
			if k > 0 {
				body = append(body, ',')
			}
			for j := range raw {
				raw[j] = byte(rng.Uint32())
			}
			body = fmt.Appendf(body, `{"queue":"browse","partition":"p%d","transactionId":"t-%d","payload":{"s":"%x"}}`,
				i%partitions, i, raw[:len(raw)-8])
		}
		body = append(body, `]}`...)
		if err := c.push(body); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
}

// callMeasure is one call: its time, the answer's size, the bytes allocated during it
// and the heap's peak above its level before it.
type callMeasure struct {
	elapsed     time.Duration
	size        int
	alloc, peak uint64
}

// measureCall GETs route once after a full collection, sampling the live heap meanwhile.
func measureCall(b *testing.B, c *rawClient, route string) callMeasure {
	b.Helper()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	base := heap()
	var peak atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if h := heap(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	code, body, err := c.do(http.MethodGet, route, nil)
	elapsed := time.Since(start)
	cancel()
	<-done
	runtime.ReadMemStats(&after)
	if err != nil || code != http.StatusOK {
		b.Fatalf("GET %s: %d %v %.200s", route, code, err, body)
	}
	return callMeasure{elapsed: elapsed, size: len(body), alloc: after.TotalAlloc - before.TotalAlloc,
		peak: max(peak.Load(), base) - base}
}
