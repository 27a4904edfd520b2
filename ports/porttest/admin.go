package porttest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// QueueAdminFixture is a fresh, empty store of one ports.QueueAdmin implementation, plus
// the hook the suite needs to arrange what the port cannot express: dead letters are
// written by the consume path, not by QueueAdmin.
type QueueAdminFixture struct {
	Admin ports.QueueAdmin
	// AddDeadLetter stores d as a dead letter of tenant's queue d.Queue, partition
	// d.Partition, creating that queue (unconfigured, as a push naming it would) and the
	// partition when missing. It returns the stored row: d with ID and PartitionID
	// assigned by the store (d's own are ignored). Times are stored to the microsecond;
	// Blob is non-empty and opaque.
	AddDeadLetter func(t *testing.T, tenant string, d ports.DeadLetter) ports.DeadLetter
}

// otherTenant is a second tenant (tenants are UUIDs in PostgreSQL).
const otherTenant = "00000000-0000-0000-0000-000000000002"

// QueueAdmin runs the conformance suite of ports.QueueAdmin; newFixture must return an
// empty store of its own on every call.
func QueueAdmin(t *testing.T, newFixture func(t *testing.T) QueueAdminFixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f QueueAdminFixture)
	}{
		{"configure creates a queue with its whole configuration", testConfigureCreates},
		{"configure of an existing queue sets only the options in the set", testConfigureMerges},
		{"an empty set changes nothing", testConfigureEmptySet},
		{"every option replaces the stored configuration", testConfigureReplaceAll},
		{"tenants are separate", testAdminTenants},
		{"delete reports whether the queue existed", testDeleteQueue},
		{"dead letters: newest failure first, filters and pages", testDeadLetterListing},
		{"dead letters failing at the same time page without overlap", testDeadLetterTies},
		{"dead letter fields round trip", testDeadLetterFields},
		{"a deleted queue's dead letters are gone", testDeleteQueueDeadLetters},
		{"a queue created by a push is the one configure and delete see", testImplicitQueue},
		{"a cancelled context fails and changes nothing", testAdminCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

// optionFields maps every option of docs/api.md §5.6 to the field it sets.
var optionFields = []struct {
	opt  ports.QueueOption
	name string
	set  func(dst *ports.QueueConfig, src ports.QueueConfig)
}{
	{ports.OptNamespace, "namespace", func(d *ports.QueueConfig, s ports.QueueConfig) { d.Namespace = s.Namespace }},
	{ports.OptTask, "task", func(d *ports.QueueConfig, s ports.QueueConfig) { d.Task = s.Task }},
	{ports.OptPriority, "priority", func(d *ports.QueueConfig, s ports.QueueConfig) { d.Priority = s.Priority }},
	{ports.OptLeaseTime, "leaseTime", func(d *ports.QueueConfig, s ports.QueueConfig) { d.LeaseTime = s.LeaseTime }},
	{ports.OptRetryLimit, "retryLimit", func(d *ports.QueueConfig, s ports.QueueConfig) { d.RetryLimit = s.RetryLimit }},
	{ports.OptRetryDelay, "retryDelay", func(d *ports.QueueConfig, s ports.QueueConfig) { d.RetryDelay = s.RetryDelay }},
	{ports.OptMaxSize, "maxSize", func(d *ports.QueueConfig, s ports.QueueConfig) { d.MaxSize = s.MaxSize }},
	{ports.OptTTL, "ttl", func(d *ports.QueueConfig, s ports.QueueConfig) { d.TTL = s.TTL }},
	{ports.OptDeadLetterQueue, "deadLetterQueue", func(d *ports.QueueConfig, s ports.QueueConfig) { d.DeadLetterQueue = s.DeadLetterQueue }},
	{ports.OptDLQAfterMaxRetries, "dlqAfterMaxRetries", func(d *ports.QueueConfig, s ports.QueueConfig) { d.DLQAfterMaxRetries = s.DLQAfterMaxRetries }},
	{ports.OptDelayedProcessing, "delayedProcessing", func(d *ports.QueueConfig, s ports.QueueConfig) { d.DelayedProcessing = s.DelayedProcessing }},
	{ports.OptWindowBuffer, "windowBuffer", func(d *ports.QueueConfig, s ports.QueueConfig) { d.WindowBuffer = s.WindowBuffer }},
	{ports.OptRetentionSeconds, "retentionSeconds", func(d *ports.QueueConfig, s ports.QueueConfig) { d.RetentionSeconds = s.RetentionSeconds }},
	{ports.OptCompletedRetentionSeconds, "completedRetentionSeconds", func(d *ports.QueueConfig, s ports.QueueConfig) {
		d.CompletedRetentionSeconds = s.CompletedRetentionSeconds
	}},
	{ports.OptRetentionEnabled, "retentionEnabled", func(d *ports.QueueConfig, s ports.QueueConfig) { d.RetentionEnabled = s.RetentionEnabled }},
	{ports.OptEncryptionEnabled, "encryptionEnabled", func(d *ports.QueueConfig, s ports.QueueConfig) { d.EncryptionEnabled = s.EncryptionEnabled }},
	{ports.OptMaxWaitTimeSeconds, "maxWaitTimeSeconds", func(d *ports.QueueConfig, s ports.QueueConfig) { d.MaxWaitTimeSeconds = s.MaxWaitTimeSeconds }},
	{ports.OptMinPopWaitTime, "minPopWaitTime", func(d *ports.QueueConfig, s ports.QueueConfig) { d.MinPopWaitTime = s.MinPopWaitTime }},
	{ports.OptDedupWindowSeconds, "dedupWindowSeconds", func(d *ports.QueueConfig, s ports.QueueConfig) { d.DedupWindowSeconds = s.DedupWindowSeconds }},
	{ports.OptRetentionSinkHold, "retentionSinkHold", func(d *ports.QueueConfig, s ports.QueueConfig) { d.RetentionSinkHold = s.RetentionSinkHold }},
	{ports.OptRetentionSinkHoldMaxSeconds, "retentionSinkHoldMaxSeconds", func(d *ports.QueueConfig, s ports.QueueConfig) {
		d.RetentionSinkHoldMaxSeconds = s.RetentionSinkHoldMaxSeconds
	}},
}

// configA and configB name queue name and differ from each other, and from the
// defaults of a queue a push creates, in every option.
func configA(name string) ports.QueueConfig {
	return ports.QueueConfig{Name: name, Namespace: "ns-a", Task: "task-a", QueueOptions: ports.QueueOptions{
		Priority: 1, LeaseTime: 11, RetryLimit: 2, RetryDelay: 1001, MaxSize: 100, TTL: 601,
		DeadLetterQueue: true, DLQAfterMaxRetries: false, DelayedProcessing: 5, WindowBuffer: 6,
		RetentionSeconds: 7, CompletedRetentionSeconds: 8, RetentionEnabled: true, EncryptionEnabled: false,
		MaxWaitTimeSeconds: 9, MinPopWaitTime: 10, DedupWindowSeconds: 12, RetentionSinkHold: "sink-a",
		RetentionSinkHoldMaxSeconds: 13,
	}}
}

func configB(name string) ports.QueueConfig {
	return ports.QueueConfig{Name: name, Namespace: "ns-b", Task: "task-b", QueueOptions: ports.QueueOptions{
		Priority: 21, LeaseTime: 22, RetryLimit: 23, RetryDelay: 24, MaxSize: 25, TTL: 26,
		DeadLetterQueue: false, DLQAfterMaxRetries: true, DelayedProcessing: 27, WindowBuffer: 28,
		RetentionSeconds: 29, CompletedRetentionSeconds: 30, RetentionEnabled: false, EncryptionEnabled: true,
		MaxWaitTimeSeconds: 31, MinPopWaitTime: 32, DedupWindowSeconds: 33, RetentionSinkHold: "sink-b",
		RetentionSinkHoldMaxSeconds: 34,
	}}
}

func configure(t *testing.T, a ports.QueueAdmin, tenant string, cfg ports.QueueConfig, set ports.QueueOption) ports.QueueConfig {
	t.Helper()
	got, err := a.Configure(context.Background(), tenant, cfg, set)
	if err != nil {
		t.Fatalf("Configure(%s, set %#x): %v", cfg.Name, set, err)
	}
	if got.ID == "" {
		t.Fatalf("Configure(%s) returned no queue id: %+v", cfg.Name, got)
	}
	return got
}

// wantConfig fails unless got is want with want's id (got's when want has none).
func wantConfig(t *testing.T, what string, got, want ports.QueueConfig) {
	t.Helper()
	if want.ID == "" {
		want.ID = got.ID
	}
	if got != want {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func deleteQueue(t *testing.T, a ports.QueueAdmin, tenant, queue string) bool {
	t.Helper()
	existed, err := a.DeleteQueue(context.Background(), tenant, queue)
	if err != nil {
		t.Fatalf("DeleteQueue(%s): %v", queue, err)
	}
	return existed
}

func deadLetters(t *testing.T, a ports.QueueAdmin, tenant string, f ports.DeadLetterFilter) []ports.DeadLetter {
	t.Helper()
	got, err := a.DeadLetters(context.Background(), tenant, f)
	if err != nil {
		t.Fatalf("DeadLetters(%+v): %v", f, err)
	}
	return got
}

func txnIDs(ds []ports.DeadLetter) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.TransactionID
	}
	return out
}

// dlqBase is the failure time of the first dead letter; microseconds, as PostgreSQL keeps.
var dlqBase = time.Date(2026, 5, 1, 10, 0, 0, 123456000, time.UTC)

// deadLetter is a dead letter of queue/partition for group, failing at dlqBase + sec s.
func deadLetter(queue, partition, group, txn string, sec int) ports.DeadLetter {
	msg := "boom " + txn
	return ports.DeadLetter{
		DeadLetterInfo: ports.DeadLetterInfo{Queue: queue, Partition: partition, ConsumerGroup: group,
			TransactionID: txn, ErrorMessage: &msg, RetryCount: sec % 4,
			CreatedAt: dlqBase.Add(-time.Hour), FailedAt: dlqBase.Add(time.Duration(sec) * time.Second)},
		Offset: int64(sec), FrameIndex: sec % 3, Blob: []byte("segment:" + txn),
	}
}

func testConfigureCreates(t *testing.T, f QueueAdminFixture) {
	sets := []ports.QueueOption{0, ports.OptLeaseTime, ports.OptNamespace | ports.OptRetentionSinkHold, ports.AllQueueOptions}
	ids := map[string]bool{}
	for i, set := range sets {
		cfg := configB(fmt.Sprint("created-", i))
		got := configure(t, f.Admin, ports.DefaultTenant, cfg, set)
		wantConfig(t, fmt.Sprintf("a new queue configured with set %#x takes the whole configuration", set), got, cfg)
		if ids[got.ID] {
			t.Fatalf("queue id %s given twice", got.ID)
		}
		ids[got.ID] = true
		// It is stored: an empty set reads it back.
		wantConfig(t, "the stored row", configure(t, f.Admin, ports.DefaultTenant, configA(cfg.Name), 0), got)
	}
}

func testConfigureMerges(t *testing.T, f QueueAdminFixture) {
	var all ports.QueueOption
	for _, o := range optionFields {
		all |= o.opt
	}
	if all != ports.AllQueueOptions || len(optionFields) != 21 {
		t.Fatalf("the suite knows options %#x (%d), the port %#x: update optionFields", all, len(optionFields), ports.AllQueueOptions)
	}
	for _, o := range optionFields {
		name := "merge-" + o.name
		created := configure(t, f.Admin, ports.DefaultTenant, configA(name), ports.AllQueueOptions)
		want := created
		o.set(&want, configB(name))
		wantConfig(t, "set "+o.name+" only", configure(t, f.Admin, ports.DefaultTenant, configB(name), o.opt), want)
	}
	// Several options at once, the others kept.
	created := configure(t, f.Admin, ports.DefaultTenant, configA("merge-several"), 0)
	set := ports.OptPriority | ports.OptTTL | ports.OptEncryptionEnabled | ports.OptTask
	want := created
	want.Priority, want.TTL, want.EncryptionEnabled, want.Task = 21, 26, true, "task-b"
	wantConfig(t, "set several", configure(t, f.Admin, ports.DefaultTenant, configB("merge-several"), set), want)
	// And again: the merge applies to the stored row, not to the creating call's.
	prop := configA("merge-several")
	prop.MaxSize = 77
	want.MaxSize = 77
	wantConfig(t, "a later merge", configure(t, f.Admin, ports.DefaultTenant, prop, ports.OptMaxSize), want)
}

func testConfigureEmptySet(t *testing.T, f QueueAdminFixture) {
	created := configure(t, f.Admin, ports.DefaultTenant, configA("q"), 0)
	wantConfig(t, "an empty set", configure(t, f.Admin, ports.DefaultTenant, configB("q"), 0), created)
}

func testConfigureReplaceAll(t *testing.T, f QueueAdminFixture) {
	created := configure(t, f.Admin, ports.DefaultTenant, configA("q"), 0)
	want := configB("q")
	want.ID = created.ID
	wantConfig(t, "replace all", configure(t, f.Admin, ports.DefaultTenant, configB("q"), ports.AllQueueOptions), want)
	wantConfig(t, "the stored row after replace all", configure(t, f.Admin, ports.DefaultTenant, configA("q"), 0), want)
}

func testAdminTenants(t *testing.T, f QueueAdminFixture) {
	a := configure(t, f.Admin, ports.DefaultTenant, configA("q"), 0)
	b := configure(t, f.Admin, otherTenant, configB("q"), 0)
	if a.ID == b.ID {
		t.Fatalf("one queue id %s for two tenants", a.ID)
	}
	wantConfig(t, "the first tenant's queue", configure(t, f.Admin, ports.DefaultTenant, configB("q"), 0), a)
	wantConfig(t, "the second tenant's queue", configure(t, f.Admin, otherTenant, configA("q"), 0), b)

	f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("q", "p", "g", "t-first", 0))
	f.AddDeadLetter(t, otherTenant, deadLetter("q", "p", "g", "t-second", 1))
	for _, tc := range []struct{ tenant, want string }{{ports.DefaultTenant, "t-first"}, {otherTenant, "t-second"}} {
		for _, filter := range []ports.DeadLetterFilter{{Limit: 10}, {Queue: "q", Limit: 10}} {
			if got := txnIDs(deadLetters(t, f.Admin, tc.tenant, filter)); !slices.Equal(got, []string{tc.want}) {
				t.Fatalf("tenant %s, filter %+v: dead letters %v, want [%s]", tc.tenant, filter, got, tc.want)
			}
		}
	}

	if deleteQueue(t, f.Admin, otherTenant, "only-first") {
		t.Fatal("DeleteQueue in a tenant without that queue reported it existed")
	}
	configure(t, f.Admin, ports.DefaultTenant, configA("only-first"), 0)
	if deleteQueue(t, f.Admin, otherTenant, "only-first") {
		t.Fatal("DeleteQueue of another tenant's queue reported it existed")
	}
	if !deleteQueue(t, f.Admin, otherTenant, "q") {
		t.Fatal("DeleteQueue of the second tenant's queue reported it did not exist")
	}
	// The first tenant's queue of that name, and its dead letter, are whole.
	wantConfig(t, "the first tenant's queue after the other's deletion", configure(t, f.Admin, ports.DefaultTenant, configB("q"), 0), a)
	if got := txnIDs(deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Limit: 10})); !slices.Equal(got, []string{"t-first"}) {
		t.Fatalf("the first tenant's dead letters after the other's deletion: %v", got)
	}
	if got := deadLetters(t, f.Admin, otherTenant, ports.DeadLetterFilter{Limit: 10}); len(got) != 0 {
		t.Fatalf("the deleted queue's dead letters remain: %v", txnIDs(got))
	}
}

