package shard

import (
	"cmp"
	"context"
	"strings"
	"sync"

	"github.com/queen-go/queen/ports"
)

// Messages is ports.MessageStore over several shards (docs/design.md, "Several
// PostgreSQL clusters (shards)"): a call naming a partition goes to the shard its id
// names, one naming a queue to the queue's shard, and a browse of no queue reads every
// shard and merges their pages in browse order, so the admin message views read the
// shards as one database.
type Messages struct {
	shards []ports.MessageStore // index = shard number
	placer *Placer
}

var _ ports.MessageStore = (*Messages)(nil)

// NewMessages returns the message store over shards (index = shard number) placed by
// placer.
func NewMessages(shards []ports.MessageStore, placer *Placer) *Messages {
	return &Messages{shards: shards, placer: placer}
}

// browseOrder is the total order of ports.BrowseKey, as the stores sort their browses:
// newest commit first, then partition id ascending (PostgreSQL orders uuids as their
// lower-case text does), then last offset descending.
func browseOrder(a, b ports.BrowseKey) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.PartitionID, b.PartitionID),
		cmp.Compare(b.EndOffset, a.EndOffset))
}

// BrowseSegments implements ports.MessageStore: a queue's browse on its shard; any other
// asks every shard for limit segments after the same key and keeps the first limit of
// their merge in browse order. A shard's first limit segments after the key include
// every one of its segments among the merged first limit, so the page, and the key of
// its last segment the caller continues after, are those of one database holding every
// shard's segments.
func (m *Messages) BrowseSegments(ctx context.Context, tenant string, f ports.MessageFilter, after *ports.BrowseKey, limit int) (ports.BrowsePage, error) {
	if f.Queue != "" {
		n, err := m.placer.Holder(ctx, tenant, f.Queue)
		if err != nil {
			return ports.BrowsePage{}, err
		}
		return m.shards[n].BrowseSegments(ctx, tenant, f, after, limit)
	}
	if limit <= 0 {
		return ports.BrowsePage{}, nil
	}
	pages, err := askAll(m.shards, func(_ int, s ports.MessageStore) (ports.BrowsePage, error) {
		return s.BrowseSegments(ctx, tenant, f, after, limit)
	})
	if err != nil {
		return ports.BrowsePage{}, err
	}
	return mergeBrowse(pages, limit), nil
}

// mergeBrowse is the first limit segments of pages in browse order, with their
// partitions (in order of first appearance, as the stores list them) and dead letters
// (segment by segment, in the order their shard listed them). A partition lives on one
// shard, so its id names one page's partition and dead letters.
//
// Now is the latest of the shards' clocks: a lease is shown live only when it is ahead
// of every shard's clock, never live on one database's clock after another's said it
// ended (the shards' clocks are assumed to agree within NTP's accuracy).
func mergeBrowse(pages []ports.BrowsePage, limit int) ports.BrowsePage {
	var out ports.BrowsePage
	segs := make([][]ports.BrowseSegment, len(pages))
	parts := make(map[string]*ports.MessagePartition)
	dead := make(map[string][]ports.MessageAddr)
	for i := range pages {
		p := &pages[i]
		segs[i] = p.Segments
		for j := range p.Partitions {
			parts[p.Partitions[j].ID] = &p.Partitions[j]
		}
		for _, a := range p.DeadLetters {
			dead[a.PartitionID] = append(dead[a.PartitionID], a)
		}
		if p.Now.After(out.Now) {
			out.Now = p.Now
		}
	}
	out.Segments = MergePage(segs, func(a, b ports.BrowseSegment) int { return browseOrder(a.Key(), b.Key()) }, 0, limit)
	seen := make(map[string]bool)
	listed := make(map[ports.MessageAddr]bool)
	for _, s := range out.Segments {
		if p := parts[s.PartitionID]; p != nil && !seen[s.PartitionID] {
			seen[s.PartitionID] = true
			out.Partitions = append(out.Partitions, *p)
		}
		for _, a := range dead[s.PartitionID] {
			if a.Offset >= s.BaseOffset && a.Offset <= s.EndOffset && !listed[a] {
				listed[a] = true
				out.DeadLetters = append(out.DeadLetters, a)
			}
		}
	}
	return out
}

