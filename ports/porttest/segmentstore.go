package porttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/ports"
)

// Fixture is a fresh, empty store plus the hooks the suite needs to arrange state that
// the port itself cannot express.
type Fixture struct {
	Store ports.SegmentStore
	// SetWindow sets a queue's dedup window, creating the queue if needed.
	SetWindow func(t *testing.T, tenant, queue string, w time.Duration)
	// Age makes everything stored in the partition older by d.
	Age func(t *testing.T, partitionID string, d time.Duration)
	// DeleteSegment removes the segment covering off, keeping its hashes (as retention
	// deletes segments before the hash sidecar).
	DeleteSegment func(t *testing.T, partitionID string, off int64)
}

const tenant = ports.DefaultTenant

func hash(s string) []byte {
	h := make([]byte, 16)
	copy(h, fmt.Sprintf("%-16.16s", s))
	return h
}

// seg builds a segment whose frames have the given transaction ids; the blob is opaque.
func seg(queue, partition string, txns ...string) ports.Segment {
	var hs []byte
	for _, t := range txns {
		hs = append(hs, hash(t)...)
	}
	return ports.Segment{Tenant: tenant, Queue: queue, Partition: partition, Count: len(txns),
		Hashes: hs, Verified: -1, Blob: []byte("blob:" + fmt.Sprint(txns))}
}

func push(t *testing.T, s ports.SegmentStore, segs ...ports.Segment) []ports.SegmentResult {
	t.Helper()
	res, err := s.PushSegments(context.Background(), segs)
	if err != nil {
		t.Fatalf("PushSegments: %v", err)
	}
	if len(res) != len(segs) {
		t.Fatalf("%d results for %d segments", len(res), len(segs))
	}
	return res
}

func wantQueued(t *testing.T, r ports.SegmentResult, base int64) {
	t.Helper()
	if r.Status != ports.SegmentQueued || r.BaseOffset != base || r.PartitionID == "" || r.CreatedAt.IsZero() {
		t.Fatalf("result %+v, want queued at base %d with partition id and time", r, base)
	}
}

// SegmentStore runs the conformance suite; newFixture must return an isolated store.
func SegmentStore(t *testing.T, newFixture func(t *testing.T) Fixture) {
	tests := []struct {
		name string
		run  func(t *testing.T, f Fixture)
	}{
		{"offsets are gapless per partition", testGapless},
		{"bundle results in input order", testBundleOrder},
		{"duplicate writes nothing", testDuplicate},
		{"dedup scope is one partition", testPartitionScope},
		{"window zero disables dedup", testWindowZero},
		{"history older than the window is not probed", testWindowExpiry},
		{"segment at covers offsets", testSegmentAt},
		{"verified history is not probed", testVerified},
		{"recent hashes cover the window", testRecentHashes},
		{"misaligned hashes are rejected", testMisaligned},
		{"concurrent bundles keep partitions gapless", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newFixture(t))
		})
	}
}

func testGapless(t *testing.T, f Fixture) {
	wantQueued(t, push(t, f.Store, seg("q", "p", "a", "b", "c"))[0], 0)
	wantQueued(t, push(t, f.Store, seg("q", "p", "d"))[0], 3)
	wantQueued(t, push(t, f.Store, seg("q", "p", "e", "f"))[0], 4)
}

func testBundleOrder(t *testing.T, f Fixture) {
	push(t, f.Store, seg("q", "b", "x"))
	res := push(t, f.Store, seg("q", "c", "1"), seg("q", "b", "2", "3"), seg("r", "a", "4"))
	wantQueued(t, res[0], 0)
	wantQueued(t, res[1], 1)
	wantQueued(t, res[2], 0)
	if res[0].PartitionID == res[1].PartitionID || res[0].PartitionID == res[2].PartitionID {
		t.Fatalf("distinct partitions share an id: %+v", res)
	}
	if !res[0].CreatedAt.Equal(res[1].CreatedAt) {
		t.Fatalf("segments of one bundle have different timestamps: %v, %v", res[0].CreatedAt, res[1].CreatedAt)
	}
}