func testDeleteQueue(t *testing.T, f QueueAdminFixture) {
	if deleteQueue(t, f.Admin, ports.DefaultTenant, "q") {
		t.Fatal("DeleteQueue of a queue that never existed reported it existed")
	}
	old := configure(t, f.Admin, ports.DefaultTenant, configA("q"), 0)
	keep := configure(t, f.Admin, ports.DefaultTenant, configA("kept"), 0)
	if !deleteQueue(t, f.Admin, ports.DefaultTenant, "q") {
		t.Fatal("DeleteQueue of a configured queue reported it did not exist")
	}
	if deleteQueue(t, f.Admin, ports.DefaultTenant, "q") {
		t.Fatal("second DeleteQueue reported the queue existed")
	}
	// Gone: configuring the name creates a new queue from the whole configuration, with
	// nothing of the old one's, and a new id.
	again := configure(t, f.Admin, ports.DefaultTenant, configB("q"), ports.OptPriority)
	wantConfig(t, "the recreated queue", again, configB("q"))
	if again.ID == old.ID {
		t.Fatalf("the recreated queue reuses the deleted one's id %s", old.ID)
	}
	wantConfig(t, "the other queue", configure(t, f.Admin, ports.DefaultTenant, configB("kept"), 0), keep)
}

func testDeadLetterListing(t *testing.T, f QueueAdminFixture) {
	// Failing one second apart, oldest first: qa/g1, qa/g2, qb/g1, qa/g1 (added in
	// another order, so the listing cannot just follow insertion).
	rows := []ports.DeadLetter{
		deadLetter("qa", "p1", "g1", "t3", 3),
		deadLetter("qa", "p1", "g1", "t0", 0),
		deadLetter("qb", "p2", "g1", "t2", 2),
		deadLetter("qa", "p9", "g2", "t1", 1),
	}
	for _, d := range rows {
		f.AddDeadLetter(t, ports.DefaultTenant, d)
	}
	tests := []struct {
		name   string
		filter ports.DeadLetterFilter
		want   []string // transaction ids, in order
	}{
		{"all, newest first", ports.DeadLetterFilter{Limit: 100}, []string{"t3", "t2", "t1", "t0"}},
		{"one queue", ports.DeadLetterFilter{Queue: "qa", Limit: 100}, []string{"t3", "t1", "t0"}},
		{"one consumer group", ports.DeadLetterFilter{ConsumerGroup: "g1", Limit: 100}, []string{"t3", "t2", "t0"}},
		{"queue and group", ports.DeadLetterFilter{Queue: "qa", ConsumerGroup: "g2", Limit: 100}, []string{"t1"}},
		{"limit", ports.DeadLetterFilter{Limit: 2}, []string{"t3", "t2"}},
		{"limit and offset", ports.DeadLetterFilter{Limit: 2, Offset: 1}, []string{"t2", "t1"}},
		{"offset within a queue", ports.DeadLetterFilter{Queue: "qa", Limit: 100, Offset: 2}, []string{"t0"}},
		{"offset past the end", ports.DeadLetterFilter{Limit: 100, Offset: 4}, nil},
		{"limit 0 lists nothing", ports.DeadLetterFilter{Limit: 0}, nil},
		{"unknown queue", ports.DeadLetterFilter{Queue: "nope", Limit: 100}, nil},
		{"unknown group", ports.DeadLetterFilter{ConsumerGroup: "nope", Limit: 100}, nil},
		{"group of another queue", ports.DeadLetterFilter{Queue: "qb", ConsumerGroup: "g2", Limit: 100}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := txnIDs(deadLetters(t, f.Admin, ports.DefaultTenant, tt.filter)); !slices.Equal(got, tt.want) {
				t.Fatalf("transaction ids %v, want %v", got, tt.want)
			}
		})
	}
}

