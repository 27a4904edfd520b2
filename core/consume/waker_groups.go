package consume

import (
	"strings"

	"github.com/queen-go/queen/core/notify"
)

// GroupChanged is WakeGroup as a group-change subscriber (core/notify): an operator
// deleted or moved a group's cursors.
func (w *Waker) GroupChanged(c notify.GroupChange) { w.WakeGroup(c.Tenant, c.Queue, c.Group) }

// WakeGroup wakes every pop of group parked on queue ("" = on every queue of tenant):
// wildcard pops and pops pinned to a partition alike, and the group's discovery pops.
//
// A commit wakes one wildcard pop per group (Notify), because at most one of them can
// claim the partition it names. A deleted or moved group is different: its cursors may
// have work on many partitions at once (a deletion re-reads the whole queue), and pops
// parked on a ring that said "nothing here" would otherwise wait for their re-check. The
// cost is one claim attempt per parked pop of the group, once per operator action.
func (w *Waker) WakeGroup(tenant, queue, group string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if queue != "" {
		w.wakeGroupOn(notify.QueueKey(tenant, queue), group)
	} else {
		prefix := notify.QueueKey(tenant, "")
		for key := range w.queues {
			if strings.HasPrefix(key, prefix) {
				w.wakeGroupOn(key, group)
			}
		}
	}
	// Discovery pops may claim from any queue, the changed ones included.
	keep := w.any[:0]
	for _, wt := range w.any {
		if wt.group == group {
			w.wake(wt, "")
		} else {
			keep = append(keep, wt)
		}
	}
	clear(w.any[len(keep):]) // drop references to woken waiters
	w.any = keep
}

// wakeGroupOn wakes every pop of group parked on key. The caller holds w.mu.
func (w *Waker) wakeGroupOn(key, group string) {
	list, ok := w.queues[key]
	if !ok {
		return
	}
	keep := list[:0]
	for _, wt := range list {
		if wt.group == group {
			w.wake(wt, "")
		} else {
			keep = append(keep, wt)
		}
	}
	clear(list[len(keep):])
	if len(keep) == 0 {
		delete(w.queues, key)
	} else {
		w.queues[key] = keep
	}
}
