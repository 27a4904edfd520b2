package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// Options configures the handler; zero values take the defaults in brackets.
type Options struct {
	MaxBodyBytes int64  // [64 MiB] QUEEN_MAX_BODY_BYTES
	Tenant       string // [ports.DefaultTenant]
	Version      string // reported by /health
	Logger       *slog.Logger
	// Prometheus serves GET /metrics/prometheus.
	Prometheus http.Handler
	// PoolStats reports database connections for GET /metrics.
	PoolStats func() (total, idle, acquired int32)
}

// Services are the use cases the routes call. Push and DB are required.
type Services struct {
	Push    *push.Service
	DB      ports.Pinger
	Consume *consume.Service
	Queues  *queues.Service // configure, queue deletion, dead letters
	// Maintenance enables the maintenance and buffer status routes; Buffers reports the
	// spool for them (nil: no spool).
	Maintenance *maintenance.Flags
	Buffers     func() drain.Status
}

type api struct {
	Services
	opts  Options
	start time.Time
}

// New returns the broker's HTTP handler.
func New(svc Services, opts Options) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 64 << 20
	}
	if opts.Tenant == "" {
		opts.Tenant = ports.DefaultTenant
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PoolStats == nil {
		opts.PoolStats = func() (int32, int32, int32) { return 0, 0, 0 }
	}
	a := &api{Services: svc, opts: opts, start: time.Now()}
	r := mux.NewRouter()
	r.HandleFunc("/api/v1/push", a.handlePush).Methods(http.MethodPost)
	if svc.Consume != nil {
		a.consumeRoutes(r)
	}
	if svc.Maintenance != nil {
		a.systemRoutes(r)
	}
	if svc.Queues != nil {
		a.adminRoutes(r)
	}
	r.HandleFunc("/health", a.handleHealth).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/metrics", a.handleMetrics).Methods(http.MethodGet)
	if opts.Prometheus != nil {
		r.Handle("/metrics/prometheus", opts.Prometheus).Methods(http.MethodGet)
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not Found", "code": "no_such_route"})
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method " + req.Method + " not allowed on " + req.URL.Path})
	})
	return r
}

func (a *api) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	body := map[string]string{"status": "healthy", "database": "connected", "engine": "segments-go", "version": a.opts.Version}
	code := http.StatusOK
	if err := a.DB.Ping(ctx); err != nil {
		a.opts.Logger.Warn("health: database unreachable", "err", err)
		body["status"], body["database"] = "unhealthy", "disconnected"
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, body)
}

// handleMetrics is Queen's JSON /metrics (not Prometheus; api.md §5.13).
func (a *api) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	st := a.Push.Stats()
	total, idle, _ := a.opts.PoolStats()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	writeJSON(w, http.StatusOK, map[string]any{
		"uptime":   int64(time.Since(a.start).Seconds()),
		"requests": map[string]any{"total": st.Requests, "rate": 0},
		"messages": map[string]any{"total": st.Messages, "rate": 0},
		"database": map[string]any{"poolSize": total, "idleConnections": idle, "waitingRequests": 0},
		"memory": map[string]any{"rss": ms.Sys, "heapTotal": ms.HeapSys, "heapUsed": ms.HeapAlloc,
			"external": 0, "arrayBuffers": 0},
		"cpu": map[string]any{"user": 0, "system": 0},
	})
}
