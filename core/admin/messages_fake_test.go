package admin

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/core/dedup"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// fakeMessages is an in-memory ports.MessageStore with the adapter's rules: browse order,
// the retained window, tenant scoping (one tenant), dead letters by offset.
type fakeMessages struct {
	codec *segment.Codec

	mu    sync.Mutex
	now   time.Time
	parts map[string]*ports.MessagePartition
	segs  []fakeSeg
	dead  []ports.DeadLetter

	moveMu     sync.Mutex // moves of dead letters take turns, as on the advisory lock
	removeErr  error      // MoveDeadLetter fails the row's deletion with it
	browses    int        // BrowseSegments calls
	blobReads  []ports.SegmentRef
	lastFilter ports.MessageFilter
}

type fakeSeg struct {
	pid    string
	base   int64
	at     time.Time
	frames []segment.Frame
	blob   []byte
}

func (s *fakeSeg) end() int64 { return s.base + int64(len(s.frames)) - 1 }

func newFakeMessages(codec *segment.Codec, now time.Time) *fakeMessages {
	return &fakeMessages{codec: codec, now: now, parts: map[string]*ports.MessagePartition{}}
}

// partition creates (or returns) the partition queue/name.
func (f *fakeMessages) partition(queue, name string) *ports.MessagePartition {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.partitionLocked(queue, name)
}

func (f *fakeMessages) partitionLocked(queue, name string) *ports.MessagePartition {
	for _, p := range f.parts {
		if p.Queue.Name == queue && p.Name == name {
			return p
		}
	}
	p := &ports.MessagePartition{ID: uuid.NewString(), Name: name, LastOffset: -1,
		Queue: ports.QueueConfig{ID: "q-" + queue, Name: queue, QueueOptions: ports.QueueOptions{LeaseTime: 300}}}
	f.parts[p.ID] = p
	return p
}

// append commits frames to the partition at time at and returns their base offset.
func (f *fakeMessages) append(p *ports.MessagePartition, at time.Time, frames ...segment.Frame) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appendLocked(p, at, frames...)
}

func (f *fakeMessages) appendLocked(p *ports.MessagePartition, at time.Time, frames ...segment.Frame) int64 {
	base := p.LastOffset + 1
	for i := range frames {
		if frames[i].ID == [16]byte{} {
			frames[i].ID = uuid.New()
		}
	}
	f.segs = append(f.segs, fakeSeg{pid: p.ID, base: base, at: at, frames: frames, blob: f.codec.Encode(frames)})
	p.LastOffset += int64(len(frames))
	return base
}

// kill dead-letters the message at off of p for group, failed at at.
func (f *fakeMessages) kill(p *ports.MessagePartition, off int64, group string, at time.Time) ports.DeadLetter {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.segs {
		if s.pid == p.ID && s.base <= off && off <= s.end() {
			d := ports.DeadLetter{DeadLetterInfo: ports.DeadLetterInfo{ID: uuid.NewString(), Queue: p.Queue.Name,
				Partition: p.Name, PartitionID: p.ID, ConsumerGroup: group, TransactionID: s.frames[off-s.base].TransactionID,
				CreatedAt: s.at, FailedAt: at}, Offset: off, FrameIndex: int(off - s.base), Blob: s.blob}
			f.dead = append(f.dead, d)
			return d
		}
	}
	panic("no such message")
}

func (f *fakeMessages) matches(p *ports.MessagePartition, fl ports.MessageFilter) bool {
	return (fl.Queue == "" || fl.Queue == p.Queue.Name) && (fl.Partition == "" || fl.Partition == p.Name) &&
		(fl.Namespace == "" || fl.Namespace == p.Queue.Namespace) && (fl.Task == "" || fl.Task == p.Queue.Task)
}

// msgBrowseLess is browse order.
func msgBrowseLess(a, b ports.BrowseKey) int {
	return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.PartitionID, b.PartitionID), cmp.Compare(b.EndOffset, a.EndOffset))
}

