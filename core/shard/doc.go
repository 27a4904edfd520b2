// Package shard holds the rules of a broker spread over several PostgreSQL clusters
// (shards; docs/design.md, "Several PostgreSQL clusters"): which shard a new queue is
// placed on, and how an id names the shard that holds what it identifies, so that a
// request naming a partition or a lease finds its database without asking the
// catalogue.
//
// # Ids
//
// Shard 0 mints ordinary random UUIDs (version 4), as an unsharded broker always has; any
// UUID that is not version 8 names shard 0. Every other shard mints version 8 UUIDs
// (RFC 9562, "custom") with this layout, bytes in network order:
//
//	bytes 0-1    the shard number, big-endian uint16 (1 to 65,535)
//	byte  6      high nibble 0x8 (the version), low nibble random
//	byte  8      top two bits 10 (the RFC 9562 variant), the rest random
//	other bytes  random
//
// That leaves 106 random bits per id, as unique among one shard's ids as a version 4's
// 122 bits are in practice (2^53 ids before a collision is likely), and the shard field
// makes ids of different shards distinct by construction. Partition ids are minted by
// PostgreSQL in this layout (the shard's queen.new_partition_id()); lease ids by the
// broker (Mint).
//
// # Placement
//
// A queue lives on one shard whole. Place applies the rules in order: the operator's
// explicit shard, then the shard of its namespace (queues of one namespace are
// co-located, so a pipeline between them never needs two-phase commit), then a hash of
// the namespace (of the queue's name without one) over the shards open to new queues,
// so brokers placing the same queue at the same moment propose the same shard. The
// catalogue's placement row is the authority; Place only proposes it. Placer is a
// broker's copy of the catalogue's map: known queues route without the catalogue.
//
// # Listings
//
// A listing every shard answers in part is merged by MergePage: each shard returns its
// first offset+limit rows in one total order that does not depend on the shard, and the
// merge keeps rows offset to offset+limit, so a page does not depend on which shard
// holds the rows before it.
package shard
