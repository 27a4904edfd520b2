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
// PostgreSQL a transaction every 5 ms (issue 18). A broker that starts is heard within
// a few milliseconds of its start; hints the others dropped before are only latency.
//
// It also listens: hints from the other brokers go to the hot-list (hotlist.List.Hinted),
// which marks its rings and wakes the parked pops. Received hints are never sent on:
// only local commits are published, so hints do not echo between brokers.
//
// Hints are best effort. A lost hint (a full set, a dropped connection, a broker that
// was down) costs latency, never a message: parked pops re-check on their own backoff,
// and the hot-list's reseed floor finds every partition with work within one period.
// There is no peer list to configure: every broker on the database listens.
package peers