func testDuplicate(t *testing.T, f Fixture) {
	push(t, f.Store, seg("q", "p", "a", "b"))
	res := push(t, f.Store, seg("q", "p", "n", "b", "a"))[0]
	if res.Status != ports.SegmentDuplicate {
		t.Fatalf("result %+v, want duplicate", res)
	}
	want := []ports.Dup{{Index: 1, Offset: 1}, {Index: 2, Offset: 0}}
	if fmt.Sprint(res.Dups) != fmt.Sprint(want) {
		t.Fatalf("dups = %v, want %v", res.Dups, want)
	}
	// Nothing was allocated: the next clean segment starts right after the first one.
	wantQueued(t, push(t, f.Store, seg("q", "p", "n"))[0], 2)
}

func testPartitionScope(t *testing.T, f Fixture) {
	push(t, f.Store, seg("q", "p1", "same"))
	wantQueued(t, push(t, f.Store, seg("q", "p2", "same"))[0], 0)
	wantQueued(t, push(t, f.Store, seg("other", "p1", "same"))[0], 0)
}

func testWindowZero(t *testing.T, f Fixture) {
	f.SetWindow(t, tenant, "q", 0)
	push(t, f.Store, seg("q", "p", "same"))
	wantQueued(t, push(t, f.Store, seg("q", "p", "same"))[0], 1)
}

func testWindowExpiry(t *testing.T, f Fixture) {
	f.SetWindow(t, tenant, "q", 10*time.Second)
	first := push(t, f.Store, seg("q", "p", "old"))[0]
	if r := push(t, f.Store, seg("q", "p", "old"))[0]; r.Status != ports.SegmentDuplicate {
		t.Fatalf("inside the window: %+v, want duplicate", r)
	}
	f.Age(t, first.PartitionID, time.Minute)
	wantQueued(t, push(t, f.Store, seg("q", "p", "old"))[0], 1)
}

func testSegmentAt(t *testing.T, f Fixture) {
	a := push(t, f.Store, seg("q", "p", "a", "b"))[0]
	push(t, f.Store, seg("q", "p", "c"))
	for _, tt := range []struct {
		off  int64
		base int64
		ok   bool
	}{{0, 0, true}, {1, 0, true}, {2, 2, true}, {3, 0, false}, {-1, 0, false}} {
		got, ok, err := f.Store.SegmentAt(context.Background(), a.PartitionID, tt.off)
		if err != nil || ok != tt.ok || (ok && got.BaseOffset != tt.base) {
			t.Fatalf("SegmentAt(%d) = %+v, %v, %v; want base %d ok %v", tt.off, got, ok, err, tt.base, tt.ok)
		}
		if ok && !bytes.HasPrefix(got.Blob, []byte("blob:")) {
			t.Fatalf("SegmentAt(%d) blob %q is not the stored one", tt.off, got.Blob)
		}
	}
	f.DeleteSegment(t, a.PartitionID, 0)
	if _, ok, err := f.Store.SegmentAt(context.Background(), a.PartitionID, 1); ok || err != nil {
		t.Fatalf("deleted segment still found (ok %v, err %v)", ok, err)
	}
	// Its hashes survive the segment: the frames still deduplicate.
	if r := push(t, f.Store, seg("q", "p", "a"))[0]; r.Status != ports.SegmentDuplicate || r.Dups[0].Offset != 0 {
		t.Fatalf("after segment deletion: %+v, want duplicate of offset 0", r)
	}
}

func testMisaligned(t *testing.T, f Fixture) {
	bad := seg("q", "p", "a", "b")
	bad.Hashes = bad.Hashes[:20]
	_, err := f.Store.PushSegments(context.Background(), []ports.Segment{seg("q", "ok", "x"), bad})
	if !errors.Is(err, ports.ErrInvalid) {
		t.Fatalf("PushSegments error = %v, want ErrInvalid", err)
	}
	// The whole bundle failed: the good segment was not stored either.
	wantQueued(t, push(t, f.Store, seg("q", "ok", "y"))[0], 0)
}

