// Package replication judges the replication set-up of the database the broker writes
// to: whether a push answered `queued` (committed on the primary) survives the loss of
// the primary, that is whether a standby promoted in its place holds every commit the
// broker acknowledged.
//
// Rules (Judge):
//
//   - synchronous_commit off or local: the primary acknowledges a commit before any
//     standby has it. Not durable across a failover.
//   - no synchronous_standby_names: replication, if any, is asynchronous; a standby
//     promoted after the primary's loss may miss the last acknowledged commits. Not
//     durable.
//   - synchronous_standby_names set and a synchronous standby attached (sync_state sync or
//     quorum) with synchronous_commit on, remote_apply or remote_write: durable (with
//     remote_write the standby has the commit in its operating system's cache, not yet
//     on its disk: it survives the primary's loss, not the standby's own crash at the
//     same moment).
//   - synchronous_standby_names set and no synchronous standby attached: commits wait
//     until one attaches; what was acknowledged is durable, but pushes stall (they go to
//     the spool once their statements time out).
//   - standbys the database role may not see (no pg_read_all_stats) make the verdict
//     unknown: the log line says how to let the broker see them.
//
// Check.Report reads the set-up once and logs one line with the verdict: at start-up, so
// an operator learns from the broker's first lines whether `queued` outlives a failover.
// Check.Sync is the queen_pg_sync_replication gauge, read at each scrape.
//
// # Reads from replicas
//
// ReadRouter (reads.go) decides which server answers the broker's read-only
// administrative queries: the primary (QUEEN_PG_URL) or a standby of it
// (QUEEN_PG_READ_URL), so that dashboards and admin listings polling often cost the
// primary nothing. Only reads that need not see the calling request's own writes may go
// to the standby (adapters/admin lists them); everything that writes, or reads what it
// has just written, stays on the primary.
//
// Rule (ChooseRead): a read goes to the standby while the standby's replay lag is known
// and at most ReadOptions.MaxLag (QUEEN_READ_MAX_LAG_MS); an unreachable standby, one not
// measured yet and one lagging more answer nothing: the primary does.
//
// Lag (LagHistory.Estimate) is measured without trusting an idle primary's clock: the
// primary's current WAL position is read first, then the standby's replay position. A
// standby that has replayed at least that position is caught up (lag 0), however long
// ago the last transaction committed: now() - pg_last_xact_replay_timestamp() alone grows
// on an idle primary without any lag. Only a standby behind that position lags, by the
// smaller of two upper bounds: the age of the last transaction it replayed, and the time
// since the primary's WAL was last seen at a position it has replayed (the router keeps
// its recent readings of the primary's position, so the first commit after a long idle
// period does not look like a long lag).
//
// ReadRouter measures every ReadOptions.Every (1 s) from Start until Stop, keeps the
// choice for the reads (Replica) and the last lag for queen_pg_replica_lag_seconds
// (Lag), and logs one line each time the reads move to the primary or back.
package replication
