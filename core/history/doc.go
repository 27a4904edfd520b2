// Package history counts what this broker does, per (tenant, queue) and for the broker
// as a whole, and writes it to the metrics history (schema/016_metrics.sql, read by the
// analytics routes of docs/api.md §5.11a) once per flush interval (METRICS_FLUSH_MS).
//
// A Recorder is the ports.Activity the push and consume paths call, once per request and
// queue. Counting costs a map lookup under a read lock and a few atomic additions: no
// allocation once a queue has been seen, no lock a writer holds for long. Every Flush
// (60 s by default, ticks at wall-clock multiples of the interval) the loop swaps every
// counter out (atomic Swap to 0) and writes the deltas as one ports.MetricsFlush: one
// QueueMinute per queue that did something and one BrokerMinute for this broker (its
// totals over every queue, its process figures, its parked long polls per queue).
//
// Invariants:
//
//   - Minutes: a flush's deltas belong to the minute holding its tick time minus 1 ns, so
//     a 60 s flush at 12:01:00 writes 12:00 exactly, and shorter intervals write each
//     minute in several additive parts. Minutes are UTC. The swap runs when the tick's
//     timer fires, a little after the boundary (milliseconds under load): what is counted
//     in between goes to the minute that just ended.
//   - Once: a flush carries this process's Instance (a UUIDv7) and an increasing Seq; the
//     writer applies a given (Instance, Seq) at most once, so a flush retried after an
//     unknown outcome is never counted twice. Pending flushes are never merged.
//   - Outage: a database outage keeps counting in memory and writes the missed minutes
//     later, up to 60 flushes (DefaultMaxPending, Options.MaxPending): the failed flushes
//     wait, oldest first, and are written at the next ticks; past the bound the oldest is
//     dropped (counted in Stats.Dropped, logged once per outage).
//   - Loss: a broker killed mid-interval loses only what it counted since its last
//     flush; Stop writes a final flush (bounded by Options.WriteTimeout).
//   - Unknown queue: activity reported with queue "" (an ack whose queue the broker
//     cannot name, an empty discovery pop) counts in the broker's totals only.
//   - Parked polls: sampled every Options.Sample (5 s) and at each flush. A queue row's
//     parked_max is summed over brokers, so each flush sends the increase of this
//     broker's maximum within the minute (0 when it did not grow): additive like every
//     other queue counter, however many flushes write the minute.
//
// Units: counts are plain numbers; lag is in milliseconds (push time of the message's
// segment to its pop), request latency and CPU time in microseconds, memory in bytes.
package history
