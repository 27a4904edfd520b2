package dashboard

import (
	"context"
	"time"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/drain"
)

// maxActiveQueries bounds the running statements the system page lists.
const maxActiveQueries = 50

type systemData struct {
	Maintenance      bool // the flags are known
	PushMaintenance  bool
	PopMaintenance   bool
	MaintenanceStale bool // the database could not be asked: the last known flags
	Spool            *drain.Status
	History          bool // the analytics use case is there: brokers and PostgreSQL
	Brokers          []admin.WorkerSummary
	PG               *admin.PostgresReport
	May              permissions
}

// system shows the maintenance switches, the spool, the brokers and what PostgreSQL
// says of itself.
func (h *Handler) system(ctx context.Context, rq *request) (string, any, error) {
	d := systemData{May: rq.may}
	if m := h.svc.Maintenance; m != nil {
		if err := m.Refresh(ctx); err != nil {
			h.opts.Logger.Warn("dashboard: maintenance flags unreadable, showing the last known ones", "err", err)
			d.MaintenanceStale = true
		}
		d.Maintenance, d.PushMaintenance, d.PopMaintenance = true, m.Push(), m.Pop()
	}
	if h.svc.Spool != nil {
		st := h.svc.Spool()
		d.Spool = &st
	}
	if a := h.svc.Analytics; a != nil {
		d.History = true
		brokers, err := h.brokers(ctx, time.Hour)
		if err != nil {
			return "", nil, err
		}
		d.Brokers = brokers.Workers
		pg, err := a.Postgres(ctx)
		if err != nil {
			return "", nil, err
		}
		// The report is shared with other callers: the page keeps a bounded copy.
		pg.Stats.ActiveQueries = pg.Stats.ActiveQueries[:min(len(pg.Stats.ActiveQueries), maxActiveQueries)]
		d.PG = &pg
	}
	return "system", d, nil
}
