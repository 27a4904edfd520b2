package queen

import (
	"log/slog"

	"github.com/queen-go/queen/adapters/postgres"
	"github.com/queen-go/queen/config"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/history"
	"github.com/queen-go/queen/core/spool"
	"github.com/queen-go/queen/ports"
)

// ProvideHistory builds the metrics history's recorder (App.Start runs its flushes):
// it counts what the push, pop, ack and retention paths report and samples the pool,
// the spool and the parked long polls; METRICS_FLUSH_MS=0 turns it off.
func ProvideHistory(store *postgres.Store, waker *consume.Waker, sp *spool.Spool, cfg config.Config,
	log *slog.Logger) *history.Recorder {
	return history.New(store, history.Options{
		Off: cfg.MetricsFlush == 0, Flush: cfg.MetricsFlush, Broker: cfg.ServerID, Port: cfg.Port,
		Figures: history.Figures{
			Pool:         store.PoolStat,
			DBErrors:     store.Failed,
			SpoolPending: sp.PendingRecords,
			Parked:       waker.EachParked,
		},
		Logger: log.With("target", "history"),
	})
}

// ProvideActivity is where the push, pop, ack and retention paths report their work:
// the recorder, or nothing when the history is off.
func ProvideActivity(rec *history.Recorder) ports.Activity { return rec.Activity() }
