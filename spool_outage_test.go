package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal"
)

// bufferStatus reads GET /api/v1/status/buffers.
func (a *testApp) bufferStatus(t testing.TB) (pending int64, healthy bool) {
	t.Helper()
	code, body := a.do(t, http.MethodGet, "/api/v1/status/buffers", "")
	var st struct {
		Pending   int64 `json:"pending"`
		DBHealthy bool  `json:"dbHealthy"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("status/buffers: %d %s", code, body)
	}
	return st.Pending, st.DBHealthy
}

// waitDrained waits until the spool is empty.
func (a *testApp) waitDrained(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if n, _ := a.bufferStatus(t); n == 0 {
			return
		}
		if time.Now().After(deadline) {
			n, h := a.bufferStatus(t)
			t.Fatalf("spool not drained after %s: %d pending, db healthy %v", within, n, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ledger checks that a queue delivers, per partition, exactly the sequences pushed, once
// each and in order: it pops every partition to the end in queue mode and acks.
func (a *testApp) ledger(t testing.TB, queue string, want map[string][]int) {
	t.Helper()
	for part, seqs := range want {
		var got []int
		for {
			p := a.pop(t, "/api/v1/pop/queue/"+queue+"/partition/"+part+"?batch=1000")
			if p == nil {
				break
			}
			for _, m := range p.Messages {
				var d struct{ Seq int }
				if err := json.Unmarshal(m.Data, &d); err != nil {
					t.Fatalf("message %s: %v", m.Data, err)
				}
				got = append(got, d.Seq)
			}
			a.ackAll(t, p, "")
		}
		if fmt.Sprint(got) != fmt.Sprint(seqs) {
			t.Fatalf("partition %s delivered %v, want %v", part, got, seqs)
		}
	}
}

// TestSpoolOutage stops PostgreSQL under a running broker: pushes keep answering (buffered,
// quickly), and once the database is back every message is delivered exactly once, in
// per-partition order, including pushes made after the restart to partitions that still
// had spooled records.
func TestSpoolOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	srv, err := pglocal.Start(ctx, filepath.Join(dir, "pg"), pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	u, _ := url.Parse(srv.URL())
	port, _ := strconv.Atoi(u.Port())
	a := startAppWith(t, srv.URL(), map[string]string{"FILE_BUFFER_DIR": filepath.Join(dir, "spool"),
		"DB_STATEMENT_TIMEOUT": "5000", "FILE_BUFFER_FLUSH_MS": "20"})

	const parts = 4
	want := map[string][]int{}
	seq := 0
	push := func(wantStatus ...string) {
		t.Helper()
		for p := range parts {
			part := fmt.Sprintf("p%d", p)
			t0 := time.Now()
			res := a.push(t, map[string]any{"queue": "outage", "partition": part, "payload": map[string]int{"seq": seq},
				"transactionId": fmt.Sprintf("%s-%d", part, seq)})
			if took := time.Since(t0); took > 2*time.Second {
				t.Fatalf("push took %s", took)
			}
			ok := false
			for _, s := range wantStatus {
				ok = ok || res[0].Status == s
			}
			if !ok {
				t.Fatalf("push %s/%d: status %q, want one of %v", part, seq, res[0].Status, wantStatus)
			}
			want[part] = append(want[part], seq)
		}
		seq++
	}
	for range 5 {
		push("queued")
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		push("buffered")
	}
	if n, _ := a.bufferStatus(t); n != 10*parts {
		t.Fatalf("%d records spooled, want %d", n, 10*parts)
	}
	srv, err = pglocal.Start(ctx, filepath.Join(dir, "pg"), pglocal.Options{Port: port})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		push("buffered", "queued") // behind the spooled records of the same partition
	}
	a.waitDrained(t, 30*time.Second)
	a.ledger(t, "outage", want)
}
