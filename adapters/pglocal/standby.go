package pglocal

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// StartStandby starts a streaming standby of the running server at primaryURL in
// dataDir: when dataDir holds no cluster yet, pg_basebackup copies the primary into it
// (-R: standby.signal and primary_conninfo are written, so the copy starts as a standby
// streaming from primaryURL's server; -X stream; a fast checkpoint), run as the server
// user like initdb; then it starts as Start starts a server, on its own port, and returns
// once it accepts connections (read-only). The primary needs what a default initdb
// cluster has: wal_level=replica, max_wal_senders > 0 and a pg_hba.conf line letting the
// user connect for replication (initdb --auth=trust writes one for 127.0.0.1).
// A hot standby refuses to run with less than the primary of max_connections,
// max_prepared_transactions, max_worker_processes, max_locks_per_transaction and
// max_wal_senders: StartStandby reads them from the primary and raises opts to them. The
// copy carries the primary's postgres.log; the standby appends to it.
func StartStandby(ctx context.Context, primaryURL, dataDir string, opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := matchPrimary(ctx, primaryURL, &opts); err != nil {
		return nil, err
	}
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

// standbyMinimums are the settings a hot standby needs at least as high as its primary's.
var standbyMinimums = []string{"max_prepared_transactions", "max_worker_processes", "max_locks_per_transaction", "max_wal_senders"}

// matchPrimary raises opts' max_connections and standbyMinimums to the primary's values.
func matchPrimary(ctx context.Context, primaryURL string, opts *Options) error {
	conn, err := pgx.Connect(ctx, primaryURL)
	if err != nil {
		return fmt.Errorf("pglocal: read the primary's settings: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	settings := maps.Clone(opts.Settings)
	if settings == nil {
		settings = map[string]string{}
	}
	for _, name := range append([]string{"max_connections"}, standbyMinimums...) {
		var v int
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)::int", name).Scan(&v); err != nil {
			return fmt.Errorf("pglocal: the primary's %s: %w", name, err)
		}
		if name == "max_connections" {
			opts.MaxConnections = max(opts.MaxConnections, v)
			continue
		}
		if have, err := strconv.Atoi(settings[name]); err != nil || have < v {
			settings[name] = strconv.Itoa(v)
		}
	}
	opts.Settings = settings
	return nil
}
