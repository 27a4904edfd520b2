package admin

import (
	"time"

	"github.com/queen-go/queen/ports"
)

// The statuses of a message (docs/api.md §5.8), spelled as on the wire.
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusDeadLetter = "dead_letter"
)

// validStatus reports whether s is a status a browse may filter on.
func validStatus(s string) bool {
	switch s {
	case StatusPending, StatusProcessing, StatusCompleted, StatusDeadLetter:
		return true
	}
	return false
}

// Mode types: which kinds of consumer group read a set of partitions.
const (
	ModeBus    = "bus"    // named groups only
	ModeQueue  = "queue"  // the queue-mode group only
	ModeHybrid = "hybrid" // both
	ModeNone   = "none"   // no group has a cursor yet
)

// Mode says which kinds of consumer group have cursors on the partitions a view covers.
type Mode struct {
	HasQueueMode bool
	BusGroups    int // distinct named groups
	Type         string
}

func modeOf(m ports.GroupModes) Mode {
	t := ModeNone
	switch {
	case m.QueueMode && m.NamedGroups > 0:
		t = ModeHybrid
	case m.QueueMode:
		t = ModeQueue
	case m.NamedGroups > 0:
		t = ModeBus
	}
	return Mode{HasQueueMode: m.QueueMode, BusGroups: m.NamedGroups, Type: t}
}

// groupStatus is one group's view of a message at offset off, from its cursor: completed
// when the cursor is at or past it, processing when it lies in the group's live lease,
// else pending. The lease expiry is returned when processing.
func groupStatus(c *ports.GroupCursor, off int64, now time.Time) (string, time.Time) {
	switch {
	case off <= c.Committed:
		return StatusCompleted, time.Time{}
	case off <= c.BatchEnd && c.LeaseExpires.After(now):
		return StatusProcessing, c.LeaseExpires
	}
	return StatusPending, time.Time{}
}

// MessageState is what the views say of one message's progress through its groups.
type MessageState struct {
	Status       string // over the governing groups (see stateOf)
	QueueStatus  string // the queue-mode group's view
	ConsumedBy   int    // named groups whose cursor passed the message
	TotalGroups  int    // named groups with a cursor on the partition
	LeaseExpires time.Time
}

// stateOf computes a message's state from its partition's cursors, by the rule the
// resource counts use (docs/api.md §5.7): the governing groups are the named groups with a
// cursor on the partition, or the queue-mode group when no named group has one.
//
//   - dead_letter: some group moved the message to the dead-letter queue (dead); it wins
//     over everything else, the cursor of that group having moved past it.
//   - completed: every governing group's cursor is at or past it. With no cursor at all
//     nobody consumed it: pending.
//   - processing: not completed, and some governing group holds a live lease over it.
//   - pending: otherwise.
//
// QueueStatus is the same rule for the queue-mode group alone (pending without its
// cursor). LeaseExpires is the latest live lease over the message among the governing
// groups (zero when none).
func stateOf(p *ports.MessagePartition, off int64, dead bool, now time.Time) MessageState {
	var st MessageState
	var queueMode *ports.GroupCursor
	for i := range p.Cursors {
		c := &p.Cursors[i]
		if c.Group == ports.QueueModeGroup {
			queueMode = c
			continue
		}
		st.TotalGroups++
		if off <= c.Committed {
			st.ConsumedBy++
		}
	}
	st.QueueStatus = StatusPending
	if queueMode != nil {
		st.QueueStatus, _ = groupStatus(queueMode, off, now)
	}
	if dead {
		st.Status, st.QueueStatus = StatusDeadLetter, StatusDeadLetter
		return st
	}
	governs := func(c *ports.GroupCursor) bool {
		return (st.TotalGroups > 0) == (c.Group != ports.QueueModeGroup)
	}
	completed, governing, leased := 0, 0, false
	for i := range p.Cursors {
		c := &p.Cursors[i]
		if !governs(c) {
			continue
		}
		governing++
		s, exp := groupStatus(c, off, now)
		switch s {
		case StatusCompleted:
			completed++
		case StatusProcessing:
			leased = true
			if exp.After(st.LeaseExpires) {
				st.LeaseExpires = exp
			}
		}
	}
	switch {
	case governing > 0 && completed == governing:
		st.Status = StatusCompleted
	case leased:
		st.Status = StatusProcessing
	default:
		st.Status = StatusPending
	}
	return st
}