// BrowseModes implements ports.MessageStore: a queue's on its shard; any other filter's
// from every shard. The queue-mode group has a cursor when it has one on any shard. The
// distinct named groups cannot be added up from counts (a group reading queues of two
// shards is counted by both), so the merge takes the largest shard's count: never a
// group that does not exist, exact whenever one shard holds cursors of every named
// group the filter covers (a namespace's queues share a shard), and above zero exactly
// when some shard has a named group.
func (m *Messages) BrowseModes(ctx context.Context, tenant string, f ports.MessageFilter) (ports.GroupModes, error) {
	if f.Queue != "" {
		n, err := m.placer.Holder(ctx, tenant, f.Queue)
		if err != nil {
			return ports.GroupModes{}, err
		}
		return m.shards[n].BrowseModes(ctx, tenant, f)
	}
	modes, err := askAll(m.shards, func(_ int, s ports.MessageStore) (ports.GroupModes, error) {
		return s.BrowseModes(ctx, tenant, f)
	})
	var out ports.GroupModes
	if err != nil {
		return out, err
	}
	for _, g := range modes {
		out.QueueMode = out.QueueMode || g.QueueMode
		out.NamedGroups = max(out.NamedGroups, g.NamedGroups)
	}
	return out, nil
}

// SegmentBlobs implements ports.MessageStore: each ref is read on its partition's shard
// (the shards in parallel), and the segments found come back in refs' order.
func (m *Messages) SegmentBlobs(ctx context.Context, refs []ports.SegmentRef) ([]ports.SegmentBlob, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	groups := byShard(refs, func(r ports.SegmentRef) int { return HolderOf(r.PartitionID, len(m.shards)) })
	type key struct {
		pid  string
		base int64
	}
	var mu sync.Mutex
	found := make(map[key]ports.SegmentBlob, len(refs))
	err := scatter(groups, func(n int, idx []int) error {
		blobs, err := m.shards[n].SegmentBlobs(ctx, pick(refs, idx))
		mu.Lock()
		defer mu.Unlock()
		for _, b := range blobs {
			found[key{strings.ToLower(b.PartitionID), b.BaseOffset}] = b
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []ports.SegmentBlob
	for _, r := range refs {
		if b, ok := found[key{strings.ToLower(r.PartitionID), r.BaseOffset}]; ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// FindMessage implements ports.MessageStore on the partition's shard.
func (m *Messages) FindMessage(ctx context.Context, tenant, partitionID string, hash [16]byte) (ports.StoredMessage, bool, error) {
	return m.shards[HolderOf(partitionID, len(m.shards))].FindMessage(ctx, tenant, partitionID, hash)
}

// SegmentAt implements ports.MessageStore on the partition's shard.
func (m *Messages) SegmentAt(ctx context.Context, tenant, partitionID string, offset int64) (ports.StoredSegment, bool, error) {
	return m.shards[HolderOf(partitionID, len(m.shards))].SegmentAt(ctx, tenant, partitionID, offset)
}

// NewestDeadLetter implements ports.MessageStore on the partition's shard.
func (m *Messages) NewestDeadLetter(ctx context.Context, tenant, partitionID, transactionID string) (string, bool, error) {
	return m.shards[HolderOf(partitionID, len(m.shards))].NewestDeadLetter(ctx, tenant, partitionID, transactionID)
}

// MoveDeadLetter implements ports.MessageStore. A dead letter's id does not name its
// shard, so the shards are tried in order until one finds the row (a store that does not
// find it answers Found false and no error; move runs on that one shard only). When no
// shard found it and one failed, the row may be on that one: the call fails with its
// *UnreachableError rather than answer that the row does not exist.
func (m *Messages) MoveDeadLetter(ctx context.Context, tenant, id string, move func(context.Context, ports.DeadLetter) (bool, error)) (ports.DeadLetterMove, error) {
	var unreachable error
	for n, s := range m.shards {
		res, err := s.MoveDeadLetter(ctx, tenant, id, move)
		if res.Found {
			return res, err
		}
		if err != nil && unreachable == nil {
			unreachable = &UnreachableError{Shard: n, Err: err}
		}
	}
	return ports.DeadLetterMove{}, unreachable
}

// DeleteDeadLetters implements ports.MessageStore on the partition's shard.
func (m *Messages) DeleteDeadLetters(ctx context.Context, tenant, partitionID, transactionID string) (int64, error) {
	return m.shards[HolderOf(partitionID, len(m.shards))].DeleteDeadLetters(ctx, tenant, partitionID, transactionID)
}

// PurgeDeadLetters implements ports.MessageStore on the queue's shard, which holds its
// dead letters (a queue's placement outlives the queue, so a deleted queue's are found
// there too).
func (m *Messages) PurgeDeadLetters(ctx context.Context, tenant, queue, group string) (int64, error) {
	n, err := m.placer.Holder(ctx, tenant, queue)
	if err != nil {
		return 0, err
	}
	return m.shards[n].PurgeDeadLetters(ctx, tenant, queue, group)
}
