// Package admin is the operators' use case: what the admin API reads and changes besides
// a queue's configuration (core/queues). Five services, one per area of docs/api.md:
//
//   - Resources (§5.7, §5.11): queues, partitions, namespaces and tasks with their
//     depths, and the status routes. Counts are watermark arithmetic over partition and
//     cursor rows, never a scan of message data.
//   - Groups (§5.9): consumer groups with their lag and state, deletion, subscription
//     updates and seeks. Cursor moves take the same row locks as pops and acks, in the
//     global lock order (partition ids ascending), so they cannot race a live lease into a
//     lost or doubled message.
//   - Messages (§5.8): browsing messages inside their compressed segments, one message
//     with its status per group, dead letters (list, delete, retry, replay).
//   - Traces (§5.10): trace events recorded for messages, read by message and by name.
//   - Analytics (§5.11a): the metrics history per bucket (ranges, bucket widths, rates,
//     zero-filled series; see Analytics) and PostgreSQL's statistics, read only.
//
// Each service works through a small port of its own (ports/admin_*.go); adapters/admin
// implements them with bun.
//
// # Messages and traces
//
// A browse reads segment rows of the hash sidecar newest first (commit time, partition,
// offset), in steps when filtered by status, computes each message's status from cursor
// and dead-letter rows, and decodes only the page's segments. A replay (retry, DLQ
// replay) pushes the dead message through the push use case under the transaction id
// dlq:<row id> and then deletes the row; a duplicate removes the row only when the message
// already there has the same id and payload (a decoy pushed under the derived id does not
// erase a dead letter); replays are refused during push maintenance. Traces are kept for
// TraceLifetime of their queue, fixed when written; every insert deletes up to ExpireBatch
// expired ones. Errors a client caused are *InputError (400, naming the
// parameter) or wrap ErrNotFound (404); the HTTP layer maps them once.
//
// # Consumer groups
//
// A group is listed once per queue it is on: where it has a cursor or a recorded
// subscription. Queue mode is the group ports.QueueModeGroup ("__QUEUE_MODE__", as the
// reference names it), without a subscription.
//
// Where a group stands on a partition is its cursor's committed offset; on a partition
// of one of its queues where it has no cursor yet, where its first pop there will seed
// the cursor (its subscription's instant; queue mode, mode all or no subscription: the
// oldest retained message). Lag is offsets, last_offset - max(committed, log_start - 1);
// time lag is the age of the oldest unconsumed message, the commit time of the segment
// holding committed + 1, found through the segments' primary key. Nothing reads message
// data. members and partitionCursors both count the partitions where the group has a
// cursor (the reference's meaning of members: not consumer processes); totalConsumed is
// committed + 1, the offsets the cursor is past (consumed, dead-lettered or skipped by a
// subscription or a seek).
//
// The state of a group on a queue:
//
//   - Dead: it has messages to read, holds no live lease there, and shows no activity
//     there for GroupsOptions.DeadAfter (1 h): no pop or ack on any of its cursors, no
//     cursor or subscription created. Nothing shows a consumer: nobody reads it any more.
//   - Lagging: otherwise, its oldest unconsumed message is older than LaggingAfter
//     (300 s).
//   - Stable: otherwise; a group with nothing to read is Stable however long it idles.
//
// Reads take no lock: one statement each (no JIT: the planner would compile the
// per-partition probes at a cost far above the query's), every page at most 1000 rows.
//
// Cursor moves lock what they change in the global lock order, the rows pops and acks
// take, and announce the change (notify.GroupChanges) once it committed: the hot-list
// forgets the group's rings, then the waker wakes every parked pop of the group, so they
// claim at once through SQL. Other brokers on the database learn it from the hot-list's
// reseed floor and their pops' re-checks: latency, never a message. Pops never wait for a
// move (they skip locked cursor rows and try-lock the cursor-creation lock); acks wait as
// for another ack; pushes never wait. A move PostgreSQL aborts to break a deadlock (a
// queue deletion waiting for it while it waits for an ack that waits for the queue row)
// runs again, up to three times.
//
//   - Seek (one queue, or one partition): the queue's partition rows FOR KEY SHARE SKIP
//     LOCKED in ascending id (compatible with the FOR NO KEY UPDATE of pushes; a
//     partition a queue deletion holds is left out), then per partition in ascending id
//     the advisory lock a pop's first contact try-locks before it creates a cursor, then
//     the group's cursor rows FOR UPDATE in ascending partition id; then one upsert sets
//     every cursor, creating the missing ones. toEnd sets it to the partition's last
//     offset; a timestamp to the last offset of the last segment committed before it (as
//     a first contact with that subscription would); never below log_start - 1.
//   - A live lease under a seek is cleared with its retry counter and delivery attempt
//     (batch_end = committed = the target). Its holder's acks that name the lease fail
//     with "invalid or expired lease"; lease-less acks of its messages are judged against
//     the new cursor; its extension renews nothing. Its span is skipped by a seek past
//     it and delivered again, as a first attempt, from a seek before it.
//   - Deletion (one queue, or every queue of the tenant): the group's cursor rows FOR
//     UPDATE in ascending partition id, deleted; with deleteMetadata its subscription
//     rows FOR UPDATE in ascending queue id, deleted. Live leases go with their rows: the
//     holder's acks fail ("consumer not found", or "invalid or expired lease" once a pop
//     re-created the cursor), its extension renews nothing, and its span is delivered
//     again. The group's next pops re-create its cursors from its subscription: the
//     recorded one (deleteMetadata=false) or, when it was deleted, the pop's own, recorded
//     anew.
//   - Subscription update: the group's subscription rows FOR UPDATE in ascending queue
//     id become mode timestamp at the given instant; no cursor is touched, so nothing is
//     announced. Cursors created later (partitions the group has not popped yet, new ones
//     included) start there. The answer is {"success": true, "consumerGroup",
//     "newTimestamp" (the instant, UTC, milliseconds), "rowsUpdated" (the queues whose
//     subscription changed; 0 for a group without one)}.
package admin
