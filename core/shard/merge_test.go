package shard

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestMergePage(t *testing.T) {
	t.Parallel()
	pages := [][]string{{"a", "d", "g"}, {"b", "e"}, {}, {"c", "f", "h", "i"}}
	cases := []struct {
		name          string
		offset, limit int
		want          []string
	}{
		{name: "first page", offset: 0, limit: 3, want: []string{"a", "b", "c"}},
		{name: "middle page", offset: 3, limit: 3, want: []string{"d", "e", "f"}},
		{name: "last, short page", offset: 7, limit: 3, want: []string{"h", "i"}},
		{name: "past the end", offset: 20, limit: 3, want: nil},
		{name: "no limit", offset: 6, limit: -1, want: []string{"g", "h", "i"}},
		{name: "zero limit", offset: 0, limit: 0, want: nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := MergePage(pages, cmp.Compare[string], c.offset, c.limit); !slices.Equal(got, c.want) {
				t.Fatalf("MergePage = %v, want %v", got, c.want)
			}
		})
	}
}

// Against the obvious answer on random shards: every page of the merged listing is the
// same slice of the whole sorted listing, whichever shard holds what.
func TestMergePageMatchesSortedWhole(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		shards := 1 + rng.IntN(5)
		var whole []int
		pages := make([][]int, shards)
		for v := range rng.IntN(60) {
			s := rng.IntN(shards)
			pages[s] = append(pages[s], v)
			whole = append(whole, v)
		}
		offset, limit := rng.IntN(70), rng.IntN(20)
		trimmed := make([][]int, shards) // each shard answers its first offset+limit rows only
		for i, p := range pages {
			trimmed[i] = p[:min(len(p), offset+limit)]
		}
		want := whole[min(offset, len(whole)):min(offset+limit, len(whole))]
		if got := MergePage(trimmed, cmp.Compare[int], offset, limit); !slices.Equal(got, want) && len(want)+len(got) > 0 {
			t.Fatalf("offset %d limit %d over %v: %v, want %v", offset, limit, pages, got, want)
		}
	}
}
