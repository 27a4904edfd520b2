package ports

import (
	"context"
	"time"
)

// Segment is one partition's share of a fusion bundle: Count frames packed into Blob
// (layout in core/segment) with their transaction-id hashes in Hashes (16 bytes per
// frame, frame order).
type Segment struct {
	Tenant    string
	Queue     string
	Partition string
	Count     int
	Hashes    []byte // 16 x Count bytes of xxh3-128, frame k at [16k, 16k+16)
	Verified  int64  // offsets <= Verified are known not to hold these hashes; -1 = none
	Blob      []byte // zstd-compressed packed frames
	// Plain says some frame of Blob is stored unsealed (not an encryption envelope). The
	// producer decided so from its cached copy of the queue's encryptionEnabled flag,
	// which another broker may have changed since: the store refuses a plain segment of a
	// queue that encrypts (SegmentEncrypted), so a payload of an encrypted queue never
	// reaches it in plaintext.
	Plain bool
}

// SegmentStatus is the outcome of one segment of a bundle.
type SegmentStatus uint8

const (
	// SegmentQueued: the segment was stored; frame k is at offset BaseOffset+k.
	SegmentQueued SegmentStatus = iota + 1
	// SegmentDuplicate: some frames' hashes already exist in the partition inside the
	// dedup window (listed in Dups); nothing of the segment was written.
	SegmentDuplicate
	// SegmentEncrypted: refused: the queue encrypts and the segment holds plaintext
	// (Segment.Plain); nothing of it was stored. The segment's producer decided from a
	// stale flag: it seals the frames and pushes again, or refuses them.
	SegmentEncrypted
)

// Dup names one incoming frame (Index, in segment frame order) and the absolute offset
// of its original occurrence.
type Dup struct {
	Index  int
	Offset int64
}

// SegmentResult is the verdict for one segment, in the same position as its input.
type SegmentResult struct {
	Status      SegmentStatus
	PartitionID string
	BaseOffset  int64
	CreatedAt   time.Time
	Window      time.Duration // the queue's dedup window applied to the segment
	Dups        []Dup
}

// StoredSegment is a committed segment read back from the store.
type StoredSegment struct {
	BaseOffset int64
	Count      int
	CreatedAt  time.Time
	Blob       []byte
}

// SegmentStore is where push bundles are committed.
type SegmentStore interface {
	// PushSegments commits every segment in one transaction and returns one result per
	// segment in input order. An error means nothing of the bundle was committed.
	PushSegments(ctx context.Context, segs []Segment) ([]SegmentResult, error)
	// SegmentAt returns the segment covering offset in the partition; ok is false when
	// it no longer exists (removed by retention).
	SegmentAt(ctx context.Context, partitionID string, offset int64) (seg StoredSegment, ok bool, err error)
	// RecentHashes reads, from one snapshot, the partition's last offset, its queue's
	// dedup window, and the hash sidecar of every segment at or below that offset
	// committed within that window: all the history a duplicate probe could match. Used
	// to warm the broker's dedup cache for partitions it did not write since it started.
	// When that history holds more than maxSegments segments it reads no hashes and sets
	// TooLarge. An unknown partition reads as LastOffset -1.
	RecentHashes(ctx context.Context, partitionID string, maxSegments int) (RecentHashes, error)
}

// RecentHashes is a partition's recent dedup history (see SegmentStore.RecentHashes).
type RecentHashes struct {
	LastOffset int64
	Window     time.Duration   // the queue's dedup window in the snapshot
	Segments   []HashedSegment // ascending offsets
	TooLarge   bool            // more than maxSegments segments: Segments is empty
}

// HashedSegment is one segment's hash sidecar row.
type HashedSegment struct {
	BaseOffset int64
	CreatedAt  time.Time
	Hashes     []byte // 16 bytes per frame, frame order
}
