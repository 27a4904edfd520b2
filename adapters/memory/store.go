package memory

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queen-go/queen/ports"
)

// DefaultWindow is the dedup window of queues the test did not configure (3600 s).
const DefaultWindow = 3600 * time.Second

// Store is an in-memory ports.SegmentStore and ports.QueueSettings.
type Store struct {
	// Now is the clock (default time.Now); tests may replace it before use.
	Now func() time.Time
	// BeforePush, when set, runs at the start of every PushSegments call with its
	// segments; returning an error fails the whole bundle (nothing is stored). Tests use
	// it to block, count or fail bundles.
	BeforePush func(segs []ports.Segment) error

	mu         sync.Mutex
	windows    map[string]time.Duration // tenant\x1fqueue -> dedup window
	encrypted  map[string]bool          // tenant\x1fqueue -> encryption flag
	partitions map[string]*partition    // tenant\x1fqueue\x1fpartition
	byID       map[string]*partition
	bundles    int
}

type partition struct {
	id       string
	queueKey string // tenant\x1fqueue
	last     int64
	segs     []stored
}

type stored struct {
	ports.StoredSegment
	hashes  []byte
	removed bool // the segment is gone, its hash sidecar entry stays (as in SQL)
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		Now:        time.Now,
		windows:    make(map[string]time.Duration),
		encrypted:  make(map[string]bool),
		partitions: make(map[string]*partition),
		byID:       make(map[string]*partition),
	}
}

// SetWindow sets a queue's dedup window (0 disables dedup).
func (s *Store) SetWindow(tenant, queue string, w time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.windows[tenant+"\x1f"+queue] = w
}

// SetEncryption sets a queue's encryption flag.
func (s *Store) SetEncryption(tenant, queue string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.encrypted[tenant+"\x1f"+queue] = on
}

// Bundles is the number of PushSegments calls that committed.
func (s *Store) Bundles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bundles
}

// DeleteSegment removes the segment covering off, as retention would: its hashes stay
// (the sidecar has its own watermark), so the frames still deduplicate.
func (s *Store) DeleteSegment(partitionID string, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[partitionID]
	if p == nil {
		return
	}
	for i, sg := range p.segs {
		if off >= sg.BaseOffset && off < sg.BaseOffset+int64(sg.Count) {
			p.segs[i].removed = true
			return
		}
	}
}

// EncryptionEnabled implements ports.QueueSettings.
func (s *Store) EncryptionEnabled(_ context.Context, tenant, queue string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.encrypted[tenant+"\x1f"+queue], nil
}

