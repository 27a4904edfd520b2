package memory

import (
	"fmt"
	"slices"
	"sync"
)

// ActivityLog is a ports.Activity that records each call as a line of text naming the
// tenant and queue ("pushed t/q 2", "popped t/q 2 lag 3000/1500", "acked t/q 1/0/0",
// "transacted t/q", "created t/q 1", "deleted t/q 1"), for tests that check what the
// push, pop, ack and retention paths report. Safe for concurrent use; the zero value is
// ready.
type ActivityLog struct {
	mu    sync.Mutex
	calls []string
}

// Take returns the calls recorded since the last Take, sorted (the order of calls
// across queues is not part of any contract), and forgets them.
func (a *ActivityLog) Take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.calls
	a.calls = nil
	slices.Sort(out)
	return out
}

func (a *ActivityLog) add(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, line)
}

// Pushed records "pushed tenant/queue messages".
func (a *ActivityLog) Pushed(tenant, queue string, messages int) {
	a.add("pushed %s/%s %d", tenant, queue, messages)
}

// Popped records "popped tenant/queue messages lag sum/max" (milliseconds).
func (a *ActivityLog) Popped(tenant, queue string, messages int, lagSumMs, lagMaxMs int64) {
	a.add("popped %s/%s %d lag %d/%d", tenant, queue, messages, lagSumMs, lagMaxMs)
}

// Acked records "acked tenant/queue success/failed/dlq".
func (a *ActivityLog) Acked(tenant, queue string, success, failed, dlq int) {
	a.add("acked %s/%s %d/%d/%d", tenant, queue, success, failed, dlq)
}

// Transacted records "transacted tenant/queue".
func (a *ActivityLog) Transacted(tenant, queue string) { a.add("transacted %s/%s", tenant, queue) }

// PartitionsCreated records "created tenant/queue n".
func (a *ActivityLog) PartitionsCreated(tenant, queue string, n int) {
	a.add("created %s/%s %d", tenant, queue, n)
}

// PartitionsDeleted records "deleted tenant/queue n".
func (a *ActivityLog) PartitionsDeleted(tenant, queue string, n int) {
	a.add("deleted %s/%s %d", tenant, queue, n)
}
