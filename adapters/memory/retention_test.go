package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
	"github.com/queen-go/queen/ports/porttest"
)

func TestRetentionStoreConformance(t *testing.T) {
	porttest.RetentionStore(t, func(*testing.T) porttest.RetentionFixture {
		s := NewStore()
		return porttest.RetentionFixture{Store: s.Retention(), Messages: s.Messages(), Traces: s, AdminWorld: adminWorld(s),
			AddHistory:  func(_ *testing.T, table string, at time.Time, n int) { s.AddHistory(table, at, n) },
			HistoryRows: func(_ *testing.T, table string) int { return s.HistoryRows(table) },
			Runs: func(*testing.T) []porttest.RecordedRun {
				var out []porttest.RecordedRun
				for _, r := range s.RetentionRuns() {
					out = append(out, porttest.RecordedRun{RanAt: r.RanAt, RetentionRun: r.RetentionRun})
				}
				return out
			},
		}
	})
}

// retKit is a store on a test clock with helpers for the memory-only retention cases.
type retKit struct {
	t   *testing.T
	s   *Store
	now time.Time
}

func newRetKit(t *testing.T) *retKit {
	t.Helper()
	t.Parallel()
	k := &retKit{t: t, s: NewStore(), now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	k.s.Now = func() time.Time { return k.now } // only the test's goroutine moves it
	return k
}

// configure sets queue's options: the schema's defaults changed by set.
func (k *retKit) configure(queue string, set func(*ports.QueueConfig)) {
	cfg := ports.QueueConfig{Name: queue, QueueOptions: defaultOptions()}
	cfg.DedupWindowSeconds = 3600
	set(&cfg)
	k.s.SetQueueConfig(ports.DefaultTenant, cfg)
}

// push commits one segment of txns (one byte of hash per txn, the rest zero) and
// returns the partition id.
func (k *retKit) push(queue, partition string, txns ...byte) string {
	k.t.Helper()
	var hs []byte
	for _, x := range txns {
		h := [16]byte{x}
		hs = append(hs, h[:]...)
	}
	res, err := k.s.PushSegments(context.Background(), []ports.Segment{{Tenant: ports.DefaultTenant, Queue: queue,
		Partition: partition, Count: len(txns), Hashes: hs, Verified: -1, Blob: []byte("blob")}})
	if err != nil || res[0].Status != ports.SegmentQueued {
		k.t.Fatalf("push: %+v, %v", res, err)
	}
	return res[0].PartitionID
}

func (k *retKit) trim(rows int) ports.TrimStep {
	k.t.Helper()
	st, err := k.s.Retention().Trim(context.Background(), "", 100, rows)
	if err != nil {
		k.t.Fatalf("Trim: %v", err)
	}
	return st
}

// A context already done fails every call; AdminFault sees each call as "Retention."
// and the method's name, and its error fails the call.
func TestRetentionCancelledAndFaults(t *testing.T) {
	k := newRetKit(t)
	r := k.s.Retention()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	fn := func(context.Context) error { t.Error("fn ran"); return nil }
	calls := map[string]func(ctx context.Context) error{
		"Retention.Lead": func(ctx context.Context) error {
			ran, err := r.Lead(ctx, fn)
			if ran {
				t.Error("Lead ran fn")
			}
			return err
		},
		"Retention.Trim": func(ctx context.Context) error { _, err := r.Trim(ctx, "", 1, 1); return err },
		"Retention.PurgeDeadLetters": func(ctx context.Context) error {
			_, err := r.PurgeDeadLetters(ctx, 1)
			return err
		},
		"Retention.PurgeTraces": func(ctx context.Context) error { _, err := r.PurgeTraces(ctx, 1); return err },
		"Retention.DropEmptyPartitions": func(ctx context.Context) error {
			_, err := r.DropEmptyPartitions(ctx, 0, 1)
			return err
		},
		"Retention.PurgeHistory": func(ctx context.Context) error {
			_, err := r.PurgeHistory(ctx, k.now, 1)
			return err
		},
		"Retention.RecordRuns": func(ctx context.Context) error {
			return r.RecordRuns(ctx, k.now, []ports.RetentionRun{{Job: ports.JobTraces, Rows: 1}})
		},
	}
	for op, call := range calls {
		if err := call(done); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", op, err)
		}
		boom := errors.New("boom")
		k.s.AdminFault = func(got string) error {
			if got == op {
				return boom
			}
			return nil
		}
		if err := call(context.Background()); !errors.Is(err, boom) {
			t.Errorf("%s under AdminFault: %v", op, err)
		}
		k.s.AdminFault = nil
	}
	if _, err := r.Trim(context.Background(), "not-a-uuid", 1, 1); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("Trim after a malformed id: %v, want ErrInvalid", err)
	}
}

// A partition with a held cursor (a pop or an ack under way) is left for the next walk,
// and so is its drop.
func TestRetentionSkipsHeldCursors(t *testing.T) {
	k := newRetKit(t)
	k.configure("q", func(c *ports.QueueConfig) { c.RetentionEnabled, c.RetentionSeconds = true, 60 })
	pid := k.push("q", "p", 1)
	k.now = k.now.Add(2 * time.Hour)
	release := k.s.HoldCursor(pid, "g")
	if st := k.trim(100); st.Walked != 1 || st.Segments != 0 || st.HashRows != 0 {
		t.Fatalf("trim under a held cursor: %+v, want one walked, nothing removed", st)
	}
	release()
	if st := k.trim(100); st.Segments != 1 || st.HashRows != 1 || st.Trimmed != 1 {
		t.Fatalf("trim after the release: %+v, want the segment and its hash row", st)
	}
	release = k.s.HoldCursor(pid, "g")
	if r, err := k.s.Retention().DropEmptyPartitions(context.Background(), time.Hour, 10); err != nil || r.Rows != 0 {
		t.Fatalf("drop under a held cursor: %+v, %v; want none", r, err)
	}
	release()
	if r, err := k.s.Retention().DropEmptyPartitions(context.Background(), time.Hour, 10); err != nil || r.Rows != 1 {
		t.Fatalf("drop after the release: %+v, %v; want one", r, err)
	}
}

