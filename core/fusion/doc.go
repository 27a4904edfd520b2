// Package fusion is the push write path's commit layer: it decides, per partition, when
// to commit, and commits several partitions in one PostgreSQL transaction. Under load one
// transaction carries the writes of many concurrent requests across many partitions.
//
// Structure. A Batcher owns Shards shards; a group of frames for (tenant, queue,
// partition) goes to the shard chosen by the xxh3 hash of tenant \x1f queue \x1f
// partition, so a shard owns a disjoint set of partitions. A shard has no goroutine: its
// state is guarded by its mutex, held by each event for as long as it runs, on the
// goroutine that brings the event. A submission runs on the request's goroutine (adds
// its frames, and fires or offers what is ready), a flush's outcome on the goroutine
// that routed it, a warm-up read's result on the read's own goroutine, and one Batcher
// tick visits every shard. Handing each request to a shard goroutine and each outcome
// back to it cost two goroutine wake-ups per push request (docs/benchmarks.md, "Shards without goroutines").
//
// Rules:
//
//   - Fire on idle: after every arrival or completion the shard dispatches its ready
//     partitions at once if it is under its in-flight bundle cap and a permit of the
//     shared push limiter (core/vegas) is free. A lone push therefore commits in about
//     one round trip. With no permit the lane is contended and frames keep accumulating.
//   - One flush in flight per partition: a partition whose flush is in flight is not
//     ready; its next frames accumulate and become ready only after the previous flush
//     has committed and its completion reached the shard. Two flushes never race on the
//     allocator, so per-partition offset order equals commit order equals arrival order.
//   - Cross-partition bundling: a dispatch takes up to BundleMax ready partitions (the
//     in-flight gate guarantees they are disjoint) into one SegmentStore.PushSegments
//     call: one commit, one fsync, N partitions.
//   - Offers (offer.go): a shard that finds no permit hands its ready partitions, already
//     taken and in flight, to the Batcher's offer list; the next bundle to leave, from
//     any shard, takes them, oldest first, and a released permit fires a bundle of them
//     at once. Without offers a bundle could never hold more than one shard's backlog:
//     with 8 shards and 64 single-message clients commits carried about 5 segments
//     whatever the limit; now a freed permit carries everything that waits (about 14
//     per commit with a limit of 2). The outcome of each part still goes back to the
//     shard that owns it.
//   - The Hold tick is a liveness backstop, not a batching window: it fires offers in
//     case a permit was released and the offers were missed.
//
// A segment is built when its partition is taken into a bundle or an offer,
// under the shard's lock: layer-2 dedup on the xxh3-128 hashes, the hash blob and the
// zstd blob. A flush only sends its bundle, so a freed permit goes to the database at
// once; a flush that commits and finds offers waiting carries them next on the same
// goroutine (a new one waited for a core while the database sat idle) and routes the
// first bundle's answers on another. Routing gives each segment's verdict to every
// frame, hence to every request that fed the segment. A segment answered "duplicate" wrote nothing: its
// duplicate frames get their original's id (read from the covering segment, the zero id
// when retention removed it) and the other frames go back to the head of the partition's
// queue, ahead of anything that arrived meanwhile, for the next flush. A bundle that
// fails as a whole resolves every frame to Error.
//
// Each shard keeps a dedup cache per partition (known.go) whose only product is a
// watermark that lets the SQL probe skip verified history. It holds 8 bytes of each
// 16-byte hash, so it may answer "seen" for an id it has not seen (a full probe, never a
// wrong verdict), within Options.CacheBytes (QUEEN_DEDUP_CACHE_MB). ForgetQueue drops one queue's
// caches on every shard after a configure or a queue deletion changed what they assumed.
package fusion
