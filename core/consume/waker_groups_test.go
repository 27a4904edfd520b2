package consume

import (
	"testing"

	"github.com/queen-go/queen/core/notify"
)

func TestWakeGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		queue string // "" = every queue of the tenant
		// which registrations a change of group g wakes
		wantQ, wantR, wantOtherTenant bool
	}{
		{"one queue", "q", true, false, false},
		{"every queue of the tenant", "", true, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := NewWaker()
			kq, kr := notify.QueueKey("t", "q"), notify.QueueKey("t", "r")
			gq1, gq2, gqPinned := w.Wait(kq, "g", ""), w.Wait(kq, "g", ""), w.Wait(kq, "g", "p")
			hq := w.Wait(kq, "h", "")
			gr := w.Wait(kr, "g", "p")
			gOther := w.Wait(notify.QueueKey("u", "q"), "g", "")
			gDisc, hDisc := w.WaitAny("g"), w.WaitAny("h")

			w.GroupChanged(notify.GroupChange{Tenant: "t", Queue: tc.queue, Group: "g", Kind: notify.GroupDeleted})
			for name, tt := range map[string]struct {
				x    *Wait
				want bool
			}{
				"g's first wildcard pop on q": {gq1, tc.wantQ}, "g's second wildcard pop on q": {gq2, tc.wantQ},
				"g's pinned pop on q": {gqPinned, tc.wantQ}, "h on q": {hq, false}, "g on r": {gr, tc.wantR},
				"g in another tenant": {gOther, tc.wantOtherTenant}, "g's discovery pop": {gDisc, true},
				"h's discovery pop": {hDisc, false},
			} {
				if got := woken(tt.x); got != tt.want {
					t.Errorf("%s: woken %v, want %v", name, got, tt.want)
				}
			}
			// The pops left parked still hear of commits; woken ones are gone from the lists.
			// h on q, g of tenant u, h's discovery pop, and g on r unless woken.
			wantParked := 3 + map[bool]int{true: 0, false: 1}[tc.wantR]
			if got := w.Parked(); got != wantParked {
				t.Errorf("%d pops parked after the change, want %d", got, wantParked)
			}
			w.Notify(kq, "x")
			if !woken(hq) {
				t.Error("a commit after the change did not wake the other group's pop")
			}
			for _, x := range []*Wait{gq1, gq2, gqPinned, hq, gr, gOther, gDisc, hDisc} {
				x.Done(true)
			}
			if got := w.Parked(); got != 0 {
				t.Errorf("%d registrations left after every Done, want none", got)
			}
		})
	}
}
