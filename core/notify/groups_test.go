package notify

import (
	"slices"
	"testing"
)

func TestGroupChangesReachSubscribersInOrder(t *testing.T) {
	t.Parallel()
	g := NewGroupChanges()
	var order []string
	g.Subscribe(func(c GroupChange) { order = append(order, "forget "+c.Queue+"/"+c.Group) })
	g.Subscribe(func(c GroupChange) { order = append(order, "wake "+c.Queue+"/"+c.Group) })
	g.Announce(GroupChange{Tenant: "t", Queue: "q", Group: "g", Kind: GroupSeeked})
	g.Announce(GroupChange{Tenant: "t", Group: "g", Kind: GroupDeleted})
	if want := []string{"forget q/g", "wake q/g", "forget /g", "wake /g"}; !slices.Equal(order, want) {
		t.Fatalf("subscribers ran %v, want in subscription order %v", order, want)
	}
	var none *GroupChanges
	none.Announce(GroupChange{Group: "g"}) // nil announces to nobody
}
