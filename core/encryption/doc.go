// Package encryption decides, per queue, how a payload is written: as pushed, or sealed
// in an envelope (core/envelope) because the queue has encryptionEnabled. Every path that
// writes messages asks it: fused pushes and transactions (core/push) and the spool
// replay (core/drain), so they share one flag cache.
//
// # Invariants
//
//   - A payload bound for a queue with encryptionEnabled never reaches the database in
//     plaintext. A broker without a key (QUEEN_ENCRYPTION_KEY unset) refuses it
//     (ErrNoKey), and a seal that fails refuses it too (ErrSeal); the caller reports
//     the refusal and stores nothing. The flag a broker decides from is a cached copy,
//     which can be stale for milliseconds after another broker's configure (its
//     announcement in flight) or for CacheTTL (the announcement lost): the database
//     keeps the promise then. Every segment holding an unsealed frame is marked
//     (ports.Segment.Plain) and the push function refuses it when its queue's flag in
//     the database is on (log_push_multi_v4, ports.SegmentEncrypted), so a push whose
//     statement starts after the configure committed cannot store plaintext. The
//     refused writer Forgets the flag at once and seals (with a key) or refuses with
//     ErrNoKey, as for a queue known to encrypt (core/push, core/drain).
//   - A flag that cannot be read is never taken for "off". With a key the payload is
//     sealed anyway: every read path opens an encrypted frame whatever its queue's
//     flag says, so readers see no difference. Without a key it is ErrFlagUnknown: the
//     push path may only spool it (the replay asks again, and seals or refuses then),
//     every other path refuses it.
//   - Flags are read at most once per queue per Memo (one request, one replay batch) and
//     trusted for CacheTTL (QUEEN_CACHE_REFRESH_INTERVAL_MS) across them, so a broker
//     without encrypted queues pays one cached read per queue per TTL. Forget (a
//     configure or deletion of the queue on this broker, or on another one that
//     announced it through core/peers) drops the cached flag at once; a read that
//     overlapped a Forget is not cached, since it may predate the change.
//   - A Memo built with read false (the push path while every push is spooled: push
//     maintenance, or the database known away) does not read expired flags: it uses
//     the last value read, however old. That payload can only reach the spool, and the
//     replay reads the flag again before anything reaches the database.
//   - A payload that is already an envelope (a spooled record sealed at push time) is
//     written as it is: it is never sealed twice, and never opened.
package encryption
