package shard

// MergePage is one page of a listing that every shard answers in part (docs/design.md,
// "Operations that span shards"): pages holds each shard's rows sorted by cmp (a total
// order that does not depend on the shard, such as the queue's name then its tenant),
// each at least its first offset+limit rows; MergePage returns rows offset to
// offset+limit of the whole listing in that order. Asking every shard for offset+limit
// rows is what keeps paging stable: the page is the same whichever shards hold the
// rows before it. limit < 0 means no limit.
func MergePage[T any](pages [][]T, cmp func(a, b T) int, offset, limit int) []T {
	heads := make([]int, len(pages))
	var out []T
	for skipped := 0; limit < 0 || len(out) < limit; {
		best := -1
		for i, p := range pages {
			if heads[i] < len(p) && (best < 0 || cmp(p[heads[i]], pages[best][heads[best]]) < 0) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		row := pages[best][heads[best]]
		heads[best]++
		if skipped < offset {
			skipped++
			continue
		}
		out = append(out, row)
	}
	return out
}
