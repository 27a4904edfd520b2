package dashboard

import (
	"context"

	"github.com/queen-go/queen/core/drain"
)

type systemData struct {
	Maintenance      bool // the flags are known
	PushMaintenance  bool
	PopMaintenance   bool
	MaintenanceStale bool // the database could not be asked: the last known flags
	Spool            *drain.Status
	May              permissions
}

// system shows the maintenance switches and the spool.
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
	return "system", d, nil
}