func (f *fakeMessages) BrowseSegments(_ context.Context, _ string, fl ports.MessageFilter, after *ports.BrowseKey, limit int) (ports.BrowsePage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.browses++
	f.lastFilter = fl
	var segs []ports.BrowseSegment
	for _, s := range f.segs {
		p := f.parts[s.pid]
		if !f.matches(p, fl) || s.end() < p.First || s.at.Before(fl.From) || (!fl.To.IsZero() && s.at.After(fl.To)) {
			continue
		}
		bs := ports.BrowseSegment{PartitionID: s.pid, BaseOffset: s.base, EndOffset: s.end(), CreatedAt: s.at}
		if after != nil && msgBrowseLess(bs.Key(), *after) <= 0 {
			continue
		}
		segs = append(segs, bs)
	}
	slices.SortFunc(segs, func(a, b ports.BrowseSegment) int { return msgBrowseLess(a.Key(), b.Key()) })
	segs = segs[:min(len(segs), limit)]
	page := ports.BrowsePage{Segments: segs, Now: f.now}
	seen := map[string]bool{}
	for _, s := range segs {
		if !seen[s.PartitionID] {
			seen[s.PartitionID] = true
			page.Partitions = append(page.Partitions, *f.parts[s.PartitionID])
		}
		for _, d := range f.dead {
			if d.PartitionID == s.PartitionID && s.BaseOffset <= d.Offset && d.Offset <= s.EndOffset {
				page.DeadLetters = append(page.DeadLetters, ports.MessageAddr{PartitionID: d.PartitionID, Offset: d.Offset})
			}
		}
	}
	return page, nil
}

func (f *fakeMessages) BrowseModes(_ context.Context, _ string, fl ports.MessageFilter) (ports.GroupModes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m ports.GroupModes
	named := map[string]bool{}
	for _, p := range f.parts {
		if !f.matches(p, fl) {
			continue
		}
		for _, c := range p.Cursors {
			if c.Group == ports.QueueModeGroup {
				m.QueueMode = true
			} else {
				named[c.Group] = true
			}
		}
	}
	m.NamedGroups = len(named)
	return m, nil
}

func (f *fakeMessages) SegmentBlobs(_ context.Context, refs []ports.SegmentRef) ([]ports.SegmentBlob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blobReads = append(f.blobReads, refs...)
	var out []ports.SegmentBlob
	for _, r := range refs {
		for _, s := range f.segs {
			if s.pid == r.PartitionID && s.base == r.BaseOffset {
				out = append(out, ports.SegmentBlob{PartitionID: s.pid, StoredSegment: ports.StoredSegment{
					BaseOffset: s.base, Count: len(s.frames), CreatedAt: s.at, Blob: s.blob}})
			}
		}
	}
	return out, nil
}

func (f *fakeMessages) FindMessage(_ context.Context, _ string, pid string, hash [16]byte) (ports.StoredMessage, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.parts[pid]
	if p == nil {
		return ports.StoredMessage{}, false, nil
	}
	var best *fakeSeg
	var off int64 = -1
	for i := range f.segs {
		s := &f.segs[i]
		for k, fr := range s.frames {
			if o := s.base + int64(k); s.pid == pid && o >= p.First && dedup.Hash(fr.TransactionID) == hash && o > off {
				best, off = s, o
			}
		}
	}
	if best == nil {
		return ports.StoredMessage{}, false, nil
	}
	sm := ports.StoredMessage{Partition: *p, Offset: off, Now: f.now,
		Segment: ports.StoredSegment{BaseOffset: best.base, Count: len(best.frames), CreatedAt: best.at, Blob: best.blob}}
	for _, d := range f.dead {
		if d.PartitionID == pid && d.Offset == off {
			sm.Dead = append(sm.Dead, d.DeadLetterInfo)
		}
	}
	slices.SortFunc(sm.Dead, func(a, b ports.DeadLetterInfo) int { return b.FailedAt.Compare(a.FailedAt) })
	return sm, true, nil
}

func (f *fakeMessages) SegmentAt(_ context.Context, _ string, pid string, off int64) (ports.StoredSegment, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.segs {
		if s.pid == pid && s.base <= off && off <= s.end() {
			return ports.StoredSegment{BaseOffset: s.base, Count: len(s.frames), CreatedAt: s.at, Blob: s.blob}, true, nil
		}
	}
	return ports.StoredSegment{}, false, nil
}

