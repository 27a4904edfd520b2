package pglocal

import (
	"context"
)

// StartStandby starts a streaming standby of the running server at primaryURL in
// dataDir: when dataDir holds no cluster yet, pg_basebackup copies the primary into it
// (-R: standby.signal and primary_conninfo are written, so the copy starts as a standby
// streaming from primaryURL's server; -X stream; a fast checkpoint), run as the server
// user like initdb; then it starts as Start starts a server, on its own port, and returns
// once it accepts connections (read-only). The primary needs what a default initdb
// cluster has: wal_level=replica, max_wal_senders > 0 and a pg_hba.conf line letting the
// user connect for replication (initdb --auth=trust writes one for 127.0.0.1).
// opts.MaxConnections must be at least the primary's max_connections (a hot standby
// refuses fewer). The copy carries the primary's postgres.log; the standby appends to it.
func StartStandby(ctx context.Context, primaryURL, dataDir string, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	binDir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	u, err := lookupServerUser()
	if err != nil {
		return nil, err
	}
	dir, err := prepareDataDir(dataDir, u, opts.Logger)
	if err != nil {
		return nil, err
	}
	if !hasCluster(dir) {
		if err := baseBackup(ctx, binDir, primaryURL, dir, u); err != nil {
			return nil, err
		}
		opts.Logger.Info("pglocal: copied the primary for a standby", "dir", dir)
	}
	return Start(ctx, dir, opts)
}

// baseBackup copies the primary at primaryURL into the empty directory dir, with the
// settings that make it a standby of that primary (-R).
func baseBackup(ctx context.Context, binDir, primaryURL, dir string, u *serverUser) error {
	return runTool(ctx, binDir, dir, u, "pg_basebackup", "-d", primaryURL, "-D", dir, "-R", "-X", "stream", "-c", "fast")
}
