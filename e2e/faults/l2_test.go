package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// copierEnv, when set to a broker URL, makes the test binary a copier of L2 instead of
// running the tests: a process of its own, so that SIGKILL is real.
const copierEnv = "QUEEN_FAULTS_COPIER"

// The L2 queues and the copiers' group.
const (
	l2In, l2Out, l2Group = "l2-in", "l2-out", "copy"
)

// runCopier pops batches of l2-in and copies each in one transaction: the acks of the
// batch and the push of the same payloads, transaction ids and partitions to l2-out.
// It runs until killed. A transaction that fails is not retried: the lease expires and
// the span comes again (a rolled-back duplicate means it was committed already).
func runCopier(base string) int {
	c := &http.Client{Timeout: 30 * time.Second}
	for {
		resp, err := c.Get(base + "/api/v1/pop/queue/" + l2In + "?batch=50&consumerGroup=" + l2Group + "&wait=true&timeout=1000")
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			if resp.StatusCode != http.StatusNoContent {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		var p popped
		if err := json.Unmarshal(raw, &p); err != nil {
			fmt.Fprintln(os.Stderr, "copier: pop answer:", err)
			continue
		}
		ops := make([]map[string]any, 0, len(p.Messages)+1)
		items := make([]map[string]any, 0, len(p.Messages))
		for _, m := range p.Messages {
			ops = append(ops, map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"status": "completed", "consumerGroup": l2Group, "leaseId": m.LeaseID})
			items = append(items, map[string]any{"queue": l2Out, "partition": m.Partition, "payload": m.Data,
				"transactionId": m.TransactionID})
		}
		ops = append(ops, map[string]any{"type": "push", "items": items})
		body, _ := json.Marshal(map[string]any{"operations": ops})
		if resp, err := c.Post(base+"/api/v1/transaction", "application/json", bytes.NewReader(body)); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}

// copier is one copier process.
type copier struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startCopier(t *testing.T, url string) *copier {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), copierEnv+"="+url)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &copier{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	return c
}

func (c *copier) kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// TestFaultL2TransactionalCopy: docs/reliability.md's L2. Four copier processes move l2-in to
// l2-out with one transaction per batch (ack in, push out, same transaction ids);
// copiers are killed three times and the broker twice along the way. At the end l2-out
// holds l2-in exactly: the same messages, none twice, each partition in the same order.
func TestFaultL2TransactionalCopy(t *testing.T) {
	total := sized(5000, 20000)
	const partitions = 16
	db := pg.newDatabase(t)
	b := startBroker(t, db, nil)
	a := newAPI(t, b)
	// A killed copier's lease expires in 3 s; its span goes to another copier.
	a.configure(l2In, map[string]any{"leaseTime": 3})
	perPart := (total + partitions - 1) / partitions // at least total, the same in every partition
	for p := range partitions {
		for from := 0; from < perPart; from += 100 {
			var items []pushItem
			for s := from; s < min(from+100, perPart); s++ {
				items = append(items, pushItem{Queue: l2In, Partition: fmt.Sprintf("p%02d", p), TransactionID: fmt.Sprintf("in-%02d-%05d", p, s),
					Payload: json.RawMessage(fmt.Sprintf(`{"p":%d,"seq":%d}`, p, s))})
			}
			for _, r := range a.push(items...) {
				if r.Status != "queued" {
					t.Fatalf("seeding l2-in: %+v", r)
				}
			}
		}
	}
	seeded := int64(perPart * partitions)

	var mu sync.Mutex
	copiers := make([]*copier, 4)
	for i := range copiers {
		copiers[i] = startCopier(t, b.URL)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range copiers {
			c.kill()
		}
	})
	copied := func() int64 {
		return queryInt(t, db, `SELECT coalesce(sum(lp.last_offset + 1), 0) FROM queen.log_partitions lp
			JOIN queen.queues q ON q.id = lp.queue_id WHERE q.name = $1`, l2Out)
	}
	// Faults at progress steps: copiers killed at 20, 40 and 60 %, the broker at 30 and 70 %.
	steps := []struct {
		at     float64
		broker bool
	}{{0.2, false}, {0.3, true}, {0.4, false}, {0.6, false}, {0.7, true}}
	began := time.Now()
	deadline := began.Add(sized(4*time.Minute, 10*time.Minute))
	for len(steps) > 0 && time.Now().Before(deadline) {
		if float64(copied()) < steps[0].at*float64(seeded) {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if steps[0].broker {
			b.kill()
			b.restart()
		} else {
			mu.Lock()
			i := rand.IntN(len(copiers))
			copiers[i].kill()
			copiers[i] = startCopier(t, b.URL)
			mu.Unlock()
		}
		steps = steps[1:]
	}
	for copied() < seeded && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(began)
	if len(steps) > 0 {
		t.Errorf("%d faults not injected: the copy stalled at %d of %d", len(steps), copied(), seeded)
	}
	// l2-out, partition by partition, must be l2-in: every sequence once, in order.
	pass := true
	delivered := int64(0)
	for p := range partitions {
		var seqs []int
		for {
			got := a.pop(fmt.Sprintf("%s/partition/p%02d?batch=1000&consumerGroup=verify", l2Out, p))
			if got == nil {
				break
			}
			for _, m := range got.Messages {
				var v struct{ Seq int }
				if err := json.Unmarshal(m.Data, &v); err != nil {
					t.Fatalf("l2-out message %s: %v", m.ID, err)
				}
				seqs = append(seqs, v.Seq)
			}
			a.ack("verify", got, "", "completed", "")
		}
		delivered += int64(len(seqs))
		for i, s := range seqs {
			if s != i {
				pass = false
				t.Errorf("l2-out p%02d: position %d holds seq %d (%d messages, want 0..%d in order)", p, i, s, len(seqs), perPart-1)
				break
			}
		}
		if len(seqs) != perPart {
			pass = false
			t.Errorf("l2-out p%02d: %d messages, want %d", p, len(seqs), perPart)
		}
	}
	checkInvariants(t, db, l2In, []string{l2Group})
	checkInvariants(t, db, l2Out, []string{"verify"})
	t.Logf("L2: %d messages copied in %v with 3 copier kills and 2 broker kills", delivered, took.Round(time.Millisecond))
	recordTargeted(fmt.Sprintf("L2 transactional copy (%d, copiers kill -9 x3, broker x2)", seeded), seeded, delivered, 0, pass && !t.Failed())
}
