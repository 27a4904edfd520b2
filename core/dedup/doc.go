// Package dedup holds the broker-side layers of exact deduplication by transactionId.
//
// Deduplication is enforced by PostgreSQL (the allocator probes the partition's hash
// sidecar under the partition row lock), and these layers only make sure that what
// reaches it is already free of repeats the broker can see itself:
//
//   - Layer 1, inside one push request: Leaders keys items on
//     tenant \x1f queue \x1f partition \x1f transactionId. The first occurrence is the
//     leader and produces a frame; every repeat is a follower, produces no frame and
//     reports its leader's final message id.
//   - Layer 2, inside one flush: Hash gives the 16-byte xxh3-128 of a transactionId, the
//     same identity SQL compares, and Firsts picks, per segment, the first frame of each
//     hash; later frames with that hash inherit its verdict. Comparing hashes rather than
//     strings means a broker-local collision behaves exactly like a SQL one.
//
// Hash layout: the 128-bit xxh3 value in big-endian order (high 64 bits first).
package dedup
