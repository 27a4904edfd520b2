package ports

import "context"

// ReplicationSetup is what the primary says of its replication: enough to judge whether a
// commit it acknowledged survives a failover to a standby (core/replication).
type ReplicationSetup struct {
	SynchronousCommit       string // current_setting('synchronous_commit'): on, remote_apply, remote_write, local, off
	SynchronousStandbyNames string // current_setting('synchronous_standby_names'); "" = none
	InRecovery              bool   // the server is itself a standby (a read-only connection)
	Standbys                int    // WAL senders to standbys (pg_stat_replication rows)
	SyncStandbys            int    // of those, sync_state sync or quorum
	// Hidden counts the rows whose state the database role may not read (it lacks
	// pg_read_all_stats): their standbys may be synchronous or not.
	Hidden int
}

// ReplicationReader reads the replication set-up of the database the broker writes to.
type ReplicationReader interface {
	ReplicationSetup(ctx context.Context) (ReplicationSetup, error)
}
