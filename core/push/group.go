package push

import (
	"errors"
	"sync"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/encryption"
	"github.com/queen-go/queen/core/fusion"
	"github.com/queen-go/queen/core/segment"
)

// A request is stored as fusion groups, one per partition it names: Push mints every
// item, finds the layer-1 leaders (leaders), prepares each leader's frame and sorts it
// into its group (prepare), then makes the groups (newGroups) and submits them together.

// frameRef locates one frame of a request: frame frame of group group, groups numbered
// in order of first appearance in the request.
type frameRef struct{ group, frame int }

// slot locates an item's verdict: the frame at, or, for a follower, its leader's. A
// leader refused before it reached a group has at.group -1.
type slot struct {
	at     frameRef
	leader int
}

// smallPush bounds the requests whose per-item bookkeeping lives on the stack and whose
// layer-1 leaders and groups are found by linear scans instead of maps: most pushes
// carry a few items, and a single-message push is the broker's most frequent request.
const smallPush = 8

// groupKey is a group's partition and its frame count while a request is grouped.
type groupKey struct {
	queue, partition string
	frames           int
	given            bool // a frame carries a transaction id from the request (not minted)
}

// queuePartition names a group's partition in the index of a request with more than
// smallPush groups.
type queuePartition struct{ queue, partition string }

// groupSet is a set of a request's groups, by number; the zero value is empty. The first
// 64 groups are bits of a word, so that a request's sets need no allocation.
type groupSet struct {
	low  uint64       // groups 0 to 63
	high map[int]bool // groups from 64 on (allocated on use: rare)
}

func (s *groupSet) add(gi int) {
	if gi < 64 {
		s.low |= 1 << uint(gi)
		return
	}
	if s.high == nil {
		s.high = make(map[int]bool)
	}
	s.high[gi] = true
}

func (s *groupSet) has(gi int) bool {
	if gi < 64 {
		return s.low&(1<<uint(gi)) != 0
	}
	return s.high[gi]
}

func (s *groupSet) empty() bool { return s.low == 0 && len(s.high) == 0 }

// prepare is the first pass of Push over the layer-1 leaders (slots say which items
// lead). It makes each leader's frame in frames, sealed for its queue by memo, and sorts
// it into its group: the groups are appended to keys in order of first appearance, the
// frames in body order, and slots[i].at says where leader i went. A leader the
// encryption policy refuses (an encrypted queue without a key, or a failed seal) is
// answered failed in results and reaches no group: it is never stored.
//
// It returns the groups and the deferred ones: with a spool, a group of a queue whose
// encryption flag is unknown (rare) may only be spooled, as pushed; the replay reads the
// flag again and seals the payloads, or refuses them, before anything is stored.
func (s *Service) prepare(memo *encryption.Memo, tenant, producerSub string, items []Item, results []Result,
	slots []slot, frames []segment.Frame, keys []groupKey) ([]groupKey, groupSet) {
	var deferred groupSet
	var index map[queuePartition]int // partition -> group, once there are more than smallPush groups
	for i, it := range items {
		if slots[i].leader != i {
			continue // a layer-1 follower: no frame of its own
		}
		r := &results[i]
		f := segment.Frame{ID: r.MessageID, TransactionID: r.TransactionID, ProducerSub: producerSub, Payload: it.Payload}
		err := memo.Seal(tenant, r.Queue, &f)
		undecided := errors.Is(err, encryption.ErrFlagUnknown) && s.opts.Spool != nil
		if err != nil && !undecided {
			r.Status, r.Err = StatusFailed, err
			slots[i].at = frameRef{group: -1}
			continue
		}
		var gi int
		keys, index, gi = groupOf(keys, index, r.Queue, r.Partition)
		if undecided {
			deferred.add(gi)
		}
		slots[i].at = frameRef{group: gi, frame: keys[gi].frames}
		keys[gi].frames++
		keys[gi].given = keys[gi].given || it.TransactionID != ""
		frames[i] = f
	}
	return keys, deferred
}

