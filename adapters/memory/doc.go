// Package memory holds in-memory implementations of the ports, for core unit tests. They
// follow the contracts of the real adapters (the same conformance rules apply) but keep
// everything in maps guarded by one mutex, and let a test inject failures and pauses.
//
// SegmentStore mirrors the SQL allocator: offsets per partition start at 0 and are
// gapless; with a positive dedup window a segment whose hashes match stored ones inside
// the window is answered duplicate and writes nothing; window 0 skips the probe.
package memory
