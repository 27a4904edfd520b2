package queen

import (
	"log/slog"

	"github.com/queen-go/queen/adapters/admin"
	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/envelope"
	"github.com/queen-go/queen/core/notify"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/segment"
)

// ProvideAdmin builds the administrative queries (bun) on a database/sql handle of the
// store's pool (closed by the cleanup, before the pool); a statement that times out has
// its connection discarded, as on the hot path.
func ProvideAdmin(store *postgres.Store, cfg config.Config, log *slog.Logger) (*admin.Admin, func()) {
	db := store.DB()
	a := admin.New(db, admin.Options{StatementTimeout: cfg.StatementTimeout, Discard: postgres.DiscardConn,
		BindOptions: postgres.PlanEachStatement, Logger: log})
	return a, func() {
		if err := db.Close(); err != nil {
			log.Error("admin: close database handle", "err", err)
		}
	}
}

// ProvideQueues builds the queue administration use case; it announces every queue it
// reconfigures or deletes.
func ProvideQueues(a *admin.Admin, sealer *envelope.Sealer, codec *segment.Codec, changes *notify.QueueChanges, log *slog.Logger) *queues.Service {
	return queues.New(a, queues.Options{Sealer: sealer, Codec: codec, Logger: log, Changes: changes})
}
