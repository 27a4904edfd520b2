// Package twophase commits a transaction whose operations live on several shards
// (docs/design.md, "Operations that span shards") with PostgreSQL's two-phase commit and
// the catalogue's decision log, and resolves what a crash leaves prepared.
//
// # The protocol
//
// Run, the coordinator, for the parts of one transaction (each a shard's segments and
// acks):
//
//  1. prepare every part in parallel under the gid "<Prefix><uuidv7>:<shard>"; a part
//     that fails (a rollback the client caused, or any error) rolls back every part (a
//     failed PREPARE may still have prepared) and the transaction fails as a one-shard
//     transaction would;
//  2. record commit in the decision log under "<Prefix><uuidv7>": the commit point,
//     reached even when the request's client has gone (prepared parts hold row locks).
//     The log keeps the first outcome written, so when the recovery (below) recorded an
//     abort first, the coordinator rolls the parts back and fails with ErrAborted; when
//     the log does not answer, the outcome is the recovery's to find (ErrUndecided);
//  3. commit every prepared part. Once the decision is recorded the transaction is
//     committed whatever happens next: a part whose commit fails now stays prepared (its
//     rows locked, its effects not yet visible) until the recovery commits it.
//
// # Routing
//
// Router is the ports.TransactionStore of a broker with several shards: a transaction's
// segments go to their queue's shard, its acks to the shard their partition id names
// (core/shard); a transaction on one shard runs there exactly as without shards, one
// that spans shards runs through the Coordinator, and the results come back in input
// order.
//
// # Recovery
//
// Every pass lists each shard's transactions prepared under Prefix more than Grace ago
// (a live coordinator decides within milliseconds), records abort for each unless an
// outcome is recorded (the first writer wins), and commits or rolls back as the log
// says. A broker killed between PREPARE and COMMIT PREPARED is thus resolved exactly
// once, by whichever broker's recovery gets there; several brokers' passes at once are
// harmless (resolving a gid already resolved is a no-op). A pass in which every shard
// answered and every in-doubt transaction was resolved also expires the decisions older
// than Keep: every transaction prepared before then was listed and resolved.
package twophase
