package shard

import (
	"fmt"
	"slices"

	"github.com/zeebo/xxh3"
)

// Request is what Place decides from: the queue and what is known about it.
type Request struct {
	Queue     string
	Namespace string // "" when the queue has none
	// Explicit is the shard an operator asked for (the configure option), -1 for none.
	Explicit int
	// NamespaceShard is the shard of another queue of Namespace, -1 when none is placed
	// (or the queue has no namespace).
	NamespaceShard int
}

// Place proposes the shard of a new queue among shards (their count) with open the
// shards new queues may go to (empty: all of them); the rules are in the package doc.
// An explicit shard may be any shard, open or not: it is an operator's choice.
func Place(r Request, shards int, open []int) (int, error) {
	if shards < 1 || shards > Max+1 {
		return 0, fmt.Errorf("shard: %d shards: want 1 to %d", shards, Max+1)
	}
	if r.Explicit >= 0 {
		if r.Explicit >= shards {
			return 0, fmt.Errorf("shard: queue %q: shard %d does not exist (there are %d, numbered from 0)", r.Queue, r.Explicit, shards)
		}
		return r.Explicit, nil
	}
	if r.Namespace != "" && r.NamespaceShard >= 0 && r.NamespaceShard < shards {
		return r.NamespaceShard, nil
	}
	candidates := open
	if len(candidates) == 0 {
		candidates = make([]int, shards)
		for i := range candidates {
			candidates[i] = i
		}
	} else {
		candidates = slices.Sorted(slices.Values(open)) // the same order on every broker
		for _, s := range candidates {
			if s < 0 || s >= shards {
				return 0, fmt.Errorf("shard: open shard %d does not exist (there are %d)", s, shards)
			}
		}
	}
	key := r.Namespace
	if key == "" {
		key = r.Queue
	}
	return candidates[xxh3.HashString(key)%uint64(len(candidates))], nil
}
