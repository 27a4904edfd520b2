package consume

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queen-go/queen/ports"
)

// queueTally is one queue's share of a pop or an ack request.
type queueTally struct {
	queue              string
	messages           int // pop: delivered; ack: applied as completed
	failed, dlq        int // ack: applied with another status; moved to the dead letters
	lagSumMs, lagMaxMs int64
}

// smallTally is how many queues a request tallies without allocating.
const smallTally = 8

// tallyOf returns the tally of queue in ts, appended when new.
func tallyOf(ts []queueTally, queue string) ([]queueTally, *queueTally) {
	for i := range ts {
		if ts[i].queue == queue {
			return ts, &ts[i]
		}
	}
	ts = append(ts, queueTally{queue: queue})
	return ts, &ts[len(ts)-1]
}

// countPop tells Options.Activity of one answered pop request (b nil: an empty pop):
// per queue, the messages delivered and their push-to-pop lag. It also learns the
// queue of each partition delivered from, for the acks (partitionQueues).
func (s *Service) countPop(req ports.PopRequest, b *Batch) {
	a := s.opts.Activity
	if b == nil || len(b.Messages) == 0 {
		a.Popped(req.Tenant, req.Queue, 0, 0, 0)
		return
	}
	now := time.Now()
	var buf [smallTally]queueTally
	ts := buf[:0]
	var t *queueTally
	lastPID := ""
	for i := range b.Messages {
		m := &b.Messages[i]
		if t == nil || t.queue != m.Queue {
			ts, t = tallyOf(ts, m.Queue)
		}
		lag := max(now.Sub(m.CreatedAt).Milliseconds(), 0)
		t.messages++
		t.lagSumMs += lag
		t.lagMaxMs = max(t.lagMaxMs, lag)
		if m.PartitionID != lastPID {
			lastPID = m.PartitionID
			s.parts.learn(m.PartitionID, m.Queue)
		}
	}
	for i := range ts {
		a.Popped(req.Tenant, ts[i].queue, ts[i].messages, ts[i].lagSumMs, ts[i].lagMaxMs)
	}
}

// countAcks tells Options.Activity of one ack call's committed results: per queue, the
// acknowledgements applied as completed (success), applied with another status
// (failed: retried or dead-lettered), and the dead-letter moves. A result names its
// queue only on some items (ports.AckResult); the others take their partition's, from
// this call's named results or from what this broker delivered. An item whose queue
// stays unknown counts in the broker's totals only (queue "").
func (s *Service) countAcks(tenant string, items []ports.AckItem, res []ports.AckResult) {
	for k := range res {
		if res[k].Queue != "" {
			s.parts.learn(items[k].PartitionID, res[k].Queue)
		}
	}
	var buf [smallTally]queueTally
	ts := buf[:0]
	var t *queueTally
	lastPID, queue := "", ""
	for k := range res {
		r := &res[k]
		if pid := items[k].PartitionID; pid != lastPID {
			lastPID, queue = pid, s.parts.lookup(pid)
		}
		if t == nil || t.queue != queue {
			ts, t = tallyOf(ts, queue)
		}
		switch {
		case !r.OK:
		case items[k].Status == ports.AckCompleted:
			t.messages++
		default:
			t.failed++
		}
		if r.DLQ {
			t.dlq++
		}
	}
	for i := range ts {
		s.opts.Activity.Acked(tenant, ts[i].queue, ts[i].messages, ts[i].failed, ts[i].dlq)
	}
}

// maxPartitionQueues bounds partitionQueues: past it the map starts afresh (a miss only
// leaves an ack in the broker's totals).
const maxPartitionQueues = 1 << 16

// partitionQueues remembers the queue of partitions (ids are unique across tenants):
// acks name a partition, not a queue. Kept only when Options.Activity is set. A
// sync.Map: a known partition is read without writing any shared word.
type partitionQueues struct {
	m      sync.Map // partition id -> queue name
	stores atomic.Int64
}

func (p *partitionQueues) lookup(pid string) string {
	if v, ok := p.m.Load(pid); ok {
		return v.(string)
	}
	return ""
}

func (p *partitionQueues) learn(pid, queue string) {
	if v, ok := p.m.Load(pid); ok && v.(string) == queue {
		return
	}
	if p.stores.Add(1) > maxPartitionQueues {
		p.m.Clear()
		p.stores.Store(0)
	}
	// Copies: the entries must not pin the buffers of the requests they came from.
	p.m.Store(strings.Clone(pid), strings.Clone(queue))
}
