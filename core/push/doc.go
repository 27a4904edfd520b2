// Package push is the push use case: it turns the items of one POST /api/v1/push into
// fusion groups and the fusion verdicts back into one result per item, in request order
// (docs/design.md, "One request, end to end").
//
// Per item, in body order: mint a UUIDv7 message id; resolve the transaction id (the
// client's, else the minted id as a string) and the partition (else "Default"); apply
// layer-1 dedup (tenant, queue, partition, transactionId: first occurrence leads, repeats
// follow and produce no frame); prepare the payload as its queue requires
// (core/encryption: sealed when the queue has encryptionEnabled; the flag is read at
// most once per queue per request and cached for QUEEN_CACHE_REFRESH_INTERVAL_MS).
// Frames are grouped by (queue, partition) in order of first appearance, one fusion
// group each, and the request waits until every group has its verdicts.
//
// Encryption never stores plaintext for an encrypted queue. An item that cannot be
// written as its queue requires (encryptionEnabled on a broker without
// QUEEN_ENCRYPTION_KEY, or a failed seal) is answered failed with the reason in
// Result.Err, and neither it nor its layer-1 followers are stored; the request's other
// items are. An item whose queue's flag cannot be read, on a broker without a key, is
// spooled as pushed (buffered; the replay reads the flag again and seals or refuses it)
// and failed when there is no spool. A transaction (Transaction) with such a push fails
// whole, before anything is applied.
//
// A follower reports its leader's final message id: the leader's own id when it was
// queued, the pre-existing original's id when the leader itself was a duplicate.
//
// Validate checks a request before anything is minted, so a bad item rejects the whole
// request and nothing of it is stored.
package push