func testDeadLetterTies(t *testing.T, f QueueAdminFixture) {
	const n = 7
	for i := range n {
		d := deadLetter("q", fmt.Sprint("p", i%2), "g", fmt.Sprint("t", i), 0) // one failure time
		f.AddDeadLetter(t, ports.DefaultTenant, d)
	}
	seen := map[string]bool{}
	for off := 0; off < n; off += 2 {
		page := deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Limit: 2, Offset: off})
		if len(page) != min(2, n-off) {
			t.Fatalf("page at offset %d has %d rows", off, len(page))
		}
		for _, d := range page {
			if seen[d.ID] {
				t.Fatalf("dead letter %s (%s) on two pages", d.ID, d.TransactionID)
			}
			seen[d.ID] = true
		}
	}
	if len(seen) != n {
		t.Fatalf("the pages hold %d distinct dead letters, want %d", len(seen), n)
	}
}

// sameDeadLetter fails unless got is want (times compared as instants).
func sameDeadLetter(t *testing.T, got, want ports.DeadLetter) {
	t.Helper()
	msg := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return fmt.Sprintf("%q", *p)
	}
	if got.ID != want.ID || got.Queue != want.Queue || got.Partition != want.Partition ||
		got.PartitionID != want.PartitionID || got.ConsumerGroup != want.ConsumerGroup ||
		got.TransactionID != want.TransactionID || msg(got.ErrorMessage) != msg(want.ErrorMessage) ||
		got.RetryCount != want.RetryCount || !got.CreatedAt.Equal(want.CreatedAt) || !got.FailedAt.Equal(want.FailedAt) ||
		got.Offset != want.Offset || got.FrameIndex != want.FrameIndex || !bytes.Equal(got.Blob, want.Blob) {
		t.Fatalf("dead letter:\n got %+v (error %s)\nwant %+v (error %s)", got, msg(got.ErrorMessage), want, msg(want.ErrorMessage))
	}
}

