package broker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// spooled fills a spool directory as an outage leaves it: a broker under push
// maintenance answers n single-message pushes over 100 partitions (1000 items per
// request) buffered, and stops. The spool keeps them for the next broker on the
// directory.
func spooled(b *testing.B, dir string, n int) {
	b.Helper()
	p := startBroker(b, map[string]string{"FILE_BUFFER_DIR": dir})
	c := newRawClient(p.URL)
	defer c.close()
	if code, err := c.post("/api/v1/system/maintenance", []byte(`{"enabled":true}`)); err != nil || code != http.StatusOK {
		b.Fatalf("maintenance on: %d %v", code, err)
	}
	var body []byte
	for base := 0; base < n; base += 1000 {
		body = append(body[:0], `{"items":[`...)
		for i := base; i < min(base+1000, n); i++ {
			if i > base {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `{"queue":"replay","partition":"p%d","transactionId":"r-%d","payload":%s}`, i%100, i, benchPayload(i))
		}
		body = append(body, `]}`...)
		code, resp, err := c.do(http.MethodPost, "/api/v1/push", body)
		if err != nil || code != http.StatusCreated {
			b.Fatalf("push: %d %v %.300s", code, err, resp)
		}
		var res []struct{ Status string }
		if err := json.Unmarshal(resp, &res); err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Status != "buffered" {
				b.Fatalf("push under maintenance: status %q, want buffered", r.Status)
			}
		}
	}
	if err := p.stop(); err != nil {
		b.Fatal(err)
	}
}

// pending is the broker's count of spooled records not replayed yet.
func (br *broker) pending(b *testing.B, c *rawClient) int64 {
	code, resp, err := c.do(http.MethodGet, "/api/v1/status/buffers", nil)
	var st struct{ Pending int64 }
	if err != nil || code != http.StatusOK || json.Unmarshal(resp, &st) != nil {
		b.Fatalf("status/buffers: %d %v %.300s", code, err, resp)
	}
	return st.Pending
}

// BenchmarkSpoolReplay measures the drain: records spooled on disk (as an outage leaves
// them: single-message pushes over 100 partitions) replayed into PostgreSQL by a broker
// through fusion, from its first replayed record until the spool is empty (status/buffers
// polled every 2 ms). Run with -benchtime 1x; QUEEN_BENCH_SPOOL_RECORDS sets the count
// (default 20000).
func BenchmarkSpoolReplay(b *testing.B) {
	n := 20000
	if v, err := strconv.Atoi(os.Getenv("QUEEN_BENCH_SPOOL_RECORDS")); err == nil && v > 0 {
		n = v
	}
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "spool")
		spooled(b, dir, n)
		// A broker on another database (maintenance off there) starts draining as soon
		// as it starts: time from its first replayed record to an empty spool, so
		// start-up (schema, pool) is not counted.
		a := startBroker(b, map[string]string{"FILE_BUFFER_DIR": dir, "FILE_BUFFER_FLUSH_MS": "10",
			"FILE_BUFFER_MAX_BATCH": os.Getenv("FILE_BUFFER_MAX_BATCH")})
		c := newRawClient(a.URL)
		tick := time.NewTicker(2 * time.Millisecond)
		left := a.pending(b, c)
		for left == int64(n) {
			<-tick.C
			left = a.pending(b, c)
		}
		first := int64(n) - left
		if left == 0 {
			b.Fatalf("all %d records were replayed before the first look: nothing left to time (raise QUEEN_BENCH_SPOOL_RECORDS)", n)
		}
		start := time.Now()
		b.StartTimer()
		for left > 0 {
			<-tick.C
			left = a.pending(b, c)
		}
		b.StopTimer()
		el := time.Since(start)
		tick.Stop()
		c.close()
		st := a.fusion(b)
		if st.frames != float64(n) {
			b.Fatalf("replayed %.0f of %d records", st.frames, n)
		}
		b.ReportMetric(float64(int64(n)-first)/el.Seconds(), "msgs/s")
		if st.commits > 0 {
			b.ReportMetric(st.segments/st.commits, "segments/commit")
		}
		if err := a.stop(); err != nil {
			b.Fatal(err)
		}
	}
}
