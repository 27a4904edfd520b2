// Package drain replays the spool into PostgreSQL: the background drain of a broker and
// the whole job of the batch-drain command (cmd/lambda, queen-drain).
//
// Replay goes oldest first, one step at a time: a step reads up to MaxBatch x BundleMax
// records (FILE_BUFFER_MAX_BATCH per partition segment, QUEEN_V2_BUNDLE_MAX partitions per
// bundle: the records an outage leaves are usually spread over many partitions, and
// stepping one bundle's worth at a time would commit bundles of one-record segments),
// submitted to push fusion as one group per (tenant, queue, partition) with the
// records' original message ids and transactionIds, so it reaches the database through
// the same bundle function and allocator as every push, and dedup makes a replay of an
// already committed record a harmless duplicate. A batch is committed in the spool only
// after every record in it is queued or duplicate; per-partition order holds because one
// batch completes before the next is taken and a partition's records keep their order
// inside a group.
//
// Failures: a batch whose bundle failed is retried with exponential backoff (Backoff,
// doubling to MaxBackoff) without losing its position: the database is probably away. A
// batch that keeps failing while the database answers pings (Permanent attempts) is
// split into single records; a record that then fails Permanent times on its own is
// quarantined with its error (spool failed/), never dropped.
//
// Encryption: a record sealed at push time is replayed as it is. A record spooled
// unsealed is prepared again by core/encryption with the queue's current flag: sealed
// when the queue encrypts, so the replay never writes plaintext to an encrypted queue. A
// record that cannot be sealed (an encrypted queue on a broker or drain job without
// QUEEN_ENCRYPTION_KEY) is refused before it reaches the database: it is neither
// stored nor dropped. It fails its batch like a bad record (without marking the database
// away), the later records of its partition wait behind it so the partition keeps its
// order, and after Permanent attempts on its own it is quarantined with the reason; an
// operator who configured the key moves it back to replay it (core/spool, Quarantine).
// A record the store refuses unsealed (the broker's cached flag was stale: another
// broker switched the queue on, see core/encryption) is refused too, not failed: the
// flag is forgotten and the next attempt seals it, or refuses it as above.
package drain
