package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/queen-go/queen/core/readiness"
)

// handleReady is GET /ready: 200 when pushes can be accepted now (the
// database answers, or the spool takes them), 503 otherwise and from the start of the
// shutdown. The body says what was found.
func (a *api) handleReady(w http.ResponseWriter, r *http.Request) {
	var rep readiness.Report
	if a.opts.Ready != nil {
		rep = a.opts.Ready(r.Context())
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		rep.Database = a.DB.Ping(ctx) == nil
		rep.Ready = rep.Database
	}
	body := map[string]string{"status": "ready", "database": "connected"}
	if !rep.Database {
		body["database"] = "disconnected"
	}
	if rep.HasSpool {
		body["spool"] = "accepting"
		if rep.SpoolFailing {
			body["spool"] = "failing"
		}
	}
	if rep.Held != "" {
		body["pushes"] = "spooled: " + rep.Held
	}
	code := http.StatusOK
	switch {
	case rep.Stopping:
		body["status"], body["reason"] = "not ready", "shutting down"
		delete(body, "database") // not asked
		code = http.StatusServiceUnavailable
	case !rep.Ready:
		body["status"], body["reason"] = "not ready", "the database is unreachable and the spool cannot take pushes"
		if !rep.HasSpool {
			body["reason"] = "the database is unreachable"
		}
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, body) // a 503 carries Retry-After: 1
}

// handleLive is GET /live: 200 while the process serves HTTP. It asks nothing else, the
// database least of all: a liveness probe that failed during a database outage would
// have brokers that are spooling restarted.
func (a *api) handleLive(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
}