func testConcurrent(t *testing.T, f Fixture) {
	const workers, rounds, partitions = 8, 15, 5
	var mu sync.Mutex
	bases := make(map[string][][2]int64) // partition id -> [base, count]
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				// Every bundle touches distinct partitions, in a worker-dependent order.
				var segs []ports.Segment
				for k := range partitions {
					p := (k + w) % partitions
					n := 1 + (w+r+k)%3
					txns := make([]string, n)
					for i := range txns {
						txns[i] = fmt.Sprintf("w%dr%dk%di%d", w, r, k, i)
					}
					segs = append(segs, seg("q", fmt.Sprint("p", p), txns...))
				}
				res, err := f.Store.PushSegments(context.Background(), segs)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for i, x := range res {
					bases[x.PartitionID] = append(bases[x.PartitionID], [2]int64{x.BaseOffset, int64(segs[i].Count)})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for pid, spans := range bases {
		covered := make(map[int64]bool)
		var total int64
		for _, s := range spans {
			for o := s[0]; o < s[0]+s[1]; o++ {
				if covered[o] {
					t.Fatalf("partition %s: offset %d allocated twice", pid, o)
				}
				covered[o] = true
			}
			total += s[1]
		}
		for o := range total {
			if !covered[o] {
				t.Fatalf("partition %s: gap at offset %d", pid, o)
			}
		}
	}
}

func testVerified(t *testing.T, f Fixture) {
	push(t, f.Store, seg("q", "p", "a"))
	push(t, f.Store, seg("q", "p", "b"))
	claim := seg("q", "p", "a")
	claim.Verified = 0 // the caller vouches that offsets <= 0 hold none of its hashes
	wantQueued(t, push(t, f.Store, claim)[0], 2)
	above := seg("q", "p", "b")
	above.Verified = 0 // offset 1 is above the watermark: still probed
	if r := push(t, f.Store, above)[0]; r.Status != ports.SegmentDuplicate || r.Dups[0].Offset != 1 {
		t.Fatalf("hash above the watermark: %+v, want duplicate of offset 1", r)
	}
	stale := seg("q", "p", "a")
	stale.Verified = 99 // beyond the allocator: not this partition's history, ignored
	if r := push(t, f.Store, stale)[0]; r.Status != ports.SegmentDuplicate || r.Dups[0].Offset != 0 {
		t.Fatalf("watermark beyond the allocator: %+v, want duplicate of offset 0", r)
	}
	atTop := seg("q", "p", "b")
	atTop.Verified = 2 // the whole history: nothing is left to probe
	wantQueued(t, push(t, f.Store, atTop)[0], 3)
}

func testRecentHashes(t *testing.T, f Fixture) {
	f.SetWindow(t, tenant, "q", time.Minute)
	old := push(t, f.Store, seg("q", "p", "a", "b"))[0]
	f.Age(t, old.PartitionID, time.Hour)
	push(t, f.Store, seg("q", "p", "c"))
	push(t, f.Store, seg("q", "p", "d", "e"))
	rh, err := f.Store.RecentHashes(context.Background(), old.PartitionID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if rh.LastOffset != 4 || len(rh.Segments) != 2 || rh.Window != time.Minute {
		t.Fatalf("recent = last %d, window %v, %d segments; want 4, 1m and the 2 segments inside the window", rh.LastOffset, rh.Window, len(rh.Segments))
	}
	if s := rh.Segments[1]; s.BaseOffset != 3 || !bytes.Equal(s.Hashes, append(hash("d"), hash("e")...)) || s.CreatedAt.IsZero() {
		t.Fatalf("segment %+v, want base 3 with the hashes of d and e", s)
	}
	big, err := f.Store.RecentHashes(context.Background(), old.PartitionID, 1)
	if err != nil || !big.TooLarge || len(big.Segments) != 0 {
		t.Fatalf("history above maxSegments: %+v, %v; want TooLarge and no segments", big, err)
	}
	none, err := f.Store.RecentHashes(context.Background(), "00000000-0000-4000-8000-00000000dead", 10)
	if err != nil || none.LastOffset != -1 || len(none.Segments) != 0 {
		t.Fatalf("unknown partition: %+v, %v; want last -1 and nothing", none, err)
	}
}
