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
package replication