func testDeadLetterFields(t *testing.T, f QueueAdminFixture) {
	first := deadLetter("q", "p", "g", "t-with-error", 2)
	first.RetryCount, first.Offset, first.FrameIndex = 5, 1<<40, 7
	first.Blob = []byte{0, 1, 2, 0xF5, 0xFF}
	noError := deadLetter("q", "p", "__QUEUE_MODE__", "t-without-error", 1)
	noError.ErrorMessage = nil
	other := deadLetter("q", "p2", "g", "t-other-partition", 0)

	var stored []ports.DeadLetter
	for _, d := range []ports.DeadLetter{first, noError, other} {
		s := f.AddDeadLetter(t, ports.DefaultTenant, d)
		if s.ID == "" || s.PartitionID == "" {
			t.Fatalf("AddDeadLetter returned no id or partition id: %+v", s)
		}
		stored = append(stored, s)
	}
	if stored[0].PartitionID != stored[1].PartitionID || stored[0].PartitionID == stored[2].PartitionID {
		t.Fatalf("partition ids %s, %s, %s: want the first two equal (one partition), the third different",
			stored[0].PartitionID, stored[1].PartitionID, stored[2].PartitionID)
	}
	got := deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Limit: 10})
	if len(got) != len(stored) {
		t.Fatalf("%d dead letters, want %d", len(got), len(stored))
	}
	for i := range got {
		sameDeadLetter(t, got[i], stored[i])
	}
	// The listing is the caller's: changing it changes nothing stored.
	got[0].Blob[0] = 'X'
	*got[0].ErrorMessage = "changed"
	again := deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Limit: 1})
	if len(again) != 1 {
		t.Fatalf("%d dead letters, want 1", len(again))
	}
	sameDeadLetter(t, again[0], stored[0])
}