// leaders sets each item's layer-1 leader (tenant, queue, partition, transactionId: the
// first occurrence leads, dedup.Leaders) in slots, from the minted results.
func leaders(tenant string, results []Result, slots []slot) {
	if len(results) <= smallPush {
		for i := range results {
			r, j := &results[i], 0
			for j < i && (results[j].TransactionID != r.TransactionID || results[j].Partition != r.Partition ||
				results[j].Queue != r.Queue) {
				j++
			}
			slots[i].leader = j
		}
		return
	}
	keys := make([]dedup.Key, len(results))
	for i := range results {
		r := &results[i]
		keys[i] = dedup.Key{Tenant: tenant, Queue: r.Queue, Partition: r.Partition, TransactionID: r.TransactionID}
	}
	for i, l := range dedup.Leaders(keys) {
		slots[i].leader = l
	}
}

// groupOf returns the number of the group of (queue, partition) in keys, adding it when
// it is new: a linear scan for the first smallPush groups, a map (index) beyond.
func groupOf(keys []groupKey, index map[queuePartition]int, queue, partition string) ([]groupKey, map[queuePartition]int, int) {
	if index == nil {
		for gi := range keys {
			if keys[gi].partition == partition && keys[gi].queue == queue {
				return keys, nil, gi
			}
		}
		if len(keys) < smallPush {
			return append(keys, groupKey{queue: queue, partition: partition}), nil, len(keys)
		}
		index = make(map[queuePartition]int, 2*smallPush)
		for gi, k := range keys {
			index[queuePartition{k.queue, k.partition}] = gi
		}
	}
	if gi, ok := index[queuePartition{queue, partition}]; ok {
		return keys, index, gi
	}
	index[queuePartition{queue, partition}] = len(keys)
	return append(keys, groupKey{queue: queue, partition: partition}), index, len(keys)
}

// single is the fusion group of a request with one frame to store (a single-message
// push), with its frame, hash, verdict and wait group, in one allocation.
type single struct {
	g      fusion.Group
	groups [1]*fusion.Group
	frame  [1]segment.Frame
	hash   [1][16]byte
	result [1]fusion.Result
	wg     sync.WaitGroup
}

// newGroups makes the fusion groups of keys, each with room for its frames, their
// hashes and their verdicts, and the wait group their Done counts down: one allocation
// for a single frame, six whatever the number of groups otherwise.
func newGroups(tenant string, keys []groupKey) ([]*fusion.Group, *sync.WaitGroup) {
	if len(keys) == 1 && keys[0].frames == 1 {
		o := &single{}
		o.g = fusion.Group{Tenant: tenant, Queue: keys[0].queue, Partition: keys[0].partition, Done: o.wg.Done,
			Frames: o.frame[:], Hashes: o.hash[:], Results: o.result[:], Minted: !keys[0].given}
		o.groups[0] = &o.g
		return o.groups[:], &o.wg
	}
	total := 0
	for _, k := range keys {
		total += k.frames
	}
	wg := new(sync.WaitGroup)
	arena := make([]fusion.Group, len(keys))
	groups := make([]*fusion.Group, len(keys))
	frames := make([]segment.Frame, total)
	hashes := make([][16]byte, total)
	verdicts := make([]fusion.Result, total)
	off := 0
	for gi, k := range keys {
		end := off + k.frames
		g := &arena[gi]
		g.Tenant, g.Queue, g.Partition, g.Done, g.Minted = tenant, k.queue, k.partition, wg.Done, !k.given
		// Full slice expressions: a group can never grow into its neighbour's frames.
		g.Frames, g.Hashes, g.Results = frames[off:end:end], hashes[off:end:end], verdicts[off:end:end]
		groups[gi] = g
		off = end
	}
	return groups, wg
}
