package shard

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
)

// The helpers every router of this package asks its shards with.

// UnreachableError is a listing that could not be completed because one shard did not
// answer: a partial listing would look like a complete one.
type UnreachableError struct {
	Shard int
	Err   error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("shard %d did not answer: %v", e.Shard, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// byShard groups the indexes of xs by the shard of each.
func byShard[T any](xs []T, of func(T) int) map[int][]int {
	groups := make(map[int][]int, 1)
	for i, x := range xs {
		n := of(x)
		groups[n] = append(groups[n], i)
	}
	return groups
}

// scatter runs fn for each shard of groups with the indexes it holds (gather).
func scatter(groups map[int][]int, fn func(n int, idx []int) error) error {
	ns := slices.Sorted(maps.Keys(groups))
	return gather(ns, func(n int) error { return fn(n, groups[n]) })
}

// HolderOf is the shard a partition or lease id names among count shards; one naming a
// shard this broker does not have goes to shard 0, which answers for it as for any
// unknown id.
func HolderOf(id string, count int) int { return within(OfID(id), count) }

// within is n when it is one of count shards, else 0.
func within(n, count int) int {
	if n < 0 || n >= count {
		return 0
	}
	return n
}

// all is the shard numbers 0 to count-1.
func all(count int) []int {
	ns := make([]int, count)
	for i := range ns {
		ns[i] = i
	}
	return ns
}

// gather runs fn for each shard of ns, in parallel when there are several, and waits
// for all of them. A shard that fails fails the whole call as an *UnreachableError (the
// lowest-numbered failing shard's): an answer missing a shard would look complete.
func gather(ns []int, fn func(n int) error) error {
	errs := make([]error, len(ns))
	if len(ns) == 1 {
		errs[0] = fn(ns[0])
	} else {
		var wg sync.WaitGroup
		for i, n := range ns {
			wg.Go(func() { errs[i] = fn(n) })
		}
		wg.Wait()
	}
	for i, err := range errs {
		if err != nil {
			return &UnreachableError{Shard: ns[i], Err: err}
		}
	}
	return nil
}

// wholeListing is the page size that asks a shard for all its rows of a listing (2^31-1
// rows: no tenant comes near it).
const wholeListing = math.MaxInt32

// askOne runs ask on shard n, an error naming the shard.
func askOne[S, T any](shards []S, n int, ask func(S) (T, error)) (T, error) {
	v, err := ask(shards[n])
	if err != nil {
		return v, &UnreachableError{Shard: n, Err: err}
	}
	return v, nil
}

// askAll asks every shard in parallel and returns the answers by shard number; a
// failure fails the whole call as gather says.
func askAll[S, T any](shards []S, ask func(n int, s S) (T, error)) ([]T, error) {
	out := make([]T, len(shards))
	err := gather(all(len(shards)), func(n int) error {
		var err error
		out[n], err = ask(n, shards[n])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pageEnd is how many rows each shard must return for rows offset to offset+limit of the
// merged listing (MergePage): the first offset+limit, saturating rather than
// overflowing.
func pageEnd(offset, limit int) int {
	if limit > math.MaxInt-offset {
		return math.MaxInt
	}
	return offset + limit
}

// rowsOrEmpty is rows, or an empty slice for none: the stores answer an empty page with an
// empty slice, which the API encodes as [] rather than null.
func rowsOrEmpty[T any](rows []T) []T {
	if rows == nil {
		return []T{}
	}
	return rows
}

// askPages asks every shard for a page of a listing and its total (askAll), returned
// apart: the pages by shard, the totals by shard.
func askPages[S, T any](shards []S, ask func(S) ([]T, int64, error)) ([][]T, []int64, error) {
	type answer struct {
		rows  []T
		total int64
	}
	got, err := askAll(shards, func(_ int, s S) (answer, error) {
		rows, total, err := ask(s)
		return answer{rows, total}, err
	})
	if err != nil {
		return nil, nil, err
	}
	pages, totals := make([][]T, len(got)), make([]int64, len(got))
	for n, g := range got {
		pages[n], totals[n] = g.rows, g.total
	}
	return pages, totals, nil
}

// pick is the elements of xs at idx, in idx's order: one shard's share of a request.
func pick[T any](xs []T, idx []int) []T {
	out := make([]T, len(idx))
	for j, i := range idx {
		out[j] = xs[i]
	}
	return out
}

// combine folds the rows of every shard that share a key into one (add merges r into
// the row kept), in the order the keys are first met: a figure several shards each
// hold a part of.
func combine[K comparable, T any](pages [][]T, key func(T) K, add func(into *T, r T)) []T {
	at := make(map[K]int)
	out := []T{} // none is an empty listing, not null
	for _, rows := range pages {
		for _, r := range rows {
			k := key(r)
			if i, ok := at[k]; ok {
				add(&out[i], r)
				continue
			}
			at[k] = len(out)
			out = append(out, r)
		}
	}
	return out
}
