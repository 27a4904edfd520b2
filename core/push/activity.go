package push

// queueCount is one queue's share of a request: its messages stored, and the partitions
// it created (messages committed at offset 0: a partition's first message is there).
type queueCount struct {
	queue    string
	messages int
	created  int
}

// smallCount is how many queues a request counts without allocating.
const smallCount = 8

// countOf returns the count of queue in cs, appended when new.
func countOf(cs []queueCount, queue string) ([]queueCount, *queueCount) {
	for i := range cs {
		if cs[i].queue == queue {
			return cs, &cs[i]
		}
	}
	cs = append(cs, queueCount{queue: queue})
	return cs, &cs[len(cs)-1]
}

// stored reports whether a result's message was stored by this request: committed, or
// spooled to be committed by the replay.
func stored(st Status) bool { return st == StatusQueued || st == StatusBuffered }

// first reports whether a result's message was committed as its partition's first (offset
// 0): the push created the partition. Offsets are never reused, so exactly one push
// of a partition's life, on any broker, sees it. A spooled push is committed by the
// replay, which counts nothing: a partition it creates goes uncounted.
func first(r *Result) bool { return r.Status == StatusQueued && r.HasOffset && r.Offset == 0 }

// countPushed tells Options.Activity of one push request: one request per queue it
// named, with the messages it stored there and the partitions it created. slots, when
// given, are Push's: a layer-1 follower answers its leader's result, but stores nothing
// of its own.
func (s *Service) countPushed(tenant string, results []Result, slots []slot) {
	var buf [smallCount]queueCount
	cs := buf[:0]
	var c *queueCount
	for i := range results {
		r := &results[i]
		if c == nil || c.queue != r.Queue {
			cs, c = countOf(cs, r.Queue)
		}
		if stored(r.Status) && (slots == nil || slots[i].leader == i) {
			c.messages++
			if first(r) {
				c.created++
			}
		}
	}
	s.report(tenant, cs)
}

// report tells Options.Activity of each queue's push request and its new partitions.
func (s *Service) report(tenant string, cs []queueCount) {
	for i := range cs {
		s.opts.Activity.Pushed(tenant, cs[i].queue, cs[i].messages)
		if cs[i].created > 0 {
			s.opts.Activity.PartitionsCreated(tenant, cs[i].queue, cs[i].created)
		}
	}
}

// countTransaction tells Options.Activity of one committed transaction: per queue it
// pushed to, a transaction and a push request with the messages it stored and the
// partitions it created. Its acks are counted by AcksApplied (core/consume).
func (s *Service) countTransaction(tenant string, out []TxnResult) {
	var buf [smallCount]queueCount
	cs := buf[:0]
	var c *queueCount
	for i := range out {
		r := out[i].Push
		if r == nil {
			continue
		}
		if c == nil || c.queue != r.Queue {
			cs, c = countOf(cs, r.Queue)
		}
		if r.Status == StatusQueued {
			c.messages++
			if first(r) {
				c.created++
			}
		}
	}
	s.report(tenant, cs)
	for i := range cs {
		s.opts.Activity.Transacted(tenant, cs[i].queue)
	}
}