func testDeleteQueueDeadLetters(t *testing.T, f QueueAdminFixture) {
	gone := f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("qa", "p", "g", "ta", 0))
	f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("qa", "p2", "g", "ta2", 1))
	f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("qb", "p", "g", "tb", 2))
	if !deleteQueue(t, f.Admin, ports.DefaultTenant, "qa") {
		t.Fatal("DeleteQueue of a queue holding dead letters reported it did not exist")
	}
	for _, filter := range []ports.DeadLetterFilter{{Limit: 10}, {ConsumerGroup: "g", Limit: 10}} {
		if got := txnIDs(deadLetters(t, f.Admin, ports.DefaultTenant, filter)); !slices.Equal(got, []string{"tb"}) {
			t.Fatalf("filter %+v after deleting qa: dead letters %v, want [tb]", filter, got)
		}
	}
	if got := deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Queue: "qa", Limit: 10}); len(got) != 0 {
		t.Fatalf("the deleted queue lists %v", txnIDs(got))
	}
	// A queue of that name made again is a new queue with new partitions.
	again := f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("qa", "p", "g", "ta-again", 3))
	if again.PartitionID == gone.PartitionID {
		t.Fatalf("the recreated partition reuses the deleted one's id %s", gone.PartitionID)
	}
	if got := txnIDs(deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Queue: "qa", Limit: 10})); !slices.Equal(got, []string{"ta-again"}) {
		t.Fatalf("the recreated queue lists %v, want [ta-again]", got)
	}
}

