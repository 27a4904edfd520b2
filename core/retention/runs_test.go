package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/memory"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

const tenant = ports.DefaultTenant

// memKit is the in-memory store (adapters/memory, which passes the retention
// conformance suite the PostgreSQL adapter passes) on a clock the test moves, with a
// retention job over it.
type memKit struct {
	t   *testing.T
	s   *memory.Store
	job *Job
	act *memory.ActivityLog

	mu  sync.Mutex
	now time.Time
	ops map[string]int // retention store calls by name
}

func newMemKit(t *testing.T, opts Options) *memKit {
	t.Helper()
	t.Parallel()
	k := &memKit{t: t, s: memory.NewStore(), act: &memory.ActivityLog{}, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		ops: make(map[string]int)}
	k.s.Now = k.clock
	k.s.AdminFault = func(op string) error {
		k.mu.Lock()
		k.ops[op]++
		k.mu.Unlock()
		return nil
	}
	opts.Now, opts.Activity = k.clock, k.act
	k.job = New(k.s.Retention(), opts)
	return k
}

func (k *memKit) clock() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.now
}

func (k *memKit) advance(d time.Duration) {
	k.mu.Lock()
	k.now = k.now.Add(d)
	k.mu.Unlock()
}

func (k *memKit) calls(op string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ops[op]
}

func (k *memKit) cycle() {
	k.t.Helper()
	if err := k.job.RunCycle(context.Background()); err != nil {
		k.t.Fatalf("cycle: %v", err)
	}
}

// configure sets queue's options: the schema's defaults, no dedup window (hash rows go
// after the 900 s floor), changed by set.
func (k *memKit) configure(queue string, set func(*ports.QueueConfig)) {
	cfg := ports.QueueConfig{Name: queue, QueueOptions: queues.Defaults("").QueueOptions}
	cfg.DedupWindowSeconds = 0
	set(&cfg)
	k.s.SetQueueConfig(tenant, cfg)
}

// push commits one segment of n messages (blob of 4 bytes, 16 bytes of hash per message)
// and returns the partition id.
func (k *memKit) push(queue, partition string, n int) string {
	k.t.Helper()
	hs := make([]byte, 16*n)
	for i := range n {
		hs[16*i] = byte(i + 1)
	}
	res, err := k.s.PushSegments(context.Background(), []ports.Segment{{Tenant: tenant, Queue: queue,
		Partition: partition, Count: n, Hashes: hs, Verified: -1, Blob: []byte("blob")}})
	if err != nil || res[0].Status != ports.SegmentQueued {
		k.t.Fatalf("push: %+v, %v", res, err)
	}
	return res[0].PartitionID
}

// take pops queue/partition's first message for group and acknowledges it with status.
func (k *memKit) take(queue, partition, group string, status ports.AckStatus) {
	k.t.Helper()
	ctx := context.Background()
	req := ports.PopRequest{Tenant: tenant, Queue: queue, Partition: partition, Group: group, Batch: 1,
		Partitions: 1, LeaseSeconds: 60, LeaseID: "00000000-0000-4000-8000-0000000000cc", SubscribeMode: ports.SubscribeAll}
	claims, _, err := k.s.Pop(ctx, req)
	if err != nil || len(claims) != 1 {
		k.t.Fatalf("pop of %s/%s: %+v, %v", queue, partition, claims, err)
	}
	res, err := k.s.Ack(ctx, []ports.AckItem{{PartitionID: claims[0].PartitionID, Group: group, LeaseID: req.LeaseID,
		TransactionID: "t", Hash: [16]byte{1}, Status: status}})
	if err != nil || len(res) != 1 || res[0].Error != "" {
		k.t.Fatalf("ack on %s/%s: %+v, %v", queue, partition, res, err)
	}
}

// runs returns the recorded runs dated at, sorted.
func (k *memKit) runs(at time.Time) []ports.RetentionRun {
	var out []ports.RetentionRun
	for _, r := range k.s.RetentionRuns() {
		if r.RanAt.Equal(at) {
			out = append(out, r.RetentionRun)
		}
	}
	sortRuns(out)
	return out
}

