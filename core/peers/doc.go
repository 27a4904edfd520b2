// Package peers tells the other brokers on the same database that a partition received
// data, so a push on one broker wakes the long polls parked on another without waiting
// for their re-check, and marks those brokers' hot-lists.
//
// The Mesh subscribes to this broker's commit notifications (core/notify: fused pushes,
// transactions, dead-letter moves) and keeps a set of (tenant, queue, partition) hints,
// deduplicated: a partition pushed a thousand times between two flushes costs one hint.
// Every Tick (5 ms) it publishes what accumulated as one batch through ports.HintBus
// (PostgreSQL LISTEN/NOTIFY in production), outside any push transaction. The set is
// bounded (MaxPending, 200,000); hints beyond it are dropped and counted.
//
// Hints are published only while another broker listens. Every broker publishes a
// heartbeat (an empty hint: no queue is named "") once a Heartbeat (1 s), the first as
// it starts; a broker that heard another within PeerTTL (3 s) publishes its hints, one
// that did not keeps none (nobody would read them). A broker alone on its database thus
// sends one notification a second instead of one per tick under load, which cost it and
// PostgreSQL a transaction every 5 ms. A broker that starts is heard within
// a few milliseconds of its start; hints the others dropped before are only latency.
//
// It also listens: hints from the other brokers go to the hot-list (hotlist.List.Hinted),
// which marks its rings and wakes the parked pops. Received hints are never sent on:
// only local commits are published, so hints do not echo between brokers.
//
// # Queue changes
//
// The Mesh also subscribes to this broker's queue changes (core/notify: a configure, a
// queue deletion) and publishes each at once (no tick), as a queue-level hint
// (ports.HintQueueConfigured, ports.HintQueueDeleted) in a batch of its own, whether or
// not another broker was heard lately and whatever QUEEN_PEER_HINTS says: a broker that
// just started listens before it is heard, and the flag these changes carry
// (encryptionEnabled) is a promise about stored bytes, not a latency. A broker receiving
// one announces it on its own queue-change topic, marked Remote, so every cache of the
// queue there forgets it at once, as after a local configure: the encryption flag, fusion's
// dedup state, the hot-list's rings and deferral options, the admin listings. Remote
// changes are never published again. With QUEEN_PEER_HINTS off the Mesh still listens and
// publishes queue changes, but sends no heartbeat and gives no commit hint to the
// hot-list.
//
// What a queue change closes is a window of QUEEN_CACHE_REFRESH_INTERVAL_MS (60 s) in
// which another broker acted on a queue's old options; what remains is the time a
// notification takes to cross the database (milliseconds), and a change whose
// announcement is lost (the publishing broker died or lost the database between the
// configure's commit and the publish): then the caches' own expiry is the backstop.
//
// Hints are best effort. A lost hint (a full set, a dropped connection, a broker that
// was down) costs latency, never a message: parked pops re-check on their own backoff,
// and the hot-list's reseed floor finds every partition with work within one period.
// There is no peer list to configure: every broker on the database listens.
package peers