// Trimmed entries leave the partition's memory; hash rows retention deleted resolve no
// ack, as in SQL where the rows are gone (the watermark hook alone would leave them).
func TestRetentionHashRowsGone(t *testing.T) {
	k := newRetKit(t)
	ctx := context.Background()
	k.configure("q", func(c *ports.QueueConfig) {
		c.RetentionEnabled, c.RetentionSeconds, c.DedupWindowSeconds = true, 7200, 60
	})
	pid := k.push("q", "p", 1)
	k.push("q", "p", 2)
	k.now = k.now.Add(time.Hour) // past the hash window (900 s), not the retention (2 h)
	if st := k.trim(100); st.Segments != 0 || st.HashRows != 2 || st.HashBytes != 32 {
		t.Fatalf("trim: %+v, want two hash rows", st)
	}
	req := ports.PopRequest{Tenant: ports.DefaultTenant, Queue: "q", Partition: "p", Group: ports.QueueModeGroup,
		Batch: 10, Partitions: 1, LeaseSeconds: 60, LeaseID: "00000000-0000-4000-8000-0000000000aa",
		SubscribeMode: ports.SubscribeAll}
	claims, _, err := k.s.Pop(ctx, req)
	if err != nil || len(claims) != 1 || claims[0].Start != 0 || claims[0].End != 1 {
		t.Fatalf("pop of the retained messages: %+v, %v", claims, err)
	}
	res, err := k.s.Ack(ctx, []ports.AckItem{{PartitionID: pid, Group: ports.QueueModeGroup, LeaseID: req.LeaseID,
		TransactionID: "t1", Hash: [16]byte{1}, Status: ports.AckCompleted}})
	if err != nil || len(res) != 1 || res[0].Error != errNotFound {
		t.Fatalf("ack of a message whose hash row is gone: %+v, %v; want %q", res, err, errNotFound)
	}
	k.now = k.now.Add(2 * time.Hour)
	if st := k.trim(100); st.Segments != 2 || st.Messages != 2 || st.SegmentBytes != 8 || st.HashRows != 0 {
		t.Fatalf("trim past the retention: %+v, want both segments", st)
	}
	k.s.mu.Lock()
	n := len(k.s.byID[pid].segs)
	k.s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d entries left in a partition retention emptied", n)
	}
}

// A dropped partition's dead letters keep their queue: retention purges them by its
// rule, and deleting the queue deletes them.
func TestRetentionDroppedPartitionDeadLetters(t *testing.T) {
	k := newRetKit(t)
	ctx := context.Background()
	r := k.s.Retention()
	for _, q := range []string{"q", "r"} {
		k.configure(q, func(c *ports.QueueConfig) {
			c.RetentionEnabled, c.RetentionSeconds, c.DedupWindowSeconds = true, 3600, 0
		})
		pid := k.push(q, "p", 1)
		req := ports.PopRequest{Tenant: ports.DefaultTenant, Queue: q, Partition: "p", Group: "g", Batch: 1,
			Partitions: 1, LeaseSeconds: 60, LeaseID: "00000000-0000-4000-8000-0000000000bb",
			SubscribeMode: ports.SubscribeAll}
		if claims, _, err := k.s.Pop(ctx, req); err != nil || len(claims) != 1 {
			t.Fatalf("pop of %s: %+v, %v", q, claims, err)
		}
		if res, err := k.s.Ack(ctx, []ports.AckItem{{PartitionID: pid, Group: "g", LeaseID: req.LeaseID,
			TransactionID: "t1", Hash: [16]byte{1}, Status: ports.AckDLQ}}); err != nil || !res[0].DLQ {
			t.Fatalf("dead-lettering on %s: %+v, %v", q, res, err)
		}
	}
	k.now = k.now.Add(2 * time.Hour)
	if st := k.trim(100); st.Segments != 2 || st.HashRows != 2 {
		t.Fatalf("trim: %+v, want both partitions emptied", st)
	}
	if d, err := r.DropEmptyPartitions(ctx, time.Hour, 10); err != nil || d.Rows != 2 {
		t.Fatalf("drop: %+v, %v; want both partitions", d, err)
	}
	if n := len(k.s.DeadLetters("")); n != 2 {
		t.Fatalf("%d dead letters after the drop, want 2 (they keep their queue)", n)
	}
	if !k.s.DeleteQueue(ports.DefaultTenant, "r") {
		t.Fatal("no queue r")
	}
	if n := len(k.s.DeadLetters("")); n != 1 {
		t.Fatalf("%d dead letters after deleting r, want 1", n)
	}
	if p, err := r.PurgeDeadLetters(ctx, 10); err != nil || p.Rows != 1 || p.Bytes != 4 {
		t.Fatalf("purge: %+v, %v; want q's dead letter (failed 2 h ago, retention 1 h)", p, err)
	}
	k.s.mu.Lock()
	n := len(k.s.orphans)
	k.s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d orphaned partitions remembered after their dead letters went", n)
	}
}
