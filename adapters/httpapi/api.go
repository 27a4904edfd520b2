package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/loglimit"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/process"
	"github.com/queen-go/queen/core/push"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/readiness"
	"github.com/queen-go/queen/core/stages"
	"github.com/queen-go/queen/core/streams"
	"github.com/queen-go/queen/ports"
)

// The defaults of Options that server variables share (config's tests check that they
// agree).
const (
	DefaultMaxBodyBytes = 64 << 20 // QUEEN_MAX_BODY_BYTES, bytes
	DefaultMaxPushItems = 10000    // QUEEN_MAX_PUSH_ITEMS
)

// Options configures the handler; zero values take the defaults in brackets.
type Options struct {
	MaxBodyBytes int64  // [64 MiB] QUEEN_MAX_BODY_BYTES
	MaxPushItems int    // [10,000] QUEEN_MAX_PUSH_ITEMS: items of one push
	Tenant       string // [ports.DefaultTenant]
	Version      string // reported by /health
	Logger       *slog.Logger
	// Prometheus serves GET /metrics/prometheus.
	Prometheus http.Handler
	// PoolStats reports database connections for GET /metrics.
	PoolStats func() (total, idle, acquired int32)
	// Auth checks the token and its roles on every route but the public ones (docs/api.md
	// §3, auth.go); nil: authentication is off and every request is allowed.
	Auth *auth.Verifier
	// SkipPaths are served without a token when Auth is set (JWT_SKIP_PATHS): an exact
	// match, or a prefix match for entries longer than "/" that end in "/".
	SkipPaths []string
	// AccessLog logs every request at info level (QUEEN_ACCESS_LOG; observe.go).
	AccessLog bool
	// Observers hear of every request once it is answered (the request metrics).
	Observers []Observer
	// Ready, when set, is asked by GET /ready whether pushes can be accepted now
	// (core/readiness); nil: ready whenever the database answers.
	Ready func(context.Context) readiness.Report
	// UI serves UIRoutes, each with its access level: the web dashboard (adapters/dashboard),
	// behind the same authentication as the API. nil: no such routes.
	UI       http.Handler
	UIRoutes []UIRoute
	// OpenAPI is the API's OpenAPI document (docs/openapi.yaml), served at GET
	// /openapi.yaml; nil: no such route.
	OpenAPI []byte
	// Stages times the push's read and answer stages and a pop's answer (core/stages)
	// [its own].
	Stages *stages.Timers
}

// UIRoute is a route of Options.UI: a method, a gorilla/mux path template and the level
// a caller needs (docs/api.md §3).
type UIRoute struct {
	Method, Path string
	Level        auth.Level
}

// Pusher is the push use case the push and transaction routes call: core/push's
// Service. bench/floor puts a stand-in behind the same routes to measure the HTTP layer
// alone (the HTTP floor of docs/benchmarks.md).
type Pusher interface {
	Push(ctx context.Context, tenant, producerSub string, items []push.Item) []push.Result
	Transaction(ctx context.Context, tenant, producerSub string, ops []push.TxnOp, hint string) ([]push.TxnResult, error)
	Stats() push.Stats
}

// Services are the use cases the routes call. Push and DB are required.
type Services struct {
	Push    Pusher
	DB      ports.Pinger
	Consume *consume.Service
	Queues  *queues.Service // configure, queue deletion, dead letters
	// Maintenance enables the maintenance and buffer status routes; Buffers reports the
	// spool for them (nil: no spool).
	Maintenance *maintenance.Flags
	Buffers     func() drain.Status
	// The admin API (docs/api.md §5.7-5.11): each enables its routes.
	Resources *admin.Resources
	Groups    *admin.Groups
	Messages  *admin.Messages
	Traces    *admin.Traces
	// Analytics enables the metrics history's routes (docs/api.md §5.11a) and the
	// history parts of GET /api/v1/status and GET /api/v1/resources/overview.
	Analytics *admin.Analytics
	// Streams enables /streams/v1/* (docs/streams.md).
	Streams *streams.Service
}

type api struct {
	Services
	opts  Options
	start time.Time
}

// New returns the broker's HTTP handler: the routes, behind authentication when
// opts.Auth is set.
func New(svc Services, opts Options) http.Handler {
	a := newAPI(svc, opts)
	root := a.routes()
	h := a.guard(root)
	if svc.Streams != nil {
		h = streamsCORS(h)
	}
	return observe(h, root, a.opts.Logger, opts.AccessLog, opts.Observers)
}

