package notify

// GroupChangeKind says how a consumer group's cursors changed.
type GroupChangeKind uint8

// The kinds of GroupChange.
const (
	// GroupDeleted: the group's cursors were deleted; its next pops re-create them from
	// its subscription.
	GroupDeleted GroupChangeKind = iota + 1
	// GroupSeeked: the group's cursors were moved (and their leases cleared).
	GroupSeeked
)

// GroupChange names a consumer group whose cursors an operator changed: deleted or
// moved by a seek. Announced once the change committed. What a component remembers of
// the group's progress on the queue (the hot-list's ring: which partitions have work for
// the group) may be wrong now, and the group's parked pops may have work they would not
// look for until their next re-check.
type GroupChange struct {
	Tenant string
	Queue  string // "" = every queue of the tenant
	Group  string
	// Partition is the one partition a seek moved; "" = every partition of the queue.
	Partition string
	Kind      GroupChangeKind
}

// GroupChanges is the group-change topic. Subscribers are called in subscription order,
// which matters here: a component that forgets the group's state (the hot-list) must
// come before the waker, so a woken pop finds the state already gone. A nil *GroupChanges
// announces to nobody.
type GroupChanges struct{ t topic[GroupChange] }

// NewGroupChanges returns a group-change topic without subscribers.
func NewGroupChanges() *GroupChanges { return &GroupChanges{} }

// Subscribe adds f; it is called for every later Announce.
func (g *GroupChanges) Subscribe(f func(GroupChange)) { g.t.subscribe(f) }

// Announce calls every subscriber with e.
func (g *GroupChanges) Announce(e GroupChange) {
	if g != nil {
		g.t.announce(e)
	}
}