func sortRuns(runs []ports.RetentionRun) {
	slices.SortFunc(runs, func(a, b ports.RetentionRun) int {
		return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Queue, b.Queue))
	})
}

func wantRuns(t *testing.T, got []ports.RetentionRun, want ...ports.RetentionRun) {
	t.Helper()
	sortRuns(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("runs recorded\n %v\nwant\n %v", got, want)
	}
}

// TestRunsRecorded: a cycle records what it removed per job and queue, by the rule
// that removed it, with the messages and bytes of the removed segments; an idle cycle
// records nothing.
func TestRunsRecorded(t *testing.T) {
	k := newMemKit(t, Options{CleanupIdle: 30 * time.Minute})
	k.configure("ret", func(c *ports.QueueConfig) { c.RetentionEnabled, c.RetentionSeconds = true, 60 })
	k.configure("evict", func(c *ports.QueueConfig) { c.MaxWaitTimeSeconds = 60 })
	k.configure("done", func(c *ports.QueueConfig) { c.RetentionEnabled, c.CompletedRetentionSeconds = true, 60 })
	k.configure("keep", func(c *ports.QueueConfig) {})
	k.push("ret", "p", 1)
	k.push("ret", "p", 2)
	k.push("ret", "d", 1)
	k.take("ret", "d", "g", ports.AckDLQ)
	k.push("evict", "p", 2)
	k.push("done", "p", 1)
	k.take("done", "p", ports.QueueModeGroup, ports.AckCompleted)
	keep := k.push("keep", "p", 1)

	k.advance(2 * time.Minute)
	first := k.clock()
	k.cycle()
	run := func(job, queue string, rows, bytes int64) ports.RetentionRun {
		return ports.RetentionRun{Job: job, Tenant: tenant, Queue: queue, Rows: rows, Bytes: bytes}
	}
	wantRuns(t, k.runs(first),
		run(ports.JobRetention, "ret", 4, 12), // 3 segments of 4 bytes, 4 messages
		run(ports.JobEviction, "evict", 2, 4),
		run(ports.JobCompletedRetention, "done", 1, 4),
		run(ports.JobDeadLetters, "ret", 1, 4))

	// An hour later: the hash rows (900 s), an expired trace, the partitions emptied.
	k.advance(time.Hour)
	nt := ports.NewTrace{PartitionID: keep, TransactionID: "t", ConsumerGroup: ports.QueueModeGroup,
		EventType: "info", Data: []byte(`{"n":1}`)}
	if _, found, err := k.s.AddTrace(context.Background(), tenant, nt,
		func(ports.QueueOptions) time.Duration { return -time.Minute }, 0); err != nil || !found {
		t.Fatalf("AddTrace: %v, %v", found, err)
	}
	second := k.clock()
	k.cycle()
	wantRuns(t, k.runs(second),
		run(ports.JobHashRows, "ret", 3, 64),
		run(ports.JobHashRows, "evict", 1, 32),
		run(ports.JobHashRows, "done", 1, 16),
		run(ports.JobHashRows, "keep", 1, 16),
		run(ports.JobTraces, "keep", 1, 7),
		run(ports.JobPartitions, "ret", 2, 0),
		run(ports.JobPartitions, "evict", 1, 0),
		run(ports.JobPartitions, "done", 1, 0)) // keep's partition still holds its message
	wantDeleted := []string{"deleted " + tenant + "/done 1", "deleted " + tenant + "/evict 1", "deleted " + tenant + "/ret 2"}
	if got := k.act.Take(); !slices.Equal(got, wantDeleted) {
		t.Fatalf("Activity heard %q, want %q", got, wantDeleted)
	}

	// Idle: nothing removed, nothing written.
	k.advance(time.Hour)
	k.cycle()
	if n := len(k.s.RetentionRuns()); n != 12 || k.calls("Retention.RecordRuns") != 2 {
		t.Fatalf("%d runs after an idle cycle (%d writes), want the 12 of the first two cycles in 2 writes",
			n, k.calls("Retention.RecordRuns"))
	}
	if s := k.job.Stats(); s.Messages != 7 || s.HashRows != 6 || s.Partitions != 4 || s.Errors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRunsRecordedAfterStop: a cycle interrupted after removing something still
// records it; a failed record is an error of the cycle.
func TestRunsRecordedAfterStop(t *testing.T) {
	k := newMemKit(t, Options{})
	k.configure("q", func(c *ports.QueueConfig) { c.RetentionEnabled, c.RetentionSeconds = true, 60 })
	k.push("q", "p", 1)
	k.advance(2 * time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k.s.AdminFault = func(op string) error {
		if op == "Retention.PurgeDeadLetters" {
			cancel() // the Stop arrives during the dead letters' step
		}
		return nil
	}
	if err := k.job.RunCycle(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted cycle: %v, want canceled", err)
	}
	wantRuns(t, k.runs(k.clock()), ports.RetentionRun{Job: ports.JobRetention, Tenant: tenant, Queue: "q", Rows: 1, Bytes: 4})

	boom := errors.New("boom")
	k.s.AdminFault = func(op string) error {
		if op == "Retention.RecordRuns" {
			return boom
		}
		return nil
	}
	k.push("q", "p", 1)
	k.advance(2 * time.Minute)
	if err := k.job.RunCycle(context.Background()); !errors.Is(err, boom) || k.job.Stats().Errors != 1 {
		t.Fatalf("failed record: %v, %+v", err, k.job.Stats())
	}
}

// TestHistoryPurge: rows of the metrics history and of the runs older than
// MetricsRetention go, in steps of at most BatchSize rows and DueCap rows per cycle, at
// most once a minute; younger rows stay. The purge is a run of its own.
func TestHistoryPurge(t *testing.T) {
	k := newMemKit(t, Options{BatchSize: 10, DueCap: 20, MetricsRetention: 90 * 24 * time.Hour})
	ctx := context.Background()
	old, young := k.clock().Add(-91*24*time.Hour), k.clock().Add(-89*24*time.Hour)
	for table, n := range map[string]int{memory.HistoryQueueMinutes: 25, memory.HistoryBrokerMinutes: 5, memory.HistoryFlushes: 3} {
		k.s.AddHistory(table, old, n)
		k.s.AddHistory(table, young, 2)
	}
	r := k.s.Retention()
	oldRuns := []ports.RetentionRun{{Job: ports.JobTraces, Rows: 1}, {Job: ports.JobRetention, Tenant: tenant, Queue: "q", Rows: 1}}
	if err := r.RecordRuns(ctx, old, oldRuns); err != nil {
		t.Fatal(err)
	}
	if err := r.RecordRuns(ctx, young, oldRuns[:1]); err != nil {
		t.Fatal(err)
	}
	// 35 old rows: 20 in the first cycle (two steps), none within the minute, 15 (two
	// steps: 10, then 5 ends it) a minute later, none then.
	for i, tt := range []struct {
		advance    time.Duration
		rows       int64
		steps      int
		historyRun bool
	}{
		{0, 20, 2, true},
		{30 * time.Second, 20, 2, false},
		{30 * time.Second, 35, 4, true},
		{time.Minute, 35, 5, false},
	} {
		k.advance(tt.advance)
		k.cycle()
		if got := k.job.Stats().History; got != tt.rows {
			t.Fatalf("cycle %d: %d history rows removed in all, want %d", i, got, tt.rows)
		}
		if got := k.calls("Retention.PurgeHistory"); got != tt.steps {
			t.Fatalf("cycle %d: %d purge steps in all, want %d", i, got, tt.steps)
		}
		runs := k.runs(k.clock())
		if tt.historyRun != (len(runs) == 1 && runs[0].Job == ports.JobMetricsHistory && runs[0].Tenant == "") {
			t.Fatalf("cycle %d: runs %v", i, runs)
		}
	}
	for table, want := range map[string]int{memory.HistoryQueueMinutes: 2, memory.HistoryBrokerMinutes: 2,
		memory.HistoryFlushes: 2, memory.HistoryRuns: 3} { // the young run and the purge's two
		if got := k.s.HistoryRows(table); got != want {
			t.Errorf("%s: %d rows left, want %d", table, got, want)
		}
	}
}
