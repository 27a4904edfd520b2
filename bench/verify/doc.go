// Package verify is the verifier of the pipeline benchmark: after a run it decides,
// from what the producers assigned and what every stage received, whether the broker
// kept its promise of total order per partition with nothing lost.
//
// # The job
//
// Each entity (a "property" in the channel-manager workload) owns one partition per
// queue, so entity order is partition order. Producers give every message of an entity
// a dense, monotone sequence number starting at the entity's base (0 unless a run
// starts elsewhere) and write the highest one assigned per entity to produced.meta
// (ground truth). Every consumer of every stage appends one line per received message
// to its stage log (observation). Check streams each stage log and keeps, per entity,
// the set of sequences seen (a bitset grown on demand, since sequences are dense) and
// the highest sequence seen. The highest first-occurrence sequence, which the ordering
// check compares against, is the same number at every point of the stream: each value
// seen has its first occurrence at or before that point, so one field serves both.
//
// Per stage it derives:
//
//	msgs        lines read
//	unique      first occurrences (msgs - dups)
//	dups        a sequence arriving again after its first occurrence
//	viols       a first occurrence lower than the highest sequence already seen
//	gaps        sum over entities of max(0, maxSeen - base + 1 - distinct), where
//	            distinct counts the sequences seen in [base, maxSeen]
//	inflight    sum over produced entities of max(0, producedMax - max(maxSeen, base-1));
//	            an entity never seen contributes producedMax - base + 1
//	unproduced  lines of an entity missing from produced.meta, or with a sequence
//	            below its base or above its produced maximum (reported in the JSON
//	            and as a note under the table; with sound producers it is zero)
//
// # The verdict
//
// Gaps always fail: a gap is a sequence that never arrived even though a higher one of
// the same entity did, that is a loss below the frontier. A message still in flight at
// the cutoff is above maxSeen, so it lands in inflight and never in gaps. Order
// violations fail unless the run recorded acknowledgement failures (Options.AckErrors
// > 0): a failed ack legitimately redelivers a span, and a redelivery can reorder first
// occurrences; they are still counted and printed. Duplicates and inflight are reported
// and never fatal: at-least-once delivery allows the first, the cutoff causes the
// second.
//
// Two rules keep the verdict sound:
//
//   - A duplicate is counted and then skipped by the ordering check. Re-seeing 7 after
//     12 is redelivery, not reordering; only a first occurrence out of order is.
//   - The gap term is clamped at zero per entity before summing. A negative term (for
//     instance an entity whose base was mis-specified above every sequence it received)
//     must not cancel a genuine gap of another entity and turn an aggregate FAIL into a
//     PASS. An unsound verifier is worse than none. Counting only the sequences in
//     [base, maxSeen] as distinct serves the same end inside one entity: sequences below
//     the base cannot hide a hole above it.
//
// # File formats
//
// Both files are plain text, one record per line, every line terminated by "\n" (a
// final line without it is an error: a truncated log is an incomplete observation, and
// the verifier does not guess). Fields are separated by exactly one space (0x20). There
// is no trimming, no CR, no blank line.
//
//	entity := 1*byte            none of SP HT LF VT FF CR; the first byte is not "#"
//	seq    := 1*19 DIGIT        decimal 0-9, leading zeros allowed, value <= MaxSeq
//
// produced.meta (ground truth, written by WriteProduced, read by ReadProduced):
//
//	file    := line*
//	line    := comment | entry
//	comment := "#" *(any byte but LF) LF        ignored; WriteProduced writes one header
//	entry   := entity SP max [SP base] LF      base defaults to 0; base <= max
//
// Each entity appears at most once; one with nothing produced is not listed (absent and
// "nothing produced" verify alike). WriteProduced sorts entries by entity and writes the
// base field only when it is not 0, so a fresh run looks like
//
//	# queen-bench produced.meta v1: entity maxSeq [baseSeq]
//	p0001 7406
//	p0002 7399
//
// Stage log, one per (queue, group) pair, named "<queue>_<group>.log", e.g.
// "cm-avail_cm-db.log" (written by StageLog):
//
//	file := (entity SP seq LF)*
//
// Run directory (read by Dir): produced.meta, the stage logs, and optionally a file
// named "stages" that fixes the report order, one stage per line:
//
//	stages := ( "#" *(any byte but LF) LF | LF | name [SP metafile] LF )*
//
// where name is the log's file name without ".log" and metafile, a file name in the same
// directory, replaces produced.meta as that stage's ground truth (two flows with their
// own producers and sequence spaces over the same entity ids, like the availability and
// prices flows, each get their own file). Logs the stages file does not list follow in
// name order; without a stages file every stage is in name order.
//
// Sequences are bounded by MaxSeq (2^53-1) so that every sum and span stays far from
// int64 overflow and every number in the JSON report is exact in a float64; one
// entity's seen sequences may span at most MaxSpan, which bounds the bitset a corrupt
// line could make the verifier allocate.
//
// # The fault verifier (ledger.go)
//
// CheckLedger is the verifier of docs/reliability.md for runs where things break: the
// ground truth is a Ledger of every push answer per (partition, sequence) (an accepted
// status, queued, buffered or duplicate, is a promise and is never replaced by a later
// retry's failure), the observation one GroupLog of deliveries per consumer group, kept
// in memory. Per group it counts lost items (accepted, never delivered), stored
// duplicates (a sequence delivered again with deliveryAttempt 1, or under another
// message id: two stored copies), order violations (a first delivery below the highest
// one; not fatal in a partition where an ack call itself failed), gaps, items in flight
// (accepted above the highest delivered) and deliveries of sequences never pushed; every
// one of them fails the run, so CheckLedger is meant for after the final drain.
package verify
