package consume

import (
	"strings"
	"sync"

	"github.com/queen-go/queen/core/notify"
)

// Waker wakes parked pops when their queue receives a commit. Keys are
// notify.QueueKey(tenant, queue).
//
// A commit to a partition wakes, per consumer group, the longest-parked wildcard pop of
// that group, and every pop pinned to that partition; a discovery pop (no queue) wakes
// on any commit. Waking one pop per group rather than all of them matters under load:
// each woken pop costs a claim attempt, and of N pops of one group woken by a commit to
// one partition at most one can claim it (the lease is per partition and group), so the
// others would only spend database time and slow the commits that wake them.
//
// A pop that was woken but did not use the wake (its client left, or it had claimed
// something by itself meanwhile) hands it on to the next pop of its group, so a wake is
// never lost to a pop that will not look. Parked pops re-check on their own backoff
// anyway (docs/api.md §5.2): a lost wake costs latency, never a message.
type Waker struct {
	mu     sync.Mutex
	queues map[string][]*waiter
	any    []*waiter
}

type waiter struct {
	ch        chan struct{}
	key       string
	group     string
	partition string // "" = any partition of the queue
	woken     bool
	by        string // partition whose commit woke it
}

// NewWaker returns an empty Waker.
func NewWaker() *Waker { return &Waker{queues: make(map[string][]*waiter)} }

// Wait is one parked pop's registration.
type Wait struct {
	w  *Waker
	wt *waiter
}

// Wait registers a pop of group parked on key; partition "" waits for any partition.
// The caller must call Done once it stops waiting.
func (w *Waker) Wait(key, group, partition string) *Wait {
	wt := &waiter{ch: make(chan struct{}), key: key, group: group, partition: partition}
	w.mu.Lock()
	w.queues[key] = append(w.queues[key], wt)
	w.mu.Unlock()
	return &Wait{w: w, wt: wt}
}

// WaitAny registers a discovery pop: woken by a commit to any queue.
func (w *Waker) WaitAny(group string) *Wait {
	wt := &waiter{ch: make(chan struct{}), group: group}
	w.mu.Lock()
	w.any = append(w.any, wt)
	w.mu.Unlock()
	return &Wait{w: w, wt: wt}
}

// Parked returns how many pops are parked now (not yet woken).
func (w *Waker) Parked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.any)
	for _, list := range w.queues {
		n += len(list)
	}
	return n
}

// EachParked calls f for each queue with pops parked now (not yet woken), with how many
// (the metrics history's sampler); discovery pops, parked on no queue, are left out. f
// runs after the Waker's lock is released.
func (w *Waker) EachParked(f func(tenant, queue string, n int)) {
	type parked struct {
		key string
		n   int
	}
	w.mu.Lock()
	list := make([]parked, 0, len(w.queues))
	for key, ws := range w.queues {
		list = append(list, parked{key, len(ws)})
	}
	w.mu.Unlock()
	for _, p := range list {
		// Keys are notify.QueueKey(tenant, queue): tenant, a unit separator, the queue.
		tenant, queue, _ := strings.Cut(p.key, "\x1f")
		f(tenant, queue, p.n)
	}
}

// C is closed when the pop is woken.
func (x *Wait) C() <-chan struct{} { return x.wt.ch }

// Done ends the registration. used reports whether the pop acted on a wake (or is about
// to claim anyway); a wake it received and did not use goes to another pop of its group.
// Done on a nil Wait does nothing.
func (x *Wait) Done(used bool) {
	if x == nil {
		return
	}
	w, wt := x.w, x.wt
	w.mu.Lock()
	defer w.mu.Unlock()
	if !wt.woken {
		w.remove(wt)
		return
	}
	if !used && wt.key != "" && wt.partition == "" {
		w.handOn(wt)
	}
}

func (w *Waker) remove(wt *waiter) {
	list := w.any
	if wt.key != "" {
		list = w.queues[wt.key]
	}
	for i, o := range list {
		if o == wt {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	switch {
	case wt.key == "":
		w.any = list
	case len(list) == 0:
		delete(w.queues, wt.key)
	default:
		w.queues[wt.key] = list
	}
}

// handOn wakes the next wildcard pop of wt's group on its queue, if one is parked.
func (w *Waker) handOn(wt *waiter) {
	for _, o := range w.queues[wt.key] {
		if o.partition == "" && o.group == wt.group {
			w.wake(o, wt.by)
			w.remove(o)
			return
		}
	}
}

func (w *Waker) wake(wt *waiter, partition string) {
	wt.woken, wt.by = true, partition
	close(wt.ch)
}

// Committed is Notify as a commit subscriber (core/notify).
func (w *Waker) Committed(c notify.Commit) { w.Notify(notify.QueueKey(c.Tenant, c.Queue), c.Partition) }

// Notify reports a commit to partition of the queue key: it wakes the longest-parked
// wildcard pop of each group, every pop pinned to the partition, and every discovery pop.
func (w *Waker) Notify(key, partition string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if list, ok := w.queues[key]; ok {
		var groups map[string]bool
		keep := list[:0]
		for _, wt := range list {
			switch {
			case wt.partition != "" && wt.partition == partition:
				w.wake(wt, partition)
			case wt.partition == "" && !groups[wt.group]:
				if groups == nil {
					groups = make(map[string]bool)
				}
				groups[wt.group] = true
				w.wake(wt, partition)
			default:
				keep = append(keep, wt)
			}
		}
		clear(list[len(keep):]) // drop references to woken waiters
		if len(keep) == 0 {
			delete(w.queues, key)
		} else {
			w.queues[key] = keep
		}
	}
	for _, wt := range w.any {
		w.wake(wt, partition)
	}
	w.any = nil
}