func newAPI(svc Services, opts Options) *api {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxPushItems <= 0 {
		opts.MaxPushItems = DefaultMaxPushItems
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
	if opts.Stages == nil {
		opts.Stages = stages.New()
	}
	return &api{Services: svc, opts: opts, start: time.Now()}
}

// routes registers every route of the services present; auth.go gives each its access
// level.
func (a *api) routes() *mux.Router {
	svc, opts := a.Services, a.opts
	// Names are free text: a queue, partition or group named "." or "..", or with "//",
	// must reach its route as sent, not be redirected to a cleaned path.
	r := mux.NewRouter().SkipClean(true)
	r.Use(a.checkParams(false)) // every path and query parameter (params.go)
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
	if svc.Resources != nil {
		a.resourcesRoutes(r)
	}
	if svc.Groups != nil {
		a.groupsRoutes(r)
	}
	if svc.Messages != nil {
		a.messagesRoutes(r)
	}
	if svc.Traces != nil {
		a.tracesRoutes(r)
	}
	if svc.Analytics != nil {
		a.analyticsRoutes(r)
	}
	if svc.Streams != nil {
		a.streamsRoutes(r)
	}
	a.migrationRoutes(r) // refused, whatever the services (system.go)
	r.HandleFunc("/health", a.handleHealth).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/ready", a.handleReady).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/live", a.handleLive).Methods(http.MethodGet, http.MethodHead)
	r.HandleFunc("/metrics", a.handleMetrics).Methods(http.MethodGet)
	if opts.Prometheus != nil {
		r.Handle("/metrics/prometheus", opts.Prometheus).Methods(http.MethodGet)
	}
	if opts.OpenAPI != nil {
		r.HandleFunc("/openapi.yaml", a.handleOpenAPI).Methods(http.MethodGet)
	}
	if opts.UI != nil {
		for _, u := range opts.UIRoutes {
			r.Handle(u.Path, opts.UI).Methods(u.Method)
		}
	}
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not Found", "code": "no_such_route"})
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setAllow(w, r, req)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method " + req.Method + " not allowed on " + req.URL.Path})
	})
	return r
}

// routeMethods are the methods the routes are registered with.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions}

// setAllow sets the Allow header a 405 must carry (RFC 9110 §15.5.6): the methods router
// would route req's path with. A header already set (by a router mounted under this one,
// which knows its own routes) is kept.
func setAllow(w http.ResponseWriter, router *mux.Router, req *http.Request) {
	if w.Header().Get("Allow") != "" {
		return
	}
	var allow []string
	for _, m := range routeMethods {
		probe := req.Clone(req.Context())
		probe.Method = m
		var match mux.RouteMatch
		if router.Match(probe, &match) && match.MatchErr == nil {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
	}
}

func (a *api) handleHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	body := map[string]string{"status": "healthy", "database": "connected", "engine": "segments-go", "version": a.opts.Version}
	code := http.StatusOK
	if err := a.DB.Ping(ctx); err != nil {
		a.opts.Logger.Warn("health: database unreachable", loglimit.Cause("health database unreachable"), "err", err)
		body["status"], body["database"] = "unhealthy", "disconnected"
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, body)
}

// metricsBody is Queen's JSON /metrics (not Prometheus; docs/api.md §5.13), keys in its order.
type metricsBody struct {
	Uptime   int64 `json:"uptime"`
	Requests struct {
		Total uint64 `json:"total"`
		Rate  int    `json:"rate"`
	} `json:"requests"`
	Messages struct {
		Total uint64 `json:"total"`
		Rate  int    `json:"rate"`
	} `json:"messages"`
	Database struct {
		PoolSize        int32 `json:"poolSize"`
		IdleConnections int32 `json:"idleConnections"`
		WaitingRequests int   `json:"waitingRequests"`
	} `json:"database"`
	Memory struct {
		RSS          uint64 `json:"rss"`
		HeapTotal    uint64 `json:"heapTotal"`
		HeapUsed     uint64 `json:"heapUsed"`
		External     int    `json:"external"`
		ArrayBuffers int    `json:"arrayBuffers"`
	} `json:"memory"`
	CPU struct {
		User   int `json:"user"`
		System int `json:"system"`
	} `json:"cpu"`
}

// handleMetrics is Queen's JSON /metrics (not Prometheus; docs/api.md §5.13).
func (a *api) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	st := a.Push.Stats()
	total, idle, _ := a.opts.PoolStats()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var m metricsBody
	m.Uptime = int64(time.Since(a.start).Seconds())
	m.Requests.Total, m.Messages.Total = st.Requests, st.Messages
	m.Database.PoolSize, m.Database.IdleConnections = total, idle
	rss, _ := process.Memory()
	m.Memory.RSS, m.Memory.HeapTotal, m.Memory.HeapUsed = uint64(rss), ms.HeapSys, ms.HeapAlloc
	writeJSON(w, http.StatusOK, m)
}

// NewServer is the broker's HTTP server for h at addr, set up as queen-server runs it
// (the caller listens). bench/floor serves its floor with it too, so the two differ only
// in what is behind the push route.
//
// ReadTimeout bounds the whole request, body included (docs/reliability.md bad input
// #28), so a client trickling a body cannot hold a connection and a handler: the body's
// read fails, which readBody answers 408 and closes the connection. It does not cut
// long polls short: net/http clears the connection's read deadline once the request is
// read (for its background read, which watches for the client going away).
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // QUEEN_READ_TIMEOUT_MS
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    MaxHeaderBytes, // larger header blocks get 431 from net/http
	}
}
