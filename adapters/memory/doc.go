// Package memory holds in-memory implementations of the ports, for core unit tests. They
// pass the same conformance suites as the real adapters (ports/porttest) but keep
// everything in maps guarded by a mutex, and let a test inject failures and pauses and
// move a replaceable clock.
//
//   - Store is the SegmentStore, ConsumeStore and TransactionStore over one state:
//     offsets per partition start at 0 and are gapless; with a positive dedup window a
//     segment whose hashes match stored ones inside the window is answered duplicate and
//     writes nothing; pops claim spans after a group's cursor under leases, acks move
//     cursors, retry and dead-letter as the SQL functions do; a transaction that rolls
//     back undoes its pushes. It is also the HotlistStore: Pending lists a group's
//     probably-pending partitions in id pages, and a pop with candidates answers a
//     verdict per candidate (HoldCursor stands in for another transaction holding a
//     cursor: busy; EmptyPartition for a partition with nothing stored). It is also the
//     StreamStore: queries, state shards and cycles (checks first, then journaled pushes,
//     the strict ack with its lease adjustment, the state ops last).
//   - HintNet connects HintBus endpoints in one process: a batch published on one
//     reaches every other listening endpoint, whole, never the publisher.
//   - SpoolFS is a spool directory with power-loss simulation (Crash) and fault
//     injection.
//   - SystemState and QueueAdmin keep the maintenance flags and the queue
//     configurations and dead letters.
//   - Metrics is the metrics history (MetricsWriter), merged as the database merges it;
//     Fail makes its writes fail, for outages.
//   - ActivityLog is an Activity that records each call as text ("pushed t/q 2"); Take
//     returns the calls so far, sorted, and forgets them.
package memory
