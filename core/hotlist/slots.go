package hotlist

import "container/heap"

// Slot states of a partition in one (queue, group) ring.
const (
	idle     uint8 = iota // not tracked: nothing known pending
	ready                 // on the ready list: the next pops try it
	wheeled               // in the wheel until its revisit time
	inflight              // checked out by a pop that has not checked it in yet
)

// Why a slot is in the wheel: it decides what a mark may do to it.
const (
	whyDelay  uint8 = iota + 1 // delayedProcessing: never shortened by a mark
	whyWindow                  // windowBuffer: a fat enough batch promotes it early
	whyLease                   // a lease holds it (parked, capped at Options.LeasePark)
	whyRetry                   // busy row or an empty claim on a deferral queue
)

// none is the nil link of the ready list.
const none int32 = -1

// subring is one sub-shard of a ring: the slots of the partitions whose index i has
// i % shards == its number, at position i / shards of its flat arrays. Every field is
// guarded by the ring's mutex for this sub-ring (ring.mu[k]).
type subring struct {
	state   []uint8
	why     []uint8
	epoch   []uint32 // incremented by every mark: a check-in compares it to its snapshot
	base    []uint32 // epoch when the last took was checked in (promote on ack)
	revisit []int64  // unix ns: wheel due time, check-out time (inflight), or when it became ready
	first   []int64  // unix ns of the first mark since idle (windowBuffer hold)
	marks   []uint32 // messages marked since idle (windowBuffer batch threshold)
	drained []bool   // the last took claimed everything visible (may clear on ack)
	prev    []int32
	next    []int32

	head, tail int32 // ready list, oldest first
	nready     int
	wheel      wheelHeap // lazily purged: an entry is live while its slot is wheeled at that time
}

// grow makes room for local position l.
func (s *subring) grow(l int32) {
	n := int(l) + 1
	if n <= len(s.state) {
		return
	}
	c := max(n, 2*len(s.state), 8)
	s.state = append(s.state, make([]uint8, c-len(s.state))...)
	s.why = append(s.why, make([]uint8, c-len(s.why))...)
	s.epoch = append(s.epoch, make([]uint32, c-len(s.epoch))...)
	s.base = append(s.base, make([]uint32, c-len(s.base))...)
	s.revisit = append(s.revisit, make([]int64, c-len(s.revisit))...)
	s.first = append(s.first, make([]int64, c-len(s.first))...)
	s.marks = append(s.marks, make([]uint32, c-len(s.marks))...)
	s.drained = append(s.drained, make([]bool, c-len(s.drained))...)
	old := len(s.prev)
	s.prev = append(s.prev, make([]int32, c-old)...)
	s.next = append(s.next, make([]int32, c-old)...)
	for i := old; i < c; i++ {
		s.prev[i], s.next[i] = none, none
	}
}

func newSubring() *subring { return &subring{head: none, tail: none} }

// pushReady appends slot l, ready since at (unix ns), to the ready list (it must not be
// on it).
func (s *subring) pushReady(l int32, at int64) {
	s.state[l], s.revisit[l] = ready, at
	s.prev[l], s.next[l] = s.tail, none
	if s.tail == none {
		s.head = l
	} else {
		s.next[s.tail] = l
	}
	s.tail = l
	s.nready++
}

// popReady takes the oldest ready slot, or none.
func (s *subring) popReady() int32 {
	l := s.head
	if l == none {
		return none
	}
	s.unlink(l)
	return l
}

// unlink removes ready slot l from the list (its state is the caller's to set).
func (s *subring) unlink(l int32) {
	p, n := s.prev[l], s.next[l]
	if p == none {
		s.head = n
	} else {
		s.next[p] = n
	}
	if n == none {
		s.tail = p
	} else {
		s.prev[n] = p
	}
	s.prev[l], s.next[l] = none, none
	s.nready--
}

// toWheel parks slot l (not on the ready list) until at.
func (s *subring) toWheel(l int32, at int64, why uint8) {
	s.state[l], s.why[l], s.revisit[l] = wheeled, why, at
	heap.Push(&s.wheel, wheelEntry{at: at, slot: l})
}

// setIdle forgets slot l (not on the ready list).
func (s *subring) setIdle(l int32) {
	s.state[l], s.why[l], s.marks[l], s.first[l], s.revisit[l] = idle, 0, 0, 0, 0
}

// due moves every wheel entry due at now to the ready list, and returns how many.
func (s *subring) due(now int64) int {
	n := 0
	for len(s.wheel) > 0 && s.wheel[0].at <= now {
		e := heap.Pop(&s.wheel).(wheelEntry)
		if s.state[e.slot] != wheeled || s.revisit[e.slot] != e.at {
			continue // stale: the slot left the wheel or was rescheduled
		}
		s.pushReady(e.slot, e.at)
		n++
	}
	return n
}

// liveWheel counts the wheel entries that are still live.
func (s *subring) liveWheel() int {
	n := 0
	for _, e := range s.wheel {
		if s.state[e.slot] == wheeled && s.revisit[e.slot] == e.at {
			n++
		}
	}
	return n
}

// allIdle reports whether no slot is tracked at all.
func (s *subring) allIdle() bool {
	for _, st := range s.state {
		if st != idle {
			return false
		}
	}
	return true
}

// wheelEntry is one scheduled revisit of a slot.
type wheelEntry struct {
	at   int64 // unix ns
	slot int32
}

// wheelHeap is a binary min-heap of revisits by time (container/heap).
type wheelHeap []wheelEntry

func (h wheelHeap) Len() int           { return len(h) }
func (h wheelHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h wheelHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wheelHeap) Push(x any)        { *h = append(*h, x.(wheelEntry)) }
func (h *wheelHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
