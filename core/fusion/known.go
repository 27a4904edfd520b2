package fusion

import (
	"encoding/binary"
	"time"
)

// known is a shard's memory of one partition's recent transaction-id hashes: the broker
// dedup cache. Its only product is the Verified watermark sent with a segment: "no frame
// at an offset <= verified carries any of these hashes inside the window", which lets the
// SQL probe skip that history. The verdict itself always stays with PostgreSQL: a hash
// found here sends the segment with Verified -1 (a full probe), never a local duplicate.
//
// The watermark is only extended by this broker's own commits when they are contiguous
// (base == verified+1, or base 0 for a new partition), or re-armed by a warm-up read of
// the partition's recent hash sidecar (warm.go) when the broker did not write its
// history itself (after a restart, or after another broker wrote); any gap (another broker wrote, a
// commit's outcome was lost) resets it to -1, so it can be stale only in excess. Entries
// older than the queue's window are evicted, which is safe because the SQL probe ignores
// them too (its cutoff is taken later, on the database clock the entries carry).
//
// Configure and queue deletion open two gaps, closed on this broker by
// Batcher.ForgetQueue (forget.go), which those routes call after their commit: (1) a
// configure that widens a queue's window would let a flush claim a watermark over history
// evicted under the old window until this partition's next commit reports the new window;
// (2) a queue deleted and created again, whose new partition another writer pushes past
// the old watermark before this broker's next commit, would let one flush claim it (SQL
// ignores a watermark beyond the allocator, which covers the slower case). ForgetQueue
// drops the queue's caches and discards warm-up reads whose snapshot predates the change,
// so the next flush of each partition makes a full probe. What remains: a partition
// already taken (offered or in flight) when the configure commits (it is concurrent with the configure, and its
// verdict is the one the old window gives), and other brokers sharing the database, whose
// caches are reset when the change's announcement reaches them (core/peers), milliseconds
// after the commit, and not at all when it is lost; closing that needs the claim to carry
// what it assumed (window, partition id) for SQL to check.
type known struct {
	pid      string // partition id the history belongs to
	verified int64
	// Commit times are unix nanoseconds, not time.Time: without its location pointer
	// the entries hold no pointer, so the garbage collector never scans them (a cache
	// of millions of hashes made every collection walk it). Hashes are held
	// by their hashKey, 8 bytes of the 16.
	hashes map[uint64]int64 // hash key -> commit time of its newest occurrence
	// ring holds the entries in insertion order, for age eviction: n of them from head,
	// wrapping around. A ring, not a slice compacted now and then: it reaches its working
	// size (the window's entries, rounded up to a power of two) while the window fills,
	// where a slice kept up to twice the window between two compactions and only
	// reached that size during the second window.
	ring    []stamped
	head, n int
	churn   int // entries evicted since the map was last rebuilt
	window  time.Duration
}

// cacheEntryBytes is what one remembered hash costs, for Options.CacheBytes: its map
// slot (8-byte key and 8-byte time, with the table's load factor and power-of-two
// growth) and its ring entry (16 bytes, the ring rounded up to a power of two).
// TestKnownChurnKeepsItsSize measures 60 bytes at 600 hashes per partition.
const cacheEntryBytes = 64

// hashKey is what the cache holds of a 16-byte transaction-id hash: its first 8 bytes.
// Half the memory of the whole hash and a cheaper map key (an insert cost 2.7 µs per
// message under load with 16-byte keys; docs/benchmarks.md, "The dedup cache's key"). Two ids sharing a key can only make
// the cache answer "seen" for an id it has not seen, which costs a full probe in SQL,
// never a skipped one: the cache's answer "not seen" stays exact.
func hashKey(h []byte) uint64 { return binary.LittleEndian.Uint64(h) }

// size is the number of hashes held.
func (k *known) size() int { return k.n }

type stamped struct {
	h  uint64 // hashKey
	at int64  // unix ns
}

func newKnown() *known { return &known{verified: -1, hashes: make(map[uint64]int64)} }

