package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/auth"
)

// MaxHeaderBytes bounds a request's header block (docs/reliability.md bad input #28: about 64 KiB;
// net/http allows 4 KiB more): a bigger one, such as a 2 MiB Authorization header, is
// answered 431 by net/http itself before any handler or token parsing runs.
const MaxHeaderBytes = 64 << 10

// routeLevels is the access level of every route, by method and path template as
// registered (docs/api.md §3's route table; core/auth says which roles each level admits).
// A route missing here needs ADMIN (levelOf): adding a route without deciding its
// level locks it down instead of opening it, and a test fails.
var routeLevels = map[string]auth.Level{
	"GET /health":  auth.Public,
	"GET /ready":   auth.Public,
	"GET /live":    auth.Public,
	"HEAD /health": auth.Public,
	// CORS preflights of the streams routes (streams.go): browsers send no credentials.
	"OPTIONS /streams/v1/queries":   auth.Public,
	"OPTIONS /streams/v1/state/get": auth.Public,
	"OPTIONS /streams/v1/cycle":     auth.Public,
	"HEAD /ready":                   auth.Public,
	"HEAD /live":                    auth.Public,
	"GET /metrics":                  auth.Public,
	"GET /metrics/prometheus":       auth.Public,
	"GET /openapi.yaml":             auth.Public,

	// The only route a write-only token can call.
	"POST /api/v1/push": auth.WriteOnly,

	// Consuming, and changes short of deleting.
	"GET /api/v1/pop/queue/{queue}/partition/{partition}":      auth.ReadWrite,
	"GET /api/v1/pop/queue/{queue}":                            auth.ReadWrite,
	"GET /api/v1/pop":                                          auth.ReadWrite,
	"POST /api/v1/ack":                                         auth.ReadWrite,
	"POST /api/v1/ack/batch":                                   auth.ReadWrite,
	"POST /api/v1/lease/{leaseId}/extend":                      auth.ReadWrite,
	"POST /api/v1/transaction":                                 auth.ReadWrite, // pushes and acks
	"POST /streams/v1/queries":                                 auth.ReadWrite, // registers (and may reset) a query
	"POST /streams/v1/cycle":                                   auth.ReadWrite, // state, sink pushes and the source ack
	"POST /api/v1/configure":                                   auth.ReadWrite,
	"POST /api/v1/consumer-groups/{group}/subscription":        auth.ReadWrite,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/seek": auth.ReadWrite,
	"POST /api/v1/consumer-groups/{group}/queues/{queue}/partitions/{partition}/seek": auth.ReadWrite,
	"POST /api/v1/messages/{partitionId}/{transactionId:.+}/retry":                    auth.ReadWrite,
	"DELETE /api/v1/messages/{partitionId}/{transactionId:.+}":                        auth.ReadWrite,
	"POST /api/v1/dlq/{id}/replay":                                                    auth.ReadWrite,
	"POST /api/v1/traces":                                                             auth.ReadWrite,

	// System routes and deletions.
	"GET /api/v1/system/shared-state":                       auth.Admin,
	"GET /api/v1/system/maintenance":                        auth.Admin,
	"POST /api/v1/system/maintenance":                       auth.Admin,
	"GET /api/v1/system/maintenance/pop":                    auth.Admin,
	"POST /api/v1/system/maintenance/pop":                   auth.Admin,
	"DELETE /api/v1/resources/queues/{queue:.+}":            auth.Admin,
	"DELETE /api/v1/dlq":                                    auth.Admin,
	"DELETE /api/v1/consumer-groups/{group}":                auth.Admin,
	"DELETE /api/v1/consumer-groups/{group}/queues/{queue}": auth.Admin,
	"POST /api/v1/stats/refresh":                            auth.Admin,
	"GET /api/v1/migration/{action:.+}":                     auth.Admin, // refused with 501 (system.go)
	"POST /api/v1/migration/{action:.+}":                    auth.Admin,
	"PUT /api/v1/migration/{action:.+}":                     auth.Admin,
	"PATCH /api/v1/migration/{action:.+}":                   auth.Admin,
	"DELETE /api/v1/migration/{action:.+}":                  auth.Admin,

	// Reads.
	"GET /status":                                           auth.ReadOnly,
	"POST /streams/v1/state/get":                            auth.ReadOnly, // a read, although a POST
	"GET /api/v1/status":                                    auth.ReadOnly,
	"GET /api/v1/status/queues":                             auth.ReadOnly,
	"GET /api/v1/status/queues/{queue:.+}":                  auth.ReadOnly,
	"GET /api/v1/status/buffers":                            auth.ReadOnly,
	"GET /api/v1/resources/queues":                          auth.ReadOnly,
	"GET /api/v1/resources/overview":                        auth.ReadOnly,
	"GET /api/v1/resources/namespaces":                      auth.ReadOnly,
	"GET /api/v1/resources/tasks":                           auth.ReadOnly,
	"GET /api/v1/resources/queues/{queue:.+}":               auth.ReadOnly,
	"GET /api/v1/resources/queues/{queue:.+}/depth":         auth.ReadOnly,
	"GET /api/v1/dlq":                                       auth.ReadOnly,
	"GET /api/v1/consumer-groups":                           auth.ReadOnly,
	"GET /api/v1/consumer-groups/lagging":                   auth.ReadOnly,
	"GET /api/v1/consumer-groups/{group}":                   auth.ReadOnly,
	"GET /api/v1/messages":                                  auth.ReadOnly,
	"GET /api/v1/messages/{partitionId}/{transactionId:.+}": auth.ReadOnly,
	"GET /api/v1/traces/names":                              auth.ReadOnly,
	"GET /api/v1/traces/by-name/{traceName:.+}":             auth.ReadOnly,
	"GET /api/v1/traces/{partitionId}/{transactionId:.+}":   auth.ReadOnly,
	"GET /api/v1/status/analytics":                          auth.ReadOnly,
	"GET /api/v1/analytics/queue-ops":                       auth.ReadOnly,
	"GET /api/v1/analytics/queue-lag":                       auth.ReadOnly,
	"GET /api/v1/analytics/queue-parked-replicas":           auth.ReadOnly,
	"GET /api/v1/analytics/retention":                       auth.ReadOnly,
	"GET /api/v1/analytics/system-metrics":                  auth.ReadOnly,
	"GET /api/v1/analytics/worker-metrics":                  auth.ReadOnly,
	"GET /api/v1/analytics/postgres-stats":                  auth.ReadOnly,
}

