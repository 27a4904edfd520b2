package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// ledger checks that a queue delivers, per partition, exactly the sequences pushed, once
// each and in order: it pops every partition to the end in queue mode and acks.
func (b *broker) ledger(t testing.TB, queue string, want map[string][]int) {
	t.Helper()
	for part, seqs := range want {
		var got []int
		for {
			p := b.pop(t, "/api/v1/pop/queue/"+queue+"/partition/"+part+"?batch=1000")
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
			b.ackAll(t, p, "")
		}
		if !slices.Equal(got, seqs) {
			t.Fatalf("partition %s delivered %v, want %v", part, got, seqs)
		}
	}
}

// TestSpoolOutage takes PostgreSQL away from a running broker: pushes keep answering
// (buffered, quickly), and once the database is back every message is delivered exactly
// once, in per-partition order, including pushes made after the return to partitions
// that still had spooled records.
func TestSpoolOutage(t *testing.T) {
	t.Parallel()
	proxy, db := newPGProxy(t, pgtest.NewDatabase(t))
	b := startBrokerOn(t, db, map[string]string{"DB_STATEMENT_TIMEOUT": "5000", "FILE_BUFFER_FLUSH_MS": "20"})

	const parts = 4
	want := map[string][]int{}
	seq := 0
	push := func(wantStatus ...string) {
		t.Helper()
		for p := range parts {
			part := fmt.Sprintf("p%d", p)
			t0 := time.Now()
			res := b.push(t, map[string]any{"queue": "outage", "partition": part, "payload": map[string]int{"seq": seq},
				"transactionId": fmt.Sprintf("%s-%d", part, seq)})
			if took := time.Since(t0); took > 2*time.Second {
				t.Fatalf("push took %s", took)
			}
			if !slices.Contains(wantStatus, res[0].Status) {
				t.Fatalf("push %s/%d: status %q, want one of %v", part, seq, res[0].Status, wantStatus)
			}
			want[part] = append(want[part], seq)
		}
		seq++
	}
	for range 5 {
		push("queued")
	}
	proxy.cut()
	for range 10 {
		push("buffered")
	}
	if n, _, _ := b.bufferStatus(t); n != 10*parts {
		t.Fatalf("%d records spooled, want %d", n, 10*parts)
	}
	proxy.restore(t)
	for range 5 {
		push("buffered", "queued") // behind the spooled records of the same partition
	}
	b.waitDrained(t, 30*time.Second)
	b.ledger(t, "outage", want)
}

// TestStartDuringOutage starts a broker while its database is unreachable (and has no
// schema yet): it serves instead of exiting, spools pushes, answers pops 503 and /ready
// 200 (the spool takes pushes); once the database answers, the first connection applies
// the schema and the spool replays in order.
func TestStartDuringOutage(t *testing.T) {
	t.Parallel()
	proxy, db := newPGProxy(t, pgtest.NewDatabase(t))
	proxy.cut()
	b := startBrokerOn(t, db, map[string]string{"DB_STATEMENT_TIMEOUT": "5000", "FILE_BUFFER_FLUSH_MS": "20"})

	want := map[string][]int{}
	for seq := range 5 {
		for _, part := range []string{"a", "b", "c"} {
			res := b.push(t, map[string]any{"queue": "cold-start", "partition": part, "payload": map[string]int{"seq": seq},
				"transactionId": fmt.Sprintf("%s-%d", part, seq)})
			if res[0].Status != "buffered" {
				t.Fatalf("push %s/%d during the outage: %q, want buffered", part, seq, res[0].Status)
			}
			want[part] = append(want[part], seq)
		}
	}
	if code, body := b.get(t, "/ready"); code != 200 {
		t.Fatalf("/ready during the outage: %d %s, want 200 (the spool takes pushes)", code, body)
	}
	if code, body := b.get(t, "/api/v1/pop/queue/cold-start?wait=false"); code != 503 {
		t.Fatalf("pop during the outage: %d %s, want 503", code, body)
	}
	proxy.restore(t)
	b.waitDrained(t, 30*time.Second)
	if _, failed, _ := b.bufferStatus(t); failed != 0 {
		t.Fatalf("%d records quarantined, want 0", failed)
	}
	b.ledger(t, "cold-start", want)
}
