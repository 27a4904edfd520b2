// Package consume is the read path: pops that claim spans of partitions under a lease,
// long polls that park without a database connection, acknowledgements and lease
// extension (docs/api.md §5.2, §5.3, §5.5).
//
// PostgreSQL is the only authority on cursors, leases and retry counters: this package
// holds no consumer state. It assembles a pop from the client's query (Request: names,
// the broker's defaults, the subscription mode, the lease id; the hot-list will add
// candidate partitions here), turns claims (segments covering a span) into messages,
// validates ack input once (InputError), and parks pops.
//
// # Cursors and leases
//
// Every (partition, consumer group) pair has one cursor row. Queue mode is the group
// ports.QueueModeGroup, whose consumers compete; a named group sees every message.
//
//   - committed is the last acknowledged offset: the next message wanted is committed+1.
//     batch_end is the last offset of the last delivered span; the span (committed,
//     batch_end] is delivered and not yet acknowledged. committed <= batch_end always.
//   - A pop claims the next contiguous span after committed for one partition (up to the
//     batch, across partitions for wildcard and discovery pops), under the cursor row's
//     lock taken with SKIP LOCKED: a row another pop or ack holds is skipped, never
//     waited for. A partition whose lease is live is skipped too: one span per
//     (partition, group) is in flight at a time, which is what keeps each partition's
//     order for its group.
//   - The lease lasts the pop's leaseSeconds, else the queue's leaseTime (60 s while the
//     queue was never configured). All partitions of one pop share its lease id;
//     extending the lease renews every one of them that is still live, never an expired
//     one. autoAck commits the cursor at delivery and takes no lease.
//   - A lease that expires makes its span deliverable again, with the delivery attempt
//     counted up; expiry never consumes the retry budget.
//   - A named group's cursor is created at its first contact with the partition. Where it
//     starts is decided at the group's first contact with the queue and recorded, so
//     partitions created later start the same way: subscription mode all (the default:
//     the oldest retained message), new (after what was committed before that contact),
//     or a timestamp (the first message committed at or after it). An existing cursor is
//     never re-seeded. Queue mode always starts at the oldest retained message.
//
// # Acknowledgements
//
// An ack names a message by (partition id, transaction id), resolved through the hash
// sidecar; an optional lease id must match the live lease, else the item fails. Within
// one (partition, group) the items of a call are applied together:
//
//   - completed items commit implicitly: the cursor moves to the highest completed offset
//     (everything before it is done); the lease is released when the whole span is acked.
//   - an explicit failed, retry or dlq item wins over completed ones: the cursor stops
//     just below the lowest such message and the lease is released, so the message is
//     delivered again. failed counts against the queue's retryLimit; once it is used up
//     (and always for dlq) the message goes to the dead-letter queue, or is dropped when
//     the queue keeps none, and the cursor moves past it. A dead-letter move is announced
//     as a commit of the partition (core/notify): its next messages can be claimed now.
//   - a completed ack of a message already below the cursor is a no-op success; any
//     other status there is an error, as is a message beyond the delivered span.
//
// # Long polls
//
// A pop with wait=true that claims nothing subscribes to its queue's wake channel
// (Waker) before it retries, so a commit that lands between the empty claim and the wait
// is never missed. It re-checks on a wake, and otherwise on the backoff of docs/api.md §5.2
// (initial interval for the first Threshold empties, then initial x count x Multiplier,
// capped at Max). A parked pop holds no database connection; when its client goes away
// it returns at once and claims nothing; Stop (the broker's shutdown) answers every
// parked pop at once.
package consume
