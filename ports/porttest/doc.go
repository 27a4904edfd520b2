// Package porttest is the conformance suite of the ports: one suite per port, run by
// every implementation of it, so the in-memory fakes the core is tested with cannot
// drift from the real adapters.
//
//   - SegmentStore: adapters/postgres, adapters/memory
//   - ConsumeStore (with the candidates' verdicts, candidates.go), TransactionStore,
//     HotlistStore and StreamStore: adapters/postgres, adapters/memory
//   - PlainRefused, the one suite across ports: the store's refusal of plaintext for a
//     queue that encrypts, on every path that writes segments (SegmentStore,
//     TransactionStore, StreamStore): adapters/postgres, adapters/memory
//   - HintBus: adapters/postgres (LISTEN/NOTIFY, one Store per endpoint), adapters/memory
//     (HintNet)
//   - SpoolFS: adapters/spoolfs (a real directory), adapters/memory
//   - SystemState: adapters/postgres, adapters/memory
//   - QueueSettings: adapters/postgres, adapters/memory
//   - RetentionStore: adapters/postgres, adapters/memory
//   - MetricsWriter (the metrics history's merge rules): adapters/postgres,
//     adapters/memory
//   - QueueAdmin, GroupStore, MessageStore, ResourceStore and TraceStore: adapters/admin,
//     adapters/memory
//
// Each suite is a table of named cases over a Fixture: a fresh implementation plus hooks
// for the state the port itself cannot express (a queue's options, an expired lease, data
// older than a window, a dead letter, a cursor another transaction holds, a partition
// with nothing stored). The spool's own crash and damage scenarios, which
// need core/spool, are core/spool/spooltest, run the same way.
//
// It lives beside ports, which imports only the standard library, and imports only
// ports and the standard library itself: blobs are opaque bytes here.
package porttest
