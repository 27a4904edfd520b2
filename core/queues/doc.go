// Package queues is the queue administration use case: configure (docs/api.md §5.6), queue
// deletion (§5.7) and the dead-letter listing (§5.8).
//
// Configure validates every option it is given (type, int32 range, clamping of
// dedupWindowSeconds to >= 0 and minPopWaitTime to 0..60000, the retention sink rules)
// before anything is stored, and turns the request into one atomic store call: the
// complete configuration a new queue gets, and the set of options an existing queue
// changes. Merge (the default) changes exactly the options present, an option given as
// null back to its default; replace changes all of them, absent ones to their defaults.
// The default namespace and task of a dotted name "ns.task..." are its first two parts,
// as when a push creates the queue.
//
// After a configure or a deletion has committed, the service announces a queue change
// (core/notify); its subscribers drop what this broker cached about the queue (encryption
// flag, dedup watermarks), so the change applies to the very next push.
//
// The dead-letter listing decodes each row's copy of its segment (core/segment) and
// returns the dead message's payload as raw JSON, decrypted when it was stored encrypted
// and a key is configured. A row that cannot be decoded is still listed, without data: a
// corrupt copy must not hide the other dead letters.
package queues