func (f *fakeMessages) NewestDeadLetter(_ context.Context, _ string, pid, txn string) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var best *ports.DeadLetter
	for i := range f.dead {
		d := &f.dead[i]
		if d.PartitionID == pid && d.TransactionID == txn && (best == nil || d.FailedAt.After(best.FailedAt)) {
			best = d
		}
	}
	if best == nil {
		return "", false, nil
	}
	return best.ID, true, nil
}

func (f *fakeMessages) MoveDeadLetter(ctx context.Context, _ string, id string, move func(context.Context, ports.DeadLetter) (bool, error)) (ports.DeadLetterMove, error) {
	f.moveMu.Lock()
	defer f.moveMu.Unlock()
	f.mu.Lock()
	i := slices.IndexFunc(f.dead, func(d ports.DeadLetter) bool { return d.ID == id })
	if i < 0 {
		f.mu.Unlock()
		return ports.DeadLetterMove{}, nil
	}
	d := f.dead[i]
	f.mu.Unlock()
	remove, err := move(ctx, d)
	if err != nil {
		return ports.DeadLetterMove{Found: true}, err
	}
	if !remove {
		return ports.DeadLetterMove{Found: true}, nil
	}
	if f.removeErr != nil {
		return ports.DeadLetterMove{Found: true}, f.removeErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead = slices.DeleteFunc(f.dead, func(d ports.DeadLetter) bool { return d.ID == id })
	return ports.DeadLetterMove{Found: true, Removed: true}, nil
}

func (f *fakeMessages) DeleteDeadLetters(_ context.Context, _ string, pid, txn string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.dead)
	f.dead = slices.DeleteFunc(f.dead, func(d ports.DeadLetter) bool { return d.PartitionID == pid && d.TransactionID == txn })
	return int64(n - len(f.dead)), nil
}

func (f *fakeMessages) PurgeDeadLetters(_ context.Context, _ string, queue, group string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.dead)
	f.dead = slices.DeleteFunc(f.dead, func(d ports.DeadLetter) bool {
		return d.Queue == queue && (group == "" || d.ConsumerGroup == group)
	})
	return int64(n - len(f.dead)), nil
}

// fakePusher pushes into a fakeMessages as the push use case does: one segment per push,
// a duplicate when the partition already holds the transaction id. With status set it
// answers that instead and stores nothing.
type fakePusher struct {
	store  *fakeMessages
	status push.Status
	at     time.Time

	mu     sync.Mutex
	pushes []push.Item
	subs   []string
}

func (p *fakePusher) Push(_ context.Context, _ string, producerSub string, items []push.Item) []push.Result {
	p.mu.Lock()
	p.pushes = append(p.pushes, items...)
	p.subs = append(p.subs, producerSub)
	p.mu.Unlock()
	out := make([]push.Result, len(items))
	for i, it := range items {
		r := push.Result{Index: i, TransactionID: it.TransactionID, Queue: it.Queue, Partition: it.Partition}
		if p.status != "" {
			r.Status = p.status
			out[i] = r
			continue
		}
		f := p.store
		f.mu.Lock()
		part := f.partitionLocked(it.Queue, it.Partition)
		r.PartitionID = part.ID
		r.Status = push.StatusQueued
		for _, s := range f.segs {
			for k, fr := range s.frames {
				if s.pid == part.ID && fr.TransactionID == it.TransactionID {
					r.Status, r.MessageID, r.Offset, r.HasOffset = push.StatusDuplicate, fr.ID, s.base+int64(k), true
				}
			}
		}
		if r.Status == push.StatusQueued {
			fr := segment.Frame{ID: uuid.New(), TransactionID: it.TransactionID, ProducerSub: producerSub, Payload: it.Payload}
			r.MessageID = fr.ID
			r.Offset, r.HasOffset = f.appendLocked(part, p.at, fr), true
		}
		f.mu.Unlock()
		out[i] = r
	}
	return out
}

var errMsgFake = errors.New("fake store failure")
