package queen

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	"github.com/queen-go/queen/adapters/admin"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/replication"
	"github.com/queen-go/queen/core/segment"
	"github.com/queen-go/queen/ports"
)

// AdminDB are the database/sql handles of the administrative queries: the primary's, on
// the store's pool, and the replica's (QUEEN_PG_READ_URL; nil without it), on a pool of
// its own.
type AdminDB struct {
	Primary, Replica *sql.DB
}

// ProvideAdminDB opens the handles of the administrative queries; the cleanup closes
// them (before the store's pool). The replica's pool connects on first use: a replica
// down at start-up leaves the reads on the primary until it answers.
func ProvideAdminDB(ctx context.Context, store *postgres.Store, cfg config.Config, log *slog.Logger) (AdminDB, func(), error) {
	dbs := AdminDB{Primary: store.DB()}
	var replica *postgres.Store
	if cfg.ReadURL != "" {
		var err error
		replica, err = postgres.Open(ctx, cfg.ReadURL, postgres.Options{
			PoolSize: cfg.PoolSize, StatementTimeout: cfg.StatementTimeout, Logger: log,
			ApplicationName: "queen-go:" + cfg.ServerID + ":reads",
		})
		if err != nil {
			_ = dbs.Primary.Close()
			return AdminDB{}, nil, fmt.Errorf("QUEEN_PG_READ_URL: %w", err)
		}
		dbs.Replica = replica.DB()
	}
	return dbs, func() {
		if dbs.Replica != nil {
			if err := dbs.Replica.Close(); err != nil {
				log.Error("admin: close the replica's database handle", "err", err)
			}
			replica.Close()
		}
		if err := dbs.Primary.Close(); err != nil {
			log.Error("admin: close database handle", "err", err)
		}
	}, nil
}

// adminOptions are the options of every Admin of the broker: a statement that times out
// has its connection discarded, as on the hot path.
func adminOptions(cfg config.Config, log *slog.Logger) admin.Options {
	return admin.Options{StatementTimeout: cfg.StatementTimeout, Discard: postgres.DiscardConn,
		BindOptions: postgres.PlanEachStatement, Logger: log}
}

// ProvideReadRouter builds the choice of server of the replica-eligible reads
// (QUEEN_PG_READ_URL, QUEEN_READ_MAX_LAG_MS; App.Start runs its measurements): without a
// replica, every read goes to the primary.
func ProvideReadRouter(dbs AdminDB, cfg config.Config, log *slog.Logger) *replication.ReadRouter {
	opts := replication.ReadOptions{MaxLag: cfg.ReadMaxLag, Logger: log}
	if dbs.Replica == nil {
		return replication.NewReadRouter(nil, opts)
	}
	ao := adminOptions(cfg, log)
	ao.Replica = dbs.Replica
	return replication.NewReadRouter(admin.New(dbs.Primary, ao), opts)
}

// ProvideAdmin builds the administrative queries (bun) on the primary's handle, with the
// reads adapters/admin lists on the replica's while the router sends them there.
func ProvideAdmin(dbs AdminDB, reads *replication.ReadRouter, cfg config.Config, log *slog.Logger) *admin.Admin {
	opts := adminOptions(cfg, log)
	if dbs.Replica != nil {
		opts.Replica, opts.UseReplica = dbs.Replica, reads.Replica
	}
	return admin.New(dbs.Primary, opts)
}

// ProvideQueues builds the queue administration use case; it announces every queue it
// reconfigures or deletes.
func ProvideQueues(a ports.QueueAdmin, sealer *envelope.Sealer, codec *segment.Codec, changes *notify.QueueChanges,
	cfg config.Config, log *slog.Logger) *queues.Service {
	return queues.New(a, queues.Options{Sealer: sealer, Codec: codec, Logger: log, Changes: changes,
		Shards: max(1, len(cfg.ShardURLs()))})
}
