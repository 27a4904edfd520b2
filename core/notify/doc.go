// Package notify fans the broker's events out to the components that react to them, so
// that a decision such as "a commit wakes parked pops" is made once, by whoever announces
// the event, and extended by subscribing rather than by another hook in the composition
// root.
//
// Three topics exist:
//
//   - Commits: a partition received data or became deliverable again. Announced once per
//     committed push segment (fusion), per segment of a committed transaction (push),
//     and per dead-letter move (consume: the cursor moved past the message, so the
//     partition's next messages can be claimed). Subscribers today: the consume waker
//     (parked long polls); planned: the hot-list's marks and the peer-hint sender.
//   - QueueChanges: a queue was reconfigured or deleted. Subscribers drop what they
//     cache about the queue: the push path's encryption flag, fusion's dedup watermarks,
//     the hot-list's state, the admin listings. The peer mesh (core/peers) publishes
//     this broker's changes to the other brokers and announces theirs here, marked
//     Remote.
//   - GroupChanges: an operator deleted a consumer group's cursors or moved them (a
//     seek). The hot-list drops the group's rings, then the waker wakes every parked pop
//     of the group (in that order: a woken pop must find the rings gone).
//
// Invariants: subscribers are added while the broker is wired, before anything is
// announced; announcing never blocks on a subscriber beyond its own call, and
// subscribers are called synchronously, in subscription order, on the announcing
// goroutine (so they must be quick and must not block: the waker only closes channels).
// Keys carry the tenant: the same (queue, partition) names in two tenants are different
// partitions.
package notify
