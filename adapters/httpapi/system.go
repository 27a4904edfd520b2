package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/ports"
)

func (a *api) systemRoutes(r *mux.Router) {
	r.HandleFunc("/api/v1/system/maintenance", a.handleMaintenanceGet).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/system/maintenance", a.handleMaintenanceSet(ports.MaintenancePush)).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/system/maintenance/pop", a.handlePopMaintenanceGet).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/system/maintenance/pop", a.handleMaintenanceSet(ports.MaintenancePop)).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/status/buffers", a.handleBuffers).Methods(http.MethodGet)
}

func (a *api) buffers() drain.Status {
	if a.Buffers == nil {
		return drain.Status{DBHealthy: true}
	}
	return a.Buffers()
}

// handleMaintenanceGet re-reads the flags from the database first (docs/api.md §5.12), so an
// operator sees what another broker set even between refreshes.
func (a *api) handleMaintenanceGet(w http.ResponseWriter, r *http.Request) {
	if err := a.Maintenance.Refresh(r.Context()); err != nil {
		a.opts.Logger.Warn("maintenance: flags unreadable, answering the last known ones", loglimit.Cause("maintenance flags unreadable"), "err", err)
	}
	b := a.buffers()
	writeJSON(w, http.StatusOK, map[string]any{
		"maintenanceMode":    a.Maintenance.Push(),
		"popMaintenanceMode": a.Maintenance.Pop(),
		"bufferedMessages":   b.Pending,
		"bufferHealthy":      b.DBHealthy,
		"bufferStats": map[string]any{
			"pendingCount": b.Pending, "failedCount": b.Failed, "dbHealthy": b.DBHealthy,
			"failedFiles": map[string]any{"count": b.FailedFiles, "totalBytes": b.FailedBytes,
				"totalMB": float64(b.FailedBytes) / (1 << 20), "failoverCount": b.Pending, "qos0Count": 0},
		},
	})
}

func (a *api) handlePopMaintenanceGet(w http.ResponseWriter, r *http.Request) {
	if err := a.Maintenance.Refresh(r.Context()); err != nil {
		a.opts.Logger.Warn("maintenance: flags unreadable, answering the last known ones", loglimit.Cause("maintenance flags unreadable"), "err", err)
	}
	writeJSON(w, http.StatusOK, popMaintenanceBody(a.Maintenance.Pop()))
}

func popMaintenanceBody(on bool) map[string]any {
	msg := "Pop maintenance mode DISABLED. Pops deliver messages."
	if on {
		msg = "Pop maintenance mode ENABLED. Pops answer 204 with no messages."
	}
	return map[string]any{"popMaintenanceMode": on, "message": msg}
}

// handleMaintenanceSet turns a flag on or off: body {"enabled": bool}.
func (a *api) handleMaintenanceSet(key string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Enabled *bool `json:"enabled"`
		}
		b, err := readBody(r, a.opts.MaxBodyBytes)
		if err != nil {
			writeError(w, a.opts.Logger, err)
			return
		}
		if json.Unmarshal(b, &body) != nil || body.Enabled == nil {
			writeError(w, a.opts.Logger, badRequestf("enabled (boolean) is required"))
			return
		}
		on := *body.Enabled
		if err := a.Maintenance.Set(r.Context(), key, on); err != nil {
			writeError(w, a.opts.Logger, err)
			return
		}
		if key == ports.MaintenancePop {
			writeJSON(w, http.StatusOK, popMaintenanceBody(on))
			return
		}
		msg := "Maintenance mode DISABLED. Background processor will drain buffer to DB."
		if on {
			msg = "Maintenance mode ENABLED. All PUSHes routing to file buffer."
		}
		st := a.buffers()
		writeJSON(w, http.StatusOK, map[string]any{"maintenanceMode": on, "bufferedMessages": st.Pending,
			"bufferHealthy": st.DBHealthy, "message": msg})
	}
}

func (a *api) handleBuffers(w http.ResponseWriter, _ *http.Request) {
	b := a.buffers()
	writeJSON(w, http.StatusOK, map[string]any{"pending": b.Pending, "failed": b.Failed, "dbHealthy": b.DBHealthy, "worker": 0})
}

// migrationMethods are the methods the migration refusal answers: every one a client
// may send to Queen's /api/v1/migration/* routes (they use GET and POST).
var migrationMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// migrationRefusal is the answer of every /api/v1/migration/* call (docs/api.md §5.17).
const migrationRefusal = "database migration between servers is not offered by this broker; copy the " +
	"database with pg_dump/pg_restore (docs/api.md §5.17)"

// migrationRoutes registers Queen's database migration routes (test-connection, start,
// status, validate, reset), which this broker answers 501: copying its database is a
// job for PostgreSQL's own tools, not for a broker that serves traffic from it.
func (a *api) migrationRoutes(r *mux.Router) {
	// A copy: mux's Methods upper-cases the slice it is given in place, and routers are
	// built concurrently (each broker, each test).
	r.HandleFunc("/api/v1/migration/{action:.+}", a.handleMigration).Methods(slices.Clone(migrationMethods)...)
}

func (a *api) handleMigration(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusNotImplemented, map[string]string{"error": migrationRefusal, "code": "not_supported"})
}