func testImplicitQueue(t *testing.T, f QueueAdminFixture) {
	f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("implicit", "p", "g", "t", 0))
	// Configuring it configures that queue: its dead letter stays listed under it.
	created := configure(t, f.Admin, ports.DefaultTenant, configA("implicit"), ports.AllQueueOptions)
	wantConfig(t, "replace all on a pushed queue", created, configA("implicit"))
	wantConfig(t, "the stored row", configure(t, f.Admin, ports.DefaultTenant, configB("implicit"), 0), created)
	if got := txnIDs(deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Queue: "implicit", Limit: 10})); !slices.Equal(got, []string{"t"}) {
		t.Fatalf("dead letters of the configured queue: %v, want [t]", got)
	}
	// And deleting it deletes that queue with its dead letter.
	if !deleteQueue(t, f.Admin, ports.DefaultTenant, "implicit") {
		t.Fatal("DeleteQueue of a pushed queue reported it did not exist")
	}
	if got := deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Limit: 10}); len(got) != 0 {
		t.Fatalf("dead letters after deleting their queue: %v", txnIDs(got))
	}
	// A pushed queue that was never configured is deleted the same way.
	f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("never-configured", "p", "g", "u", 0))
	if !deleteQueue(t, f.Admin, ports.DefaultTenant, "never-configured") {
		t.Fatal("DeleteQueue of an unconfigured pushed queue reported it did not exist")
	}
}

func testAdminCancelled(t *testing.T, f QueueAdminFixture) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := f.Admin.Configure(ctx, ports.DefaultTenant, configA("q"), 0); err == nil {
		t.Fatalf("Configure with a cancelled context = %+v, want an error", got)
	}
	f.AddDeadLetter(t, ports.DefaultTenant, deadLetter("kept", "p", "g", "t", 0))
	if _, err := f.Admin.DeleteQueue(ctx, ports.DefaultTenant, "kept"); err == nil {
		t.Fatal("DeleteQueue with a cancelled context succeeded")
	}
	if got, err := f.Admin.DeadLetters(ctx, ports.DefaultTenant, ports.DeadLetterFilter{Limit: 10}); err == nil {
		t.Fatalf("DeadLetters with a cancelled context = %v, want an error", txnIDs(got))
	}
	if deleteQueue(t, f.Admin, ports.DefaultTenant, "q") {
		t.Fatal("the cancelled Configure created the queue")
	}
	if got := txnIDs(deadLetters(t, f.Admin, ports.DefaultTenant, ports.DeadLetterFilter{Limit: 10})); !slices.Equal(got, []string{"t"}) {
		t.Fatalf("after a cancelled DeleteQueue the dead letters are %v, want [t]", got)
	}
}
