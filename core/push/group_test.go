package push

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/queen-go/queen/ports"
)

func TestGroupSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		add  []int
	}{
		{"empty", nil},
		{"first", []int{0}},
		{"word edges", []int{0, 63}},
		{"beyond the word", []int{64, 200}},
		{"both", []int{1, 63, 64, 65, 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s groupSet
			in := map[int]bool{}
			for _, gi := range tc.add {
				s.add(gi)
				in[gi] = true
			}
			if s.empty() != (len(tc.add) == 0) {
				t.Fatalf("empty() = %v with %v added", s.empty(), tc.add)
			}
			for gi := range 1100 {
				if s.has(gi) != in[gi] {
					t.Fatalf("has(%d) = %v with %v added", gi, s.has(gi), tc.add)
				}
			}
		})
	}
}

// TestPendingPartitionBeyondTheWord: a request over more partitions than groupSet's word
// holds diverts exactly the groups whose partitions have spooled records, wherever they
// fall in the request.
func TestPendingPartitionBeyondTheWord(t *testing.T) {
	t.Parallel()
	var divert atomic.Bool
	f, _, sp, _ := spoolFixture(t, &divert)
	f.store.BeforePush = func([]ports.Segment) error { return ports.ErrUnavailable }
	pending := map[string]bool{"p3": true, "p70": true}
	var early []Item
	for p := range pending {
		early = append(early, Item{Queue: "q", Partition: p, Payload: []byte(`0`)})
	}
	if got := statuses(f.svc.Push(t.Context(), tenant, "", early)); got != "buffered buffered " {
		t.Fatalf("pushes during the outage: %s", got)
	}
	f.store.BeforePush = nil
	items := make([]Item, 80)
	for i := range items {
		items[i] = Item{Queue: "q", Partition: fmt.Sprintf("p%d", i), Payload: []byte(`1`)}
	}
	for i, r := range f.svc.Push(t.Context(), tenant, "", items) {
		want := StatusQueued
		if pending[items[i].Partition] {
			want = StatusBuffered
		}
		if r.Status != want {
			t.Fatalf("item %d (%s): %s, want %s", i, items[i].Partition, r.Status, want)
		}
	}
	if n := sp.Stats().PendingRecords; n != 4 {
		t.Fatalf("%d records spooled, want 4 (two per pending partition)", n)
	}
}
