// Package hotlist answers, from memory, the question a wildcard pop asks before it can
// claim anything: which of this queue's partitions might have work for my group? Without
// it every wildcard pop, and every re-check of a parked long poll, scans the queue's
// partitions in SQL, a cost that grows with the partition count and is paid even when
// the queue is idle. With it SQL is asked only about the handful of partitions the
// hot-list names. It is on by default (QUEEN_HOTLIST=1); off, every hook is one branch
// and pops scan in SQL as before.
//
// # The correctness contract
//
// PostgreSQL stays the only authority on claims, leases, cursors and visibility. The
// hot-list may be wrong in one direction only: stale in excess. A partition it names that
// has nothing costs one empty claim attempt (a row-lock attempt that finds nothing). A
// partition it lost would be a defect: the periodic reseed floor finds it again, within
// one period, whatever was lost (a missed mark, a lost peer hint, a false clear).
//
// # Structures
//
// Per queue (key notify.QueueKey: tenant \x1f queue, byte-identical with the long-poll
// waker's keys): partition names interned to dense indexes (append-only), and what is
// learned of each index's partition id (from commits, reseeds and verdicts: the ack
// path finds its way back to a slot by id). Per (queue, group) a ring, sub-sharded by
// index % Shards, each sub-ring a set of flat arrays indexed by index / Shards:
//
//	state    idle | ready | wheeled | inflight
//	epoch    incremented by every mark
//	base     the epoch its last took was checked out at (what that claim may have seen)
//	revisit  wheel due time (wheeled) or check-out time (inflight), unix ns
//	first    the first mark since idle, and marks: messages marked since idle
//	drained  the last took claimed everything visible
//	prev/next  the ready list (oldest first)
//
// and a wheel: a binary min-heap of revisit times whose stale entries (the slot left the
// wheel or was rescheduled) are discarded when they surface.
//
// # Marks
//
// A mark says "this partition just received data". It comes from a local push (quiet:
// it wakes the queue's parked pops at once only when no wake of the queue is
// outstanding, that is when a pop of the queue has come to claim (CheckOut, wildcard or
// pinned) since the last such wake; otherwise the wake tick wakes for it, at most once
// per WakeTick, 5 ms, and partition, however many pushes landed), a transaction commit
// or a dead-letter move (wakes at once), a peer's hint (wakes at once, never sent on),
// or a reseed row (no wake unless it makes a slot ready). It applies to every ring of the queue; a queue with no ring still wakes
// (a pop pinned to a partition parks without one). Every mark bumps the slot's epoch and
// adds its messages to marks, then:
//
//   - idle, delayedProcessing D > 0: to the wheel at now + D + 300 ms (the broker's clock
//     only schedules the retry; PostgreSQL enforces the exact cut);
//   - idle, windowBuffer W > 0: to the wheel until the first mark + W, unless marks
//     reached WindowBatch (100): then ready at once;
//   - idle otherwise: ready (appended);
//   - wheeled for a window: promoted to ready once marks reach WindowBatch; a delay is
//     never shortened, a lease park keeps its time;
//   - ready: nothing; inflight: nothing but the epoch bump.
//
// # Serving: check out, ask SQL, check in
//
// CheckOut drains the due wheel entries to the ready lists, then takes up to
// clamp(partitions x 8, 16, 256) ready slots round robin over the sub-rings, marks them
// inflight and snapshots their epochs. The pop asks SQL about exactly those partitions;
// the store answers a verdict per candidate, and CheckIn applies them:
//
//   - took, leased pop: to the wheel until the lease expires, at most LeasePark (1 s).
//     Re-offering it would only make the next pop find it leased; the taker's ack brings
//     it back early (Acked), and the cap bounds a lost promote (a pop that saw the lease
//     live may re-park it after the releasing ack).
//   - took, autoAck: on a windowBuffer queue held for another window (the SQL quiet
//     period's debounce); drained with no mark since the check-out: idle; else ready.
//   - empty: on a deferral queue a revisit in 50 ms to 1 s (never a clear); else the
//     compare-and-swap: idle if the epoch is the snapshot's, ready if a push marked it
//     meanwhile (that push's data is real and nobody claimed it). Every ordering of the
//     race degrades to a false positive.
//   - leased by another consumer: the wheel until its expiry, at most LeasePark.
//   - busy (the cursor row was locked by another pop or ack): revisited in 50 ms.
//   - gone: idle. skipped (the pop was full before its turn): ready.
//
// A ticket checked in with an error, or without verdicts (the client left, the store
// failed), puts every candidate back (the drop guard). A pop whose ticket is never
// checked in strands its candidates in flight; the next reseed takes back slots in flight
// longer than Stranded.
//
// A ring is registered only after the group's first pop was scanned in SQL, which
// provisions the queue row and records the group's subscription, so the first pop of an
// arbitrary name allocates nothing (Scanned); that pop also asks for a reseed at once.
//
// # Promote on ack
//
// An ack that releases a lease calls Acked with the partition id and group. A partition
// with pushes since its claim, or a claim that did not drain it, or an ack that was not
// all completed (a failure, a retry, a dead letter), is made ready and the queue woken:
// the next batch is claimable now, not at lease expiry. Only a drained claim with no mark
// since is cleared: clearing on the mark count alone stalls a backlog consumed in
// batches (no mark arrives during its leases, yet most of it remains).
//
// # The reseed floor
//
// HotlistStore.Pending enumerates a (queue, group)'s probably-pending partitions (data
// after the cursor, or data and no cursor) in keyset pages in id order, ReseedPage
// (10,000) rows at a time, at most ReseedPages (200) pages. It over-includes: leased
// partitions come back too (they are pending; their claim will say leased). It runs for
// every ring every Reseed (5 s), whether the ring is busy or not, at a fixed random phase
// within the ring's first 15 s so rings registered together do not reseed together; and
// when a pop finds the ring cold (at most once per ReseedGap, 1 s, doubling up to the
// floor's period while those reseeds find nothing, so parked pops on an idle queue do not
// reseed it every second). The floor waits at least 20 times the ring's last reseed's
// duration, so a huge queue's reseeds take a bounded share of the database. It also
// learns the
// queue's deferral options.
//
// # Memory
//
// The rings are the one broker structure a client can grow by naming things. The idle
// sweep (every IdleSweep, 60 s; QUEEN_HOTLIST_IDLE_SWEEP_MS=0 disables it) drops a queue's
// whole state when three conditions hold at once: nothing touched it since the last sweep
// (a second-chance flag every access sets), nothing holds it (a reference count every
// operation takes, checked under the map's write lock), and every slot of every ring is
// idle. Eviction is never a correctness event: the next pop rebuilds the ring. Because
// entries can stay ready with nobody left to clear them (the consumers went away, or a
// reseed listed partitions a drain emptied meanwhile), a queue nothing touched for three
// sweep periods is dropped whatever its entries. Deleting a
// consumer group drops its rings (DropGroup, DropGroupEverywhere: one tenant only); a
// deleted queue's state is dropped.
//
// # Observing it
//
// Every LogEvery (30 s) one line gives the reseeds since the last line and their rate,
// the live rings, ready and wheel entries and the mark counters, followed by one line
// per busiest non-empty ring ranked by ready + wheel (at most TopN,
// QUEEN_LOG_TOPN_QUEUES). QUEEN_HOTLIST_TRACE=<queue-prefix> logs mark, serve and reseed
// breadcrumbs for matching queues, at most TraceRate lines a second. Stats feeds the
// Prometheus metrics.
package hotlist