// PushSegments implements ports.SegmentStore.
func (s *Store) PushSegments(_ context.Context, segs []ports.Segment) ([]ports.SegmentResult, error) {
	if s.BeforePush != nil {
		if err := s.BeforePush(segs); err != nil {
			return nil, err
		}
	}
	for _, sg := range segs {
		if sg.Count < 1 || len(sg.Hashes) != 16*sg.Count {
			return nil, fmt.Errorf("memory: segment of %d frames with %d hash bytes: %w", sg.Count, len(sg.Hashes), ports.ErrInvalid)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	out := make([]ports.SegmentResult, len(segs))
	for i, sg := range segs {
		out[i] = s.pushOne(sg, now)
	}
	s.bundles++
	return out, nil
}

func (s *Store) pushOne(sg ports.Segment, now time.Time) ports.SegmentResult {
	key := sg.Tenant + "\x1f" + sg.Queue + "\x1f" + sg.Partition
	p := s.partitions[key]
	if p == nil {
		p = &partition{id: fmt.Sprintf("00000000-0000-4000-8000-%012d", len(s.partitions)+1), last: -1,
			queueKey: sg.Tenant + "\x1f" + sg.Queue}
		s.partitions[key] = p
		s.byID[p.id] = p
	}
	w, ok := s.windows[sg.Tenant+"\x1f"+sg.Queue]
	if !ok {
		w = DefaultWindow
	}
	if w > 0 {
		verified := sg.Verified
		if verified > p.last {
			verified = -1 // not this partition's history (see log_push_one_v1)
		}
		if dups := p.probe(sg.Hashes, now.Add(-w), verified); len(dups) > 0 {
			return ports.SegmentResult{Status: ports.SegmentDuplicate, PartitionID: p.id, Dups: dups}
		}
	}
	base := p.last + 1
	p.last += int64(sg.Count)
	p.segs = append(p.segs, stored{
		StoredSegment: ports.StoredSegment{BaseOffset: base, Count: sg.Count, CreatedAt: now, Blob: bytes.Clone(sg.Blob)},
		hashes:        bytes.Clone(sg.Hashes),
	})
	return ports.SegmentResult{Status: ports.SegmentQueued, PartitionID: p.id, BaseOffset: base, CreatedAt: now, Window: w}
}

// probe finds incoming hashes stored at or after cutoff at offsets above verified,
// earliest occurrence first.
func (p *partition) probe(hashes []byte, cutoff time.Time, verified int64) []ports.Dup {
	var dups []ports.Dup
	for i := 0; i*16 < len(hashes); i++ {
		h := hashes[i*16 : i*16+16]
	search:
		for _, sg := range p.segs {
			if sg.CreatedAt.Before(cutoff) || sg.BaseOffset+int64(sg.Count)-1 <= verified {
				continue
			}
			for k := range sg.Count {
				if bytes.Equal(sg.hashes[k*16:k*16+16], h) {
					dups = append(dups, ports.Dup{Index: i, Offset: sg.BaseOffset + int64(k)})
					break search
				}
			}
		}
	}
	return dups
}

// SegmentAt implements ports.SegmentStore.
func (s *Store) SegmentAt(_ context.Context, partitionID string, off int64) (ports.StoredSegment, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[partitionID]
	if p == nil {
		return ports.StoredSegment{}, false, nil
	}
	for _, sg := range p.segs {
		if !sg.removed && off >= sg.BaseOffset && off < sg.BaseOffset+int64(sg.Count) {
			return sg.StoredSegment, true, nil
		}
	}
	return ports.StoredSegment{}, false, nil
}

// Segments returns a copy of a partition's stored segments in offset order.
func (s *Store) Segments(tenant, queue, partition string) []ports.StoredSegment {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.partitions[tenant+"\x1f"+queue+"\x1f"+partition]
	if p == nil {
		return nil
	}
	var out []ports.StoredSegment
	for _, sg := range p.segs {
		if !sg.removed {
			out = append(out, sg.StoredSegment)
		}
	}
	return out
}

// Age makes everything stored in the partition older by d.
func (s *Store) Age(partitionID string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byID[partitionID]; p != nil {
		for i := range p.segs {
			p.segs[i].CreatedAt = p.segs[i].CreatedAt.Add(-d)
		}
	}
}

// RecentHashes implements ports.SegmentStore.
func (s *Store) RecentHashes(_ context.Context, partitionID string, maxSegments int) (ports.RecentHashes, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.byID[partitionID]
	if p == nil {
		return ports.RecentHashes{LastOffset: -1}, nil
	}
	window, ok := s.windows[p.queueKey]
	if !ok {
		window = DefaultWindow
	}
	out := ports.RecentHashes{LastOffset: p.last, Window: window}
	cutoff := s.Now().Add(-window)
	for _, sg := range p.segs {
		if !sg.CreatedAt.Before(cutoff) {
			out.Segments = append(out.Segments, ports.HashedSegment{
				BaseOffset: sg.BaseOffset, CreatedAt: sg.CreatedAt, Hashes: bytes.Clone(sg.hashes)})
		}
	}
	if len(out.Segments) > maxSegments {
		out.Segments, out.TooLarge = nil, true
	}
	return out, nil
}
