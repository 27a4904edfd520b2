package memory

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/queen-go/queen/ports"
)

// MessageStore is the Store's ports.MessageStore, over the same state: what pushes
// stored, the cursors pops and acks moved, the dead letters acks wrote. It is a view of
// its own because ports.MessageStore's SegmentAt is scoped to a tenant and so is not the
// ports.SegmentStore method of that name. It follows adapters/admin/messages.go: a
// browse reads the hash sidecar (a segment whose blob is gone is still listed, its blob
// is not), everything honours the retention watermarks, dead letters are read newest
// failure first (ties by id).
type MessageStore struct{ s *Store }

var _ ports.MessageStore = (*MessageStore)(nil)

// Messages returns the store's ports.MessageStore.
func (s *Store) Messages() *MessageStore { return &MessageStore{s: s} }

// first is the first offset whose message and hash are both still retained.
func (p *partition) first() int64 { return max(p.logStart, p.txnsStart) }

// messagePartition is p as the message views read it. Callers hold s.mu.
func (s *Store) messagePartition(p *partition) ports.MessagePartition {
	mp := ports.MessagePartition{ID: p.id, Name: p.name, Queue: s.configOf(p.q), First: p.first(), LastOffset: p.last}
	for _, gc := range s.cursorsOf(p.id) {
		mp.Cursors = append(mp.Cursors, ports.GroupCursor{Group: gc.group, Committed: gc.c.committed,
			BatchEnd: gc.c.batchEnd, LeaseExpires: gc.c.expires})
	}
	return mp
}

// browsed is the tenant's partitions f selects (names only, not times). Callers hold
// s.mu.
func (s *Store) browsed(tenant string, f ports.MessageFilter) []*partition {
	var out []*partition
	for _, q := range s.tenantQueues(tenant, f.Queue, f.Namespace, f.Task) {
		for _, p := range s.partitionsOf(q) {
			if f.Partition == "" || p.name == f.Partition {
				out = append(out, p)
			}
		}
	}
	return out
}

// browseOrder is the order of ports.BrowseKey: newest commit first, then partition id
// ascending, then last offset descending.
func browseOrder(a, b ports.BrowseKey) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.PartitionID, b.PartitionID),
		cmp.Compare(b.EndOffset, a.EndOffset))
}

