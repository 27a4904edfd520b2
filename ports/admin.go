package ports

import (
	"context"
	"errors"
	"time"
)

// QueueOption names one configuration option of a queue (docs/api.md §5.6). Options combine
// into a set (a bit mask), which says which options a Configure call sets.
type QueueOption uint32

// The 21 options of docs/api.md §5.6, in the order of its table.
const (
	OptNamespace QueueOption = 1 << iota
	OptTask
	OptPriority
	OptLeaseTime
	OptRetryLimit
	OptRetryDelay
	OptMaxSize
	OptTTL
	OptDeadLetterQueue
	OptDLQAfterMaxRetries
	OptDelayedProcessing
	OptWindowBuffer
	OptRetentionSeconds
	OptCompletedRetentionSeconds
	OptRetentionEnabled
	OptEncryptionEnabled
	OptMaxWaitTimeSeconds
	OptMinPopWaitTime
	OptDedupWindowSeconds
	OptRetentionSinkHold
	OptRetentionSinkHoldMaxSeconds

	// AllQueueOptions is the set of every option (replace mode).
	AllQueueOptions = OptRetentionSinkHoldMaxSeconds<<1 - 1
)

// Has reports whether the set o contains every option of x.
func (o QueueOption) Has(x QueueOption) bool { return o&x == x }

// QueueConfig is a queue's identity and the value of every option.
type QueueConfig struct {
	ID        string // assigned by the store
	Name      string
	Namespace string
	Task      string
	QueueOptions
	// Shard, when set, is the shard a new queue is placed on (configure's shard option,
	// docs/design.md "Several PostgreSQL clusters"); nil leaves it to the placement rules.
	// Not stored with the queue: stores ignore it.
	Shard *int
}

// QueueOptions are a queue's tunable options (docs/api.md §5.6) other than its namespace and
// task, under their wire names: a configure answer carries them as its "options" object.
// Integer options are stored as PostgreSQL integers: callers keep them within int32.
type QueueOptions struct {
	Priority                    int    `json:"priority"`
	LeaseTime                   int    `json:"leaseTime"` // seconds
	RetryLimit                  int    `json:"retryLimit"`
	RetryDelay                  int    `json:"retryDelay"` // milliseconds
	MaxSize                     int    `json:"maxSize"`
	TTL                         int    `json:"ttl"` // seconds
	DeadLetterQueue             bool   `json:"deadLetterQueue"`
	DLQAfterMaxRetries          bool   `json:"dlqAfterMaxRetries"`
	DelayedProcessing           int    `json:"delayedProcessing"` // seconds
	WindowBuffer                int    `json:"windowBuffer"`      // seconds
	RetentionSeconds            int    `json:"retentionSeconds"`
	CompletedRetentionSeconds   int    `json:"completedRetentionSeconds"`
	RetentionEnabled            bool   `json:"retentionEnabled"`
	EncryptionEnabled           bool   `json:"encryptionEnabled"`
	MaxWaitTimeSeconds          int    `json:"maxWaitTimeSeconds"`
	MinPopWaitTime              int    `json:"minPopWaitTime"` // milliseconds
	DedupWindowSeconds          int    `json:"dedupWindowSeconds"`
	RetentionSinkHold           string `json:"retentionSinkHold"`
	RetentionSinkHoldMaxSeconds int    `json:"retentionSinkHoldMaxSeconds"`
}

// DeadLetterFilter selects dead letters; empty strings select everything.
type DeadLetterFilter struct {
	Queue         string
	ConsumerGroup string
	Limit, Offset int
}

// DeadLetterInfo is what a dead-letter listing says of a message besides its content.
type DeadLetterInfo struct {
	ID            string
	Queue         string
	Partition     string
	PartitionID   string
	ConsumerGroup string
	TransactionID string
	ErrorMessage  *string // nil when none was recorded
	RetryCount    int
	CreatedAt     time.Time // commit time of the message
	FailedAt      time.Time
}

// DeadLetter is one dead-letter row: the message at Offset is frame FrameIndex of Blob,
// a copy of the segment that held it (layout in core/segment).
type DeadLetter struct {
	DeadLetterInfo
	Offset     int64
	FrameIndex int
	Blob       []byte
}

// QueueAdmin is the administrative side of queues: configuration, deletion and the
// dead-letter listing. Every method is scoped to one tenant.
type QueueAdmin interface {
	// Configure creates the queue named cfg.Name with cfg's values or, when it exists,
	// sets the options in set to cfg's values and keeps the others; either way the queue
	// is marked configured. It returns the stored row, in one atomic step.
	Configure(ctx context.Context, tenant string, cfg QueueConfig, set QueueOption) (QueueConfig, error)
	// DeleteQueue deletes the queue with its partitions, segments, hash sidecar, cursors,
	// subscriptions and dead letters, in one transaction. existed is false when there was
	// no such queue (nothing was deleted).
	DeleteQueue(ctx context.Context, tenant, queue string) (existed bool, err error)
	// DeadLetters lists dead letters, newest failure first.
	DeadLetters(ctx context.Context, tenant string, f DeadLetterFilter) ([]DeadLetter, error)
}

// ErrConflict: the store gave up on a transaction that kept colliding with concurrent
// ones (deadlock or serialization failure, retried a few times); trying again later may
// succeed.
var ErrConflict = errors.New("conflicting concurrent transaction")
