package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

// QueueAdmin is an in-memory ports.QueueAdmin with its own state: queue configurations
// and dead letters per tenant. It follows adapters/admin (ports/porttest.QueueAdmin
// checks both): Configure creates a queue with the whole configuration and merges only
// the options in the set into an existing one; DeleteQueue takes the queue's dead
// letters with it; DeadLetters lists newest failure first, ties by id, and a
// non-positive Limit lists nothing. A context already done fails every call.
//
// AddDeadLetter stands in for the consume path (a message moved to the DLQ): it creates
// the queue as a push naming it would, unconfigured and with the default options.
type QueueAdmin struct {
	// Now stamps dead letters added without a failure time (default time.Now); tests may
	// replace it before use.
	Now func() time.Time

	mu     sync.Mutex
	queues map[string]*adminQueue // tenant\x1fname
	dlq    []ports.DeadLetter     // every tenant's, in insertion order
	dlqTen []string               // tenant of dlq[i]
	ids    uint64                 // last id handed out
}

type adminQueue struct {
	cfg        ports.QueueConfig
	configured bool              // false while only a push (AddDeadLetter) made it
	partitions map[string]string // name -> id
}

var _ ports.QueueAdmin = (*QueueAdmin)(nil)

// NewQueueAdmin returns an admin with no queue.
func NewQueueAdmin() *QueueAdmin {
	return &QueueAdmin{Now: time.Now, queues: map[string]*adminQueue{}}
}

func adminKey(tenant, queue string) string { return tenant + "\x1f" + queue }

// newID returns a fresh id shaped like a UUID; later ids compare greater as strings.
// Called with mu held.
func (a *QueueAdmin) newID() string {
	a.ids++
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", a.ids)
}

// Configured reports whether tenant's queue exists and was configured (not only pushed to).
func (a *QueueAdmin) Configured(tenant, queue string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.queues[adminKey(tenant, queue)]
	return q != nil && q.configured
}

// Configure implements ports.QueueAdmin.
func (a *QueueAdmin) Configure(ctx context.Context, tenant string, cfg ports.QueueConfig, set ports.QueueOption) (ports.QueueConfig, error) {
	if err := ctx.Err(); err != nil {
		return ports.QueueConfig{}, fmt.Errorf("memory: configure: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := adminKey(tenant, cfg.Name)
	q := a.queues[k]
	if q == nil {
		cfg.ID = a.newID()
		q = &adminQueue{cfg: cfg, partitions: map[string]string{}}
		a.queues[k] = q
	} else {
		mergeOptions(&q.cfg, cfg, set)
	}
	q.configured = true
	return q.cfg, nil
}

// mergeOptions copies into dst the options of src that set names.
func mergeOptions(dst *ports.QueueConfig, src ports.QueueConfig, set ports.QueueOption) {
	d, s := &dst.QueueOptions, &src.QueueOptions
	for _, o := range []struct {
		opt  ports.QueueOption
		copy func()
	}{
		{ports.OptNamespace, func() { dst.Namespace = src.Namespace }},
		{ports.OptTask, func() { dst.Task = src.Task }},
		{ports.OptPriority, func() { d.Priority = s.Priority }},
		{ports.OptLeaseTime, func() { d.LeaseTime = s.LeaseTime }},
		{ports.OptRetryLimit, func() { d.RetryLimit = s.RetryLimit }},
		{ports.OptRetryDelay, func() { d.RetryDelay = s.RetryDelay }},
		{ports.OptMaxSize, func() { d.MaxSize = s.MaxSize }},
		{ports.OptTTL, func() { d.TTL = s.TTL }},
		{ports.OptDeadLetterQueue, func() { d.DeadLetterQueue = s.DeadLetterQueue }},
		{ports.OptDLQAfterMaxRetries, func() { d.DLQAfterMaxRetries = s.DLQAfterMaxRetries }},
		{ports.OptDelayedProcessing, func() { d.DelayedProcessing = s.DelayedProcessing }},
		{ports.OptWindowBuffer, func() { d.WindowBuffer = s.WindowBuffer }},
		{ports.OptRetentionSeconds, func() { d.RetentionSeconds = s.RetentionSeconds }},
		{ports.OptCompletedRetentionSeconds, func() { d.CompletedRetentionSeconds = s.CompletedRetentionSeconds }},
		{ports.OptRetentionEnabled, func() { d.RetentionEnabled = s.RetentionEnabled }},
		{ports.OptEncryptionEnabled, func() { d.EncryptionEnabled = s.EncryptionEnabled }},
		{ports.OptMaxWaitTimeSeconds, func() { d.MaxWaitTimeSeconds = s.MaxWaitTimeSeconds }},
		{ports.OptMinPopWaitTime, func() { d.MinPopWaitTime = s.MinPopWaitTime }},
		{ports.OptDedupWindowSeconds, func() { d.DedupWindowSeconds = s.DedupWindowSeconds }},
		{ports.OptRetentionSinkHold, func() { d.RetentionSinkHold = s.RetentionSinkHold }},
		{ports.OptRetentionSinkHoldMaxSeconds, func() { d.RetentionSinkHoldMaxSeconds = s.RetentionSinkHoldMaxSeconds }},
	} {
		if set.Has(o.opt) {
			o.copy()
		}
	}
}

// DeleteQueue implements ports.QueueAdmin: the queue, its partitions and its dead letters.
func (a *QueueAdmin) DeleteQueue(ctx context.Context, tenant, queue string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("memory: delete queue: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	k := adminKey(tenant, queue)
	if a.queues[k] == nil {
		return false, nil
	}
	delete(a.queues, k)
	keep := 0
	for i := range a.dlq {
		if a.dlqTen[i] == tenant && a.dlq[i].Queue == queue {
			continue
		}
		a.dlq[keep], a.dlqTen[keep] = a.dlq[i], a.dlqTen[i]
		keep++
	}
	clear(a.dlq[keep:])
	a.dlq, a.dlqTen = a.dlq[:keep], a.dlqTen[:keep]
	return true, nil
}

// DeadLetters implements ports.QueueAdmin: newest failure first, ties by id (descending)
// so pages do not overlap; copies the caller may change.
func (a *QueueAdmin) DeadLetters(ctx context.Context, tenant string, f ports.DeadLetterFilter) ([]ports.DeadLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: dead letters: %w", err)
	}
	if f.Limit <= 0 {
		return nil, nil
	}
	a.mu.Lock()
	var rows []ports.DeadLetter
	for i, d := range a.dlq {
		if a.dlqTen[i] != tenant || (f.Queue != "" && d.Queue != f.Queue) ||
			(f.ConsumerGroup != "" && d.ConsumerGroup != f.ConsumerGroup) {
			continue
		}
		rows = append(rows, d)
	}
	a.mu.Unlock()
	slices.SortFunc(rows, func(x, y ports.DeadLetter) int {
		if c := y.FailedAt.Compare(x.FailedAt); c != 0 {
			return c
		}
		return strings.Compare(y.ID, x.ID)
	})
	rows = rows[min(max(f.Offset, 0), len(rows)):]
	rows = rows[:min(f.Limit, len(rows))]
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]ports.DeadLetter, len(rows))
	for i, d := range rows {
		out[i] = cloneDeadLetter(d)
	}
	return out, nil
}

