package queen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Helpers shared by the broker benchmarks (bench_test.go, bench_consume_test.go).

// benchDuration is how long each measured phase runs (QUEEN_BENCH_SECONDS, default 10).
func benchDuration() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("QUEEN_BENCH_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 10 * time.Second
}

// loadResult is what one measured phase observed.
type loadResult struct {
	msgs, requests, errors int64
	elapsed                time.Duration
	cpuBusy                float64 // fraction of all cores busy during the phase (from /proc/stat)
}

// cpuTimes reads the machine's busy and total jiffies.
func cpuTimes() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	var user, nice, system, idle, iowait, irq, softirq, steal float64
	fmt.Sscanf(string(b), "cpu %f %f %f %f %f %f %f %f", &user, &nice, &system, &idle, &iowait, &irq, &softirq, &steal)
	busy = user + nice + system + irq + softirq + steal
	return busy, busy + idle + iowait
}

func (r loadResult) rate() float64 { return float64(r.msgs) / r.elapsed.Seconds() }

// plus combines two phases of the same kind, weighting CPU use by duration.
func (r loadResult) plus(o loadResult) loadResult {
	total := r.elapsed + o.elapsed
	return loadResult{
		msgs: r.msgs + o.msgs, requests: r.requests + o.requests, errors: r.errors + o.errors,
		elapsed: total,
		cpuBusy: (r.cpuBusy*r.elapsed.Seconds() + o.cpuBusy*o.elapsed.Seconds()) / total.Seconds(),
	}
}

// errLoadDone, returned by a load operation, ends its worker early without counting an
// error (the work ran out).
var errLoadDone = errors.New("load done")

// runLoad runs workers until d elapses or every worker is done; each call of op sends
// one request and reports how many messages it carried.
func runLoad(workers int, d time.Duration, op func(worker, seq int) (int, error)) loadResult {
	var msgs, reqs, errs atomic.Int64
	busy0, total0 := cpuTimes()
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for seq := 0; time.Now().Before(deadline); seq++ {
				n, err := op(w, seq)
				if errors.Is(err, errLoadDone) {
					return
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				reqs.Add(1)
				msgs.Add(int64(n))
			}
		})
	}
	wg.Wait()
	busy1, total1 := cpuTimes()
	return loadResult{msgs: msgs.Load(), requests: reqs.Load(), errors: errs.Load(), elapsed: time.Since(start),
		cpuBusy: (busy1 - busy0) / max(total1-total0, 1)}
}

// rawClient is a minimal keep-alive HTTP/1.1 client for the load generator: net/http's
// client costs more CPU per request than the broker's whole push path, and on a 2-core
// machine the load generator's CPU is taken from the system under test. One goroutine
// sends requests; close may be called from any goroutine to end a parked request.
type rawClient struct {
	addr   string
	mu     sync.Mutex // guards conn and closed against close
	closed bool
	conn   net.Conn
	br     *bufio.Reader
	buf    []byte
	body   []byte // the last response body kept by do
}

func newRawClient(a *testApp) *rawClient {
	return &rawClient{addr: strings.TrimPrefix(a.URL, "http://")}
}

// post sends one POST and returns the status code; the body is read and dropped.
func (c *rawClient) post(path string, body []byte) (int, error) {
	code, _, err := c.send("POST", path, body, false)
	return code, err
}

// do sends one request and returns the status code and the response body, valid until
// the next call.
func (c *rawClient) do(method, path string, body []byte) (int, []byte, error) {
	return c.send(method, path, body, true)
}

func (c *rawClient) send(method, path string, body []byte, keep bool) (int, []byte, error) {
	conn, err := c.connect()
	if err != nil {
		return 0, nil, err
	}
	c.buf = fmt.Appendf(c.buf[:0], "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, c.addr)
	if body != nil {
		c.buf = fmt.Appendf(c.buf, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	c.buf = append(c.buf, "\r\n"...)
	c.buf = append(c.buf, body...)
	code, resp, err := c.roundTrip(conn, keep)
	if err != nil {
		c.mu.Lock()
		conn.Close()
		if c.conn == conn {
			c.conn = nil
		}
		c.mu.Unlock()
	}
	return code, resp, err
}

func (c *rawClient) connect() (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, net.ErrClosed
	}
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			return nil, err
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 64<<10)
	}
	return c.conn, nil
}

// close closes the connection (ending a request in flight) and refuses further requests.
func (c *rawClient) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

func (c *rawClient) roundTrip(conn net.Conn, keep bool) (int, []byte, error) {
	if _, err := conn.Write(c.buf); err != nil {
		return 0, nil, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	var code int
	if _, err := fmt.Sscanf(string(line), "HTTP/1.1 %d", &code); err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length, chunked := -1, false
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		if len(h) <= 2 {
			break
		}
		k, v, ok := strings.Cut(string(h), ":")
		switch {
		case !ok:
		case strings.EqualFold(k, "Content-Length"):
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		case strings.EqualFold(k, "Transfer-Encoding"):
			chunked = strings.EqualFold(strings.TrimSpace(v), "chunked")
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		// Large answers (a pop of 100 messages) come in chunks.
		for {
			line, err := c.br.ReadSlice('\n')
			if err != nil {
				return 0, nil, err
			}
			size, err := strconv.ParseInt(strings.TrimSpace(string(line)), 16, 32)
			if err != nil {
				return 0, nil, fmt.Errorf("bad chunk size %q", line)
			}
			n := len(c.body)
			c.body = slices.Grow(c.body, int(size)+2)[:n+int(size)+2]
			if _, err := io.ReadFull(c.br, c.body[n:]); err != nil {
				return 0, nil, err
			}
			c.body = c.body[:n+int(size)] // drop the chunk's CRLF
			if size == 0 {
				return code, c.body, nil // no trailers: the last chunk's CRLF ended the answer
			}
		}
	case length < 0 && code == 204:
		return code, c.body, nil
	case length < 0:
		return 0, nil, fmt.Errorf("response without Content-Length")
	case !keep:
		_, err = c.br.Discard(length)
		return code, nil, err
	}
	c.body = slices.Grow(c.body, length)[:length]
	_, err = io.ReadFull(c.br, c.body)
	return code, c.body, err
}

// settle lets the background work of the previous phase (checkpoint, autovacuum) finish
// so that it does not weigh on the next one.
func settle(b *testing.B, url string) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second)
}

// percentile returns the p-quantile (0..1) of sorted durations, in milliseconds.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(p*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}
