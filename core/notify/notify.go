package notify

import "sync"

// Source says what made a partition's data available.
type Source uint8

// The sources of a Commit.
const (
	Pushed       Source = iota + 1 // a fused push segment committed
	Transacted                     // a transaction committed a segment
	DeadLettered                   // an ack moved a message to the dead-letter queue
)

// Commit names a partition that has data for its consumers.
type Commit struct {
	Tenant, Queue, Partition string
	PartitionID              string // "" when the announcer does not know it
	Messages                 int    // messages committed (0 for a dead-letter move)
	Source                   Source
}

// QueueChange names a queue that was reconfigured or deleted.
type QueueChange struct {
	Tenant, Queue string
	Deleted       bool
	// Remote is set on a change another broker made and announced (core/peers): it is
	// not announced to the other brokers again.
	Remote bool
}

// QueueKey is the in-memory key of a queue: tenant \x1f queue. Every structure keyed by
// queue (the long-poll waker, the hot-list's rings) uses this one function, so their keys
// are byte-identical: a mismatch would be a silently lost wake.
func QueueKey(tenant, queue string) string { return tenant + "\x1f" + queue }

// topic is a list of subscribers called in order.
type topic[E any] struct {
	mu   sync.RWMutex
	subs []func(E)
}

func (t *topic[E]) subscribe(f func(E)) {
	t.mu.Lock()
	t.subs = append(t.subs, f)
	t.mu.Unlock()
}

func (t *topic[E]) announce(e E) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, f := range t.subs {
		f(e)
	}
}

// Commits is the commit topic. The zero value has no subscribers; a nil *Commits
// announces to nobody.
type Commits struct{ t topic[Commit] }

// NewCommits returns a commit topic without subscribers.
func NewCommits() *Commits { return &Commits{} }

// Subscribe adds f; it is called for every later Announce.
func (c *Commits) Subscribe(f func(Commit)) { c.t.subscribe(f) }

// Announce calls every subscriber with e.
func (c *Commits) Announce(e Commit) {
	if c != nil {
		c.t.announce(e)
	}
}

// QueueChanges is the queue-change topic. A nil *QueueChanges announces to nobody.
type QueueChanges struct{ t topic[QueueChange] }

// NewQueueChanges returns a queue-change topic without subscribers.
func NewQueueChanges() *QueueChanges { return &QueueChanges{} }

// Subscribe adds f; it is called for every later Announce.
func (q *QueueChanges) Subscribe(f func(QueueChange)) { q.t.subscribe(f) }

// Announce calls every subscriber with e.
func (q *QueueChanges) Announce(e QueueChange) {
	if q != nil {
		q.t.announce(e)
	}
}
