package fusion

import (
	"strings"

	"github.com/queen-go/queen/core/notify"
)

// ForgetQueue drops this broker's dedup cache (and pending warm-up reads) of every
// partition of the queue, in every shard, and returns once all shards have done so. Call
// it after the queue was reconfigured or deleted: the cache's watermark claims were made
// under the old dedup window and for the old partitions (see known.go), and without them
// the next flush of each partition makes the SQL probe the whole window again.
func (b *Batcher) ForgetQueue(tenant, queue string) {
	prefix := partKey(tenant, queue, "")
	for _, s := range b.shards {
		s.mu.Lock()
		s.forgetQueue(prefix)
		s.unlock()
	}
}

// QueueChanged is ForgetQueue as a queue-change subscriber.
func (b *Batcher) QueueChanged(c notify.QueueChange) { b.ForgetQueue(c.Tenant, c.Queue) }

// forgetQueue drops the shard's dedup state of the partitions whose key starts with
// prefix. Partition keys are tenant \x1f queue \x1f partition and names hold no control
// characters, so the prefix matches exactly one queue's partitions.
func (s *shard) forgetQueue(prefix string) {
	for key, k := range s.known {
		if strings.HasPrefix(key, prefix) {
			s.forget(key, k)
		}
	}
	for key := range s.warming {
		if strings.HasPrefix(key, prefix) {
			// The read in flight took its snapshot before the change: install discards
			// it. The entry stays in warming so no second read for the key starts (and
			// races it) until this one has landed.
			s.stale[key] = struct{}{}
		}
	}
	queue := s.warmQueue[:0]
	for _, r := range s.warmQueue {
		if strings.HasPrefix(r.key, prefix) {
			delete(s.warmQueued, r.key) // its partition id may be gone: the next commit asks again
			continue
		}
		queue = append(queue, r)
	}
	clear(s.warmQueue[len(queue):])
	s.warmQueue = queue
	for key := range s.warmTried {
		if strings.HasPrefix(key, prefix) {
			if _, pending := s.warming[key]; !pending {
				delete(s.warmTried, key) // a back-off from the old state: re-read at once
			}
		}
	}
}
