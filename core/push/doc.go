// Package push is the push use case: it turns the items of one POST /api/v1/push into
// fusion groups and the fusion verdicts back into one result per item, in request order
// (seed 000 §1 and §6, seed 002).
//
// Per item, in body order: mint a UUIDv7 message id; resolve the transaction id (the
// client's, else the minted id as a string) and the partition (else "Default"); apply
// layer-1 dedup (tenant, queue, partition, transactionId: first occurrence leads, repeats
// follow and produce no frame); encrypt the payload when the queue has encryption
// enabled (the flag is looked up at most once per queue per request and cached for
// CacheTTL). Frames are grouped by (queue, partition) in order of first appearance, one
// fusion group each, and the request waits until every group has its verdicts.
//
// A follower reports its leader's final message id: the leader's own id when it was
// queued, the pre-existing original's id when the leader itself was a duplicate.
//
// Validate checks a request before anything is minted, so a bad item rejects the whole
// request and nothing of it is stored.
package push