// unmatchedLevel is the level of a request no route takes (answered 404 or 405): docs/api.md's
// "everything else", so that without a token the API's shape is not revealed.
const unmatchedLevel = auth.ReadWrite

// guard puts authentication in front of root: JWT_SKIP_PATHS and public routes pass,
// every other request needs a valid token whose roles admit the route's level, and
// reaches the routes with its principal in the context. Without a verifier it is root.
func (a *api) guard(root *mux.Router) http.Handler {
	v := a.opts.Auth
	if v == nil {
		return root
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if skipped(a.opts.SkipPaths, r.URL.Path) {
			root.ServeHTTP(w, r)
			return
		}
		level := a.levelOf(root, r)
		if level == auth.Public {
			root.ServeHTTP(w, r)
			return
		}
		token, ok := auth.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			writeError(w, a.opts.Logger, auth.ErrNoToken)
			return
		}
		p, err := v.Verify(r.Context(), token)
		if err != nil {
			// The reason and its cause, never the token.
			var ae *auth.Error
			if errors.As(err, &ae) {
				a.opts.Logger.Debug("auth: token refused", "method", r.Method, "path", r.URL.Path, "reason", ae.Detail())
			}
			writeError(w, a.opts.Logger, err)
			return
		}
		if !p.May(level) {
			writeError(w, a.opts.Logger, auth.ErrForbidden)
			return
		}
		root.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// levelOf is the level of the route router gives r, through routers mounted on it (the
// consumer-groups routes); unmatchedLevel when none takes it, ADMIN when the route is
// missing from routeLevels.
func (a *api) levelOf(router *mux.Router, r *http.Request) auth.Level {
	var m mux.RouteMatch
	if !router.Match(r, &m) || m.MatchErr != nil || m.Route == nil {
		return unmatchedLevel
	}
	// The route's own handler: m.Handler is wrapped in the router's middleware.
	if sub, ok := m.Route.GetHandler().(*mux.Router); ok {
		return a.levelOf(sub, r)
	}
	tpl, err := m.Route.GetPathTemplate()
	if err != nil {
		return auth.Admin
	}
	if l, ok := routeLevels[r.Method+" "+tpl]; ok {
		return l
	}
	for _, u := range a.opts.UIRoutes {
		if u.Method == r.Method && u.Path == tpl {
			return u.Level
		}
	}
	return auth.Admin
}

// skipped reports whether path is in the skip list: equal to an entry, or under an
// entry longer than "/" that ends in "/" ("/" itself skips only "/").
func skipped(list []string, path string) bool {
	for _, p := range list {
		if path == p || (len(p) > 1 && strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) {
			return true
		}
	}
	return false
}

// producerSub is the subject of the request's token, stamped on every message the
// request writes (docs/api.md §3); "" (null on pop) when authentication is off or the token
// has no sub. A producerSub in a request body is never read.
func producerSub(r *http.Request) string {
	p, _ := auth.FromContext(r.Context())
	return p.Subject
}