// verifiedFor returns the watermark a segment with these frames may claim.
func (k *known) verifiedFor(refs []ref) int64 {
	if k == nil || k.verified < 0 {
		return -1
	}
	for _, r := range refs {
		if r.g.Minted {
			continue
		}
		if k.holds(r.g.Hashes[r.i]) {
			return -1
		}
	}
	return k.verified
}

// committed records a queued segment of n frames at base with the given hashes in
// partition pid. It reports how many entries the cache grew by (negative when it
// shrank). A window of 0 (dedup off) or a different partition id (the partition was
// deleted and created again) resets the cache.
func (k *known) committed(pid string, base int64, hashes []byte, at time.Time, window time.Duration) int {
	before := k.size()
	if (window > k.window && k.verified >= 0) || window <= 0 || (k.pid != "" && pid != k.pid) {
		// A larger window makes evicted entries relevant again; another partition
		// behind the same name has another history: start over.
		k.reset()
		if window <= 0 {
			return k.size() - before
		}
	}
	k.pid, k.window = pid, window
	n := int64(len(hashes) / 16)
	if k.verified >= 0 && base+n-1 <= k.verified {
		return 0 // already known: a warm-up snapshot taken after this commit included it
	}
	if base != 0 && k.verified != base-1 {
		k.reset() // someone else wrote in between: the history is unknown
		return k.size() - before
	}
	ns := at.UnixNano()
	for i := range n {
		k.add(hashKey(hashes[16*i:]), ns)
	}
	k.verified = base + n - 1
	k.evict(at.Add(-window))
	return k.size() - before
}

// holds reports whether the cache may have seen hash h (see hashKey).
func (k *known) holds(h [16]byte) bool {
	_, hit := k.hashes[hashKey(h[:])]
	return hit
}

// add remembers the hash keyed h committed at ns (unix nanoseconds).
func (k *known) add(h uint64, ns int64) {
	k.hashes[h] = ns
	if k.n == len(k.ring) {
		k.grow()
	}
	k.ring[(k.head+k.n)&(len(k.ring)-1)] = stamped{h, ns}
	k.n++
}

// grow doubles the ring (16 entries at first), unwrapping it.
func (k *known) grow() {
	bigger := make([]stamped, max(16, 2*len(k.ring)))
	for i := range k.n {
		bigger[i] = k.ring[(k.head+i)&(len(k.ring)-1)]
	}
	k.ring, k.head = bigger, 0
}

// evict drops entries committed before cutoff: the SQL probe ignores them too.
func (k *known) evict(cutoff time.Time) {
	c := cutoff.UnixNano()
	mask := len(k.ring) - 1
	for k.n > 0 && k.ring[k.head].at < c {
		e := k.ring[k.head]
		if at, ok := k.hashes[e.h]; ok && at <= e.at {
			delete(k.hashes, e.h)
		}
		k.head = (k.head + 1) & mask
		k.n--
		k.churn++
	}
	if k.churn >= len(k.ring) {
		k.rehash() // about once per window
	}
}

// rehash replaces the hash map by a fresh one holding the same entries. Go's maps never
// shrink, and a map under steady insert/delete churn grows its table though its entry
// count stays the same (deleted slots become tombstones that only a growth reclaims):
// a soak at 2,000 msg/s over 1,000 partitions saw the cache's heap go from 48 to 88 MB
// between minutes 5 and 30 with a constant 600 entries per partition
// (TestKnownChurnKeepsItsSize). Rebuilding once per ring's worth of evictions, about
// once per window, costs one insert per entry per window and keeps the table at the
// size of its live entries.
func (k *known) rehash() {
	k.churn = 0
	fresh := make(map[uint64]int64, len(k.hashes))
	for h, at := range k.hashes {
		fresh[h] = at
	}
	k.hashes = fresh
}

func (k *known) reset() {
	k.verified = -1
	clear(k.hashes)
	clear(k.ring)
	k.head, k.n, k.churn = 0, 0, 0
}
