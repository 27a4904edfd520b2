package fusion

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"
)

// TestKnownChurnKeepsItsSize: a dedup cache whose entry count is constant (steady load,
// every commit evicting as many hashes as it adds) must hold a constant amount of memory.
// Go's maps never shrink and grow their tables under insert/delete churn; before the
// cache rebuilt its maps once per window, this load (the soak's: 600 hashes per
// partition, two commits a second) grew the heap by 45 % between windows 2 and 12, and
// before its eviction list became a ring it grew by 25 % during window 2.
// Not parallel: the heap figures must be this test's alone.
func TestKnownChurnKeepsItsSize(t *testing.T) {
	const (
		parts   = 200
		perSec  = 2   // commits per partition per second, one hash each
		seconds = 300 // the window
		windows = 12
	)
	window := seconds * time.Second
	ks := make([]*known, parts)
	for i := range ks {
		ks[i] = newKnown()
	}
	start := time.Unix(1_700_000_000, 0)
	var seq uint64
	h := make([]byte, 16)
	heapAt := make([]uint64, 0, windows)
	for tick := range windows * seconds * perSec {
		at := start.Add(time.Duration(tick) * time.Second / perSec)
		for p, k := range ks {
			seq++
			binary.LittleEndian.PutUint64(h, seq*0x9E3779B97F4A7C15) // spread like xxh3
			binary.LittleEndian.PutUint64(h[8:], seq)
			k.committed("pid", int64(tick), h, at, window)
			if p == 0 && k.size() > seconds*perSec+1 {
				t.Fatalf("tick %d: %d entries held, window holds %d", tick, k.size(), seconds*perSec)
			}
		}
		if (tick+1)%(seconds*perSec) == 0 {
			heapAt = append(heapAt, liveHeap())
		}
	}
	// Window 1 fills the cache and its ring: from then on the memory must hold, so that
	// a soak's 5-minute warm-up (one default window) sees the cache at its working size.
	t.Logf("live heap per window (MB): %v", megabytes(heapAt))
	for w, h := range heapAt[1:] {
		if float64(h) > 1.1*float64(heapAt[0]) {
			t.Fatalf("the cache grew under churn: %.1f MB after window 1, %.1f MB after window %d",
				float64(heapAt[0])/1e6, float64(h)/1e6, w+2)
		}
	}
	// Options.CacheBytes counts cacheEntryBytes per remembered hash: hold it to that.
	if per := float64(heapAt[len(heapAt)-1]) / (parts * seconds * perSec); per > cacheEntryBytes {
		t.Fatalf("the cache holds %.0f bytes per hash, its budget counts %d", per, cacheEntryBytes)
	}
	runtime.KeepAlive(ks)
}

// TestKnownAnswersSeenOnAKeyCollision: the cache holds 8 bytes of each hash, so an
// unseen hash sharing them with a remembered one must cost a full probe (watermark -1),
// and one differing in them must not.
func TestKnownAnswersSeenOnAKeyCollision(t *testing.T) {
	t.Parallel()
	stored := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	k := newKnown()
	k.committed("pid", 0, stored[:], time.Unix(1_700_000_000, 0), time.Hour)
	tests := []struct {
		name string
		h    [16]byte
		want int64
	}{
		{"the stored hash", stored, -1},
		{"same first 8 bytes", [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 0}, -1},
		{"other first 8 bytes", [16]byte{9, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := &Group{Hashes: [][16]byte{tt.h}}
			if got := k.verifiedFor([]ref{{g: g}}); got != tt.want {
				t.Fatalf("verifiedFor = %d, want %d", got, tt.want)
			}
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func megabytes(bs []uint64) []float64 {
	out := make([]float64, len(bs))
	for i, b := range bs {
		out[i] = float64(b/100_000) / 10
	}
	return out
}
