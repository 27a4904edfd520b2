package dedup

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// Hash returns the 16-byte identity of a transaction id (xxh3-128, big-endian).
func Hash(transactionID string) [16]byte {
	h := xxh3.HashString128(transactionID)
	var out [16]byte
	binary.BigEndian.PutUint64(out[:8], h.Hi)
	binary.BigEndian.PutUint64(out[8:], h.Lo)
	return out
}

// Key is the layer-1 identity of an item inside one request.
type Key struct {
	Tenant, Queue, Partition, TransactionID string
}

// Leaders returns, for every key, the index of its leader: itself for the first
// occurrence of a key, the first occurrence's index for every repeat.
func Leaders(keys []Key) []int {
	out := make([]int, len(keys))
	if len(keys) <= 8 {
		// Quadratic but allocation-free beyond out: most pushes carry a few items.
		for i, k := range keys {
			j := 0
			for j < i && keys[j] != k {
				j++
			}
			out[i] = j
		}
		return out
	}
	first := make(map[Key]int, len(keys))
	for i, k := range keys {
		if j, ok := first[k]; ok {
			out[i] = j
			continue
		}
		first[k] = i
		out[i] = i
	}
	return out
}

// Firsts returns, for every hash, the index of the first equal hash (itself when it is
// the first). It allocates nothing for the common case of one hash.
func Firsts(hashes [][16]byte, out []int) []int {
	out = out[:0]
	if len(hashes) <= 8 {
		// Quadratic but allocation-free: segments under fusion are usually tiny.
		for i, h := range hashes {
			j := 0
			for j < i && hashes[j] != h {
				j++
			}
			out = append(out, j)
		}
		return out
	}
	first := make(map[[16]byte]int, len(hashes))
	for i, h := range hashes {
		if j, ok := first[h]; ok {
			out = append(out, j)
			continue
		}
		first[h] = i
		out = append(out, i)
	}
	return out
}
