package dashboard

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/drain"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/ports"
)

// Services are the core use cases the dashboard reads through; a nil one leaves its
// part of the pages saying that this broker does not serve it. Actions never go through
// them: the browser calls the JSON API, under its own authentication.
type Services struct {
	Resources   *admin.Resources
	Groups      *admin.Groups
	Messages    *admin.Messages
	Traces      *admin.Traces
	Queues      *queues.Service // dead letters
	Maintenance *maintenance.Flags
	Spool       func() drain.Status // nil: no spool
	// Analytics reads the metrics history for the charts, the rates, the brokers and
	// PostgreSQL's statistics; nil: the charts show the current backlog only.
	Analytics *admin.Analytics
}

// Options configures the handler; zero values take the defaults in brackets.
type Options struct {
	Tenant   string        // [ports.DefaultTenant]
	Version  string        // shown in the pages' footer
	PageSize int           // [50] rows of every table page
	Refresh  time.Duration // [5 s] the overview's refresh period
	Logger   *slog.Logger  // [slog.Default()]
	Now      func() time.Time
}

// DefaultPageSize is the rows of a table page: small enough for any browser whatever
// the number of queues or partitions behind it.
const DefaultPageSize = 50

func (o *Options) defaults() {
	if o.Tenant == "" {
		o.Tenant = ports.DefaultTenant
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.Refresh <= 0 {
		o.Refresh = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Route is one route of the dashboard as the HTTP API's router registers it: a method,
// a gorilla/mux path template and its access level (docs/api.md §3). Every route is
// served by the Handler itself, which reads the path again.
type Route struct {
	Method, Path string
	Level        auth.Level
}

// routes are the dashboard's routes: the shells and assets are public (they hold no
// data); the fragments are reads. The asset template takes every path under
// /ui/assets/, so that a path with ".." reaches the handler (a 404) instead of the
// router's unmatched route.
var routes = []Route{
	{http.MethodGet, "/", auth.Public},
	{http.MethodGet, "/ui/queues", auth.Public},
	{http.MethodGet, "/ui/queues/{name:.+}", auth.Public},
	{http.MethodGet, "/ui/groups", auth.Public},
	{http.MethodGet, "/ui/messages", auth.Public},
	{http.MethodGet, "/ui/dlq", auth.Public},
	{http.MethodGet, "/ui/traces", auth.Public},
	{http.MethodGet, "/ui/system", auth.Public},
	{http.MethodGet, "/ui/assets/{file:.+}", auth.Public},
	{http.MethodGet, "/ui/fragments/{page}", auth.ReadOnly},
}

// Routes lists the dashboard's routes, for the router that mounts the Handler.
func Routes() []Route { return append([]Route(nil), routes...) }

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Handler serves the dashboard: the page shells, the assets and the fragments.
type Handler struct {
	svc       Services
	opts      Options
	tpl       *template.Template
	assets    map[string]asset
	fragments map[string]fragment
}

// New returns the dashboard over svc. The templates are parsed and the assets read
// here: a broken one panics at start-up, never on a request.
func New(svc Services, opts Options) *Handler {
	opts.defaults()
	h := &Handler{svc: svc, opts: opts}
	tpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		panic(fmt.Sprintf("dashboard: templates: %v", err))
	}
	h.tpl = tpl
	if h.assets, err = loadAssets(); err != nil {
		panic(fmt.Sprintf("dashboard: assets: %v", err))
	}
	h.fragments = map[string]fragment{
		"overview": h.overview, "queues": h.queueList, "queue": h.queue, "groups": h.groups,
		"messages": h.messages, "dlq": h.deadLetters, "traces": h.traces,
		"system": h.system,
	}
	return h
}

// shellPages are the shells by path; a queue's page is /ui/queues/{name}.
var shellPages = map[string]string{
	"/": "overview", "/ui/queues": "queues", "/ui/groups": "groups", "/ui/messages": "messages",
	"/ui/dlq": "dlq", "/ui/traces": "traces", "/ui/system": "system",
}

// ServeHTTP routes a request by its path (see routes).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method " + r.Method + " not allowed on " + r.URL.Path})
		return
	}
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/ui/assets/"):
		h.asset(w, r, strings.TrimPrefix(p, "/ui/assets/"))
	case strings.HasPrefix(p, "/ui/fragments/"):
		h.fragment(w, r, strings.TrimPrefix(p, "/ui/fragments/"))
	case strings.HasPrefix(p, "/ui/queues/") && len(p) > len("/ui/queues/"):
		h.shell(w, "queue", "/ui/fragments/queue?name="+url.QueryEscape(strings.TrimPrefix(p, "/ui/queues/")))
	default:
		page, ok := shellPages[p]
		if !ok {
			notFound(w)
			return
		}
		h.shell(w, page, "/ui/fragments/"+page)
	}
}

// notFound is the API's answer to a path it does not serve.
func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "Not Found", "code": "no_such_route"})
}

// securityHeaders are set on every answer: the pages load their script and style from
// this origin only, and are never framed.
func securityHeaders(w http.ResponseWriter) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
		"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"response encoding failed"}`)
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// navItem is one entry of the pages' navigation.
type navItem struct {
	Page, Href, Label string
}

var nav = []navItem{
	{"overview", "/", "Overview"}, {"queues", "/ui/queues", "Queues"}, {"groups", "/ui/groups", "Consumer groups"},
	{"messages", "/ui/messages", "Messages"}, {"dlq", "/ui/dlq", "Dead letters"}, {"traces", "/ui/traces", "Traces"},
	{"system", "/ui/system", "System"},
}

// shellData is what a shell shows: no data, only where its fragment comes from.
type shellData struct {
	Page, Title string
	Src         string // the fragment's URL; the script adds the page's own query
	RefreshMs   int64  // 0: no periodic refresh
	Nav         []navItem
	Version     string
}

var titles = map[string]string{
	"overview": "Overview", "queues": "Queues", "queue": "Queue", "groups": "Consumer groups",
	"messages": "Messages", "dlq": "Dead letters", "traces": "Traces", "system": "System",
}

// shell answers the page shell of page.
func (h *Handler) shell(w http.ResponseWriter, page, src string) {
	d := shellData{Page: page, Title: titles[page], Src: src, Nav: nav, Version: h.opts.Version}
	if page == "overview" {
		d.RefreshMs = h.opts.Refresh.Milliseconds()
	}
	h.render(w, http.StatusOK, "shell", d, "no-cache")
}

// render executes template name into a buffer first, so that a failure answers a clean
// 500 instead of half a page.
func (h *Handler) render(w http.ResponseWriter, code int, name string, data any, cache string) {
	var b strings.Builder
	if err := h.tpl.ExecuteTemplate(&b, name, data); err != nil {
		h.opts.Logger.Error("dashboard: template failed", "template", name, "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": http.StatusText(http.StatusInternalServerError)})
		return
	}
	securityHeaders(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", cache)
	hd.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}