func cloneDeadLetter(d ports.DeadLetter) ports.DeadLetter {
	if d.ErrorMessage != nil {
		m := *d.ErrorMessage
		d.ErrorMessage = &m
	}
	d.Blob = bytes.Clone(d.Blob)
	return d
}

// AddDeadLetter stores d as a dead letter of tenant's queue d.Queue, partition
// d.Partition, as the consume path moves a message to the DLQ. A missing queue is made
// as a push naming it would (unconfigured, default options, namespace and task from
// a dotted name "namespace.task"), and a missing partition with a new id. It returns
// the stored row, d with its ID and PartitionID assigned; a zero FailedAt takes Now().
// Times are kept to the microsecond, as PostgreSQL keeps them.
func (a *QueueAdmin) AddDeadLetter(tenant string, d ports.DeadLetter) ports.DeadLetter {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := adminKey(tenant, d.Queue)
	q := a.queues[k]
	if q == nil {
		cfg := ports.QueueConfig{ID: a.newID(), Name: d.Queue, QueueOptions: defaultOptions()}
		if ns, task, ok := strings.Cut(d.Queue, "."); ok {
			task, _, _ = strings.Cut(task, ".")
			cfg.Namespace, cfg.Task = ns, task
		}
		q = &adminQueue{cfg: cfg, partitions: map[string]string{}}
		a.queues[k] = q
	}
	pid := q.partitions[d.Partition]
	if pid == "" {
		pid = a.newID()
		q.partitions[d.Partition] = pid
	}
	d.ID, d.PartitionID = a.newID(), pid
	if d.FailedAt.IsZero() {
		d.FailedAt = a.Now()
	}
	d.FailedAt = d.FailedAt.Truncate(time.Microsecond)
	d.CreatedAt = d.CreatedAt.Truncate(time.Microsecond)
	d = cloneDeadLetter(d)
	a.dlq = append(a.dlq, d)
	a.dlqTen = append(a.dlqTen, tenant)
	return cloneDeadLetter(d)
}