// BrowseSegments implements ports.MessageStore.
func (m *MessageStore) BrowseSegments(ctx context.Context, tenant string, f ports.MessageFilter, after *ports.BrowseKey, limit int) (ports.BrowsePage, error) {
	s := m.s
	if err := s.begin(ctx, "BrowseSegments"); err != nil {
		return ports.BrowsePage{}, err
	}
	if limit <= 0 {
		return ports.BrowsePage{}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	page := ports.BrowsePage{Now: s.Now()}
	var segs []ports.BrowseSegment
	for _, p := range s.browsed(tenant, f) {
		if p.last < p.first() {
			continue
		}
		// Every sidecar entry, of removed segments too: the browse reads the sidecar.
		for _, sg := range p.segs {
			if sg.hashGone {
				continue
			}
			bs := ports.BrowseSegment{PartitionID: p.id, BaseOffset: sg.BaseOffset,
				EndOffset: sg.BaseOffset + int64(sg.Count) - 1, CreatedAt: sg.CreatedAt}
			if bs.EndOffset < p.first() || bs.CreatedAt.Before(f.From) || (!f.To.IsZero() && bs.CreatedAt.After(f.To)) ||
				(after != nil && browseOrder(bs.Key(), *after) <= 0) {
				continue
			}
			segs = append(segs, bs)
		}
	}
	slices.SortFunc(segs, func(a, b ports.BrowseSegment) int { return browseOrder(a.Key(), b.Key()) })
	page.Segments = segs[:min(limit, len(segs)):min(limit, len(segs))]
	seen := make(map[string]bool)
	dead := make(map[ports.MessageAddr]bool)
	for _, bs := range page.Segments {
		if !seen[bs.PartitionID] {
			seen[bs.PartitionID] = true
			page.Partitions = append(page.Partitions, s.messagePartition(s.byID[bs.PartitionID]))
		}
		for _, d := range s.dead {
			a := ports.MessageAddr{PartitionID: d.PartitionID, Offset: d.Offset}
			if a.PartitionID == bs.PartitionID && a.Offset >= bs.BaseOffset && a.Offset <= bs.EndOffset && !dead[a] {
				dead[a] = true
				page.DeadLetters = append(page.DeadLetters, a)
			}
		}
	}
	return page, nil
}

// BrowseModes implements ports.MessageStore.
func (m *MessageStore) BrowseModes(ctx context.Context, tenant string, f ports.MessageFilter) (ports.GroupModes, error) {
	s := m.s
	if err := s.begin(ctx, "BrowseModes"); err != nil {
		return ports.GroupModes{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var modes ports.GroupModes
	named := make(map[string]bool)
	for _, p := range s.browsed(tenant, f) {
		for _, gc := range s.cursorsOf(p.id) {
			if gc.group == ports.QueueModeGroup {
				modes.QueueMode = true
			} else {
				named[gc.group] = true
			}
		}
	}
	modes.NamedGroups = len(named)
	return modes, nil
}

// SegmentBlobs implements ports.MessageStore: copies the caller may change.
func (m *MessageStore) SegmentBlobs(ctx context.Context, refs []ports.SegmentRef) ([]ports.SegmentBlob, error) {
	s := m.s
	if err := s.begin(ctx, "SegmentBlobs"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ports.SegmentBlob
	for _, r := range refs {
		p := s.byID[strings.ToLower(r.PartitionID)]
		if p == nil {
			continue
		}
		for _, sg := range p.segs {
			if !sg.removed && sg.BaseOffset == r.BaseOffset {
				c := sg.StoredSegment
				c.Blob = bytes.Clone(c.Blob)
				out = append(out, ports.SegmentBlob{PartitionID: p.id, StoredSegment: c})
			}
		}
	}
	return out, nil
}

// FindMessage implements ports.MessageStore.
func (m *MessageStore) FindMessage(ctx context.Context, tenant, partitionID string, hash [16]byte) (ports.StoredMessage, bool, error) {
	s := m.s
	if err := s.begin(ctx, "FindMessage"); err != nil {
		return ports.StoredMessage{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.tenantPartition(tenant, partitionID)
	if p == nil {
		return ports.StoredMessage{}, false, nil
	}
	off := int64(-1)
	for _, sg := range p.segs { // the sidecar: removed segments' hashes too
		if sg.hashGone {
			continue
		}
		for k := range sg.Count {
			o := sg.BaseOffset + int64(k)
			if o >= p.first() && o <= p.last && o > off && bytes.Equal(sg.hashes[16*k:16*k+16], hash[:]) {
				off = o
			}
		}
	}
	if off < 0 {
		return ports.StoredMessage{}, false, nil
	}
	sg := p.segmentCovering(off)
	if sg == nil {
		return ports.StoredMessage{}, false, nil
	}
	seg := sg.StoredSegment
	seg.Blob = bytes.Clone(seg.Blob)
	sm := ports.StoredMessage{Partition: s.messagePartition(p), Offset: off, Segment: seg, Now: s.Now()}
	for _, d := range s.deadRows(func(d *ports.DeadLetter) bool { return d.PartitionID == p.id && d.Offset == off }) {
		info := cloneDeadLetter(*d).DeadLetterInfo
		info.Queue, info.Partition = p.q.name, p.name
		sm.Dead = append(sm.Dead, info)
	}
	return sm, true, nil
}

// deadRows returns the dead letters keep accepts, newest failure first (ties by id,
// descending). Callers hold s.mu.
func (s *Store) deadRows(keep func(d *ports.DeadLetter) bool) []*ports.DeadLetter {
	var out []*ports.DeadLetter
	for i := range s.dead {
		if keep(&s.dead[i]) {
			out = append(out, &s.dead[i])
		}
	}
	slices.SortFunc(out, func(a, b *ports.DeadLetter) int {
		return cmp.Or(b.FailedAt.Compare(a.FailedAt), strings.Compare(b.ID, a.ID))
	})
	return out
}

// ofTenant reports whether the dead letter's partition belongs to the tenant. Callers
// hold s.mu.
func (s *Store) ofTenant(tenant string, d *ports.DeadLetter) bool {
	p := s.byID[d.PartitionID]
	return p != nil && p.q.tenant == tenant
}

// SegmentAt implements ports.MessageStore: the stored segment covering offset, when the
// offset is still retained.
func (m *MessageStore) SegmentAt(ctx context.Context, tenant, partitionID string, offset int64) (ports.StoredSegment, bool, error) {
	s := m.s
	if err := s.begin(ctx, "SegmentAt"); err != nil {
		return ports.StoredSegment{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.tenantPartition(tenant, partitionID)
	if p == nil || offset < p.logStart {
		return ports.StoredSegment{}, false, nil
	}
	sg := p.segmentCovering(offset)
	if sg == nil {
		return ports.StoredSegment{}, false, nil
	}
	seg := sg.StoredSegment
	seg.Blob = bytes.Clone(seg.Blob)
	return seg, true, nil
}

// NewestDeadLetter implements ports.MessageStore.
func (m *MessageStore) NewestDeadLetter(ctx context.Context, tenant, partitionID, transactionID string) (string, bool, error) {
	s := m.s
	if err := s.begin(ctx, "NewestDeadLetter"); err != nil {
		return "", false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pid := strings.ToLower(partitionID)
	rows := s.deadRows(func(d *ports.DeadLetter) bool {
		return d.PartitionID == pid && d.TransactionID == transactionID && s.ofTenant(tenant, d)
	})
	if len(rows) == 0 {
		return "", false, nil
	}
	return rows[0].ID, true, nil
}

// MoveDeadLetter implements ports.MessageStore. Moves of one row take turns on a lock of
// their own; the store's state is not locked while move runs, so move may push, pop or
// ack through the same store.
func (m *MessageStore) MoveDeadLetter(ctx context.Context, tenant, id string, move func(context.Context, ports.DeadLetter) (bool, error)) (ports.DeadLetterMove, error) {
	s := m.s
	if err := s.begin(ctx, "MoveDeadLetter"); err != nil {
		return ports.DeadLetterMove{}, err
	}
	id = strings.ToLower(id)
	unlock := s.lockRow(id)
	defer unlock()
	s.mu.Lock()
	var row *ports.DeadLetter
	for i := range s.dead {
		if s.dead[i].ID == id && s.ofTenant(tenant, &s.dead[i]) {
			c := cloneDeadLetter(s.dead[i])
			p := s.byID[c.PartitionID]
			c.Queue, c.Partition = p.q.name, p.name
			row = &c
		}
	}
	s.mu.Unlock()
	if row == nil {
		return ports.DeadLetterMove{}, nil
	}
	remove, err := move(ctx, *row)
	if err != nil || !remove {
		return ports.DeadLetterMove{Found: true}, err
	}
	if s.AdminFault != nil {
		if err := s.AdminFault("MoveDeadLetter/remove"); err != nil {
			return ports.DeadLetterMove{Found: true}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.dead)
	s.dead = slices.DeleteFunc(s.dead, func(d ports.DeadLetter) bool { return d.ID == id })
	return ports.DeadLetterMove{Found: true, Removed: len(s.dead) < n}, nil
}

// DeleteDeadLetters implements ports.MessageStore.
func (m *MessageStore) DeleteDeadLetters(ctx context.Context, tenant, partitionID, transactionID string) (int64, error) {
	s := m.s
	if err := s.begin(ctx, "DeleteDeadLetters"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pid := strings.ToLower(partitionID)
	n := len(s.dead)
	s.dead = slices.DeleteFunc(s.dead, func(d ports.DeadLetter) bool {
		return d.PartitionID == pid && d.TransactionID == transactionID && s.ofTenant(tenant, &d)
	})
	return int64(n - len(s.dead)), nil
}

// PurgeDeadLetters implements ports.MessageStore.
func (m *MessageStore) PurgeDeadLetters(ctx context.Context, tenant, queue, group string) (int64, error) {
	s := m.s
	if err := s.begin(ctx, "PurgeDeadLetters"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.dead)
	s.dead = slices.DeleteFunc(s.dead, func(d ports.DeadLetter) bool {
		q := s.deadQueue(d.PartitionID) // by queue, as SQL purges: a dropped partition's too
		return q != nil && q.tenant == tenant && q.name == queue && (group == "" || d.ConsumerGroup == group)
	})
	return int64(n - len(s.dead)), nil
}
