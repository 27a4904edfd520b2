package httpapi

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/gorilla/mux"

	"github.com/queen-go/queen/core/admin"
	"github.com/queen-go/queen/core/auth"
	"github.com/queen-go/queen/core/consume"
	"github.com/queen-go/queen/core/maintenance"
	"github.com/queen-go/queen/core/queues"
	"github.com/queen-go/queen/core/streams"
)

const testSecret = "httpapi-test-secret-of-32-bytes!"

// registeredRoutes walks the router with every service and option present (sub-routers
// included) and returns each route as "METHOD template", as routeLevels keys them.
func registeredRoutes(t *testing.T) []string {
	t.Helper()
	a := newAPI(Services{DB: pinger{}, Consume: &consume.Service{}, Queues: &queues.Service{}, Maintenance: &maintenance.Flags{},
		Resources: &admin.Resources{}, Groups: &admin.Groups{}, Messages: &admin.Messages{}, Traces: &admin.Traces{},
		Analytics: &admin.Analytics{},
		Streams:   &streams.Service{}},
		Options{Prometheus: http.NotFoundHandler(), OpenAPI: []byte("openapi: 3.1.0\n")})
	var out []string
	var walk func(r *mux.Router)
	walk = func(r *mux.Router) {
		err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
			if sub, ok := route.GetHandler().(*mux.Router); ok {
				walk(sub)
				return nil
			}
			tpl, err := route.GetPathTemplate()
			if err != nil {
				return err
			}
			methods, err := route.GetMethods()
			if err != nil {
				t.Errorf("route %s has no methods: its level could not be keyed", tpl)
				return nil
			}
			for _, m := range methods {
				out = append(out, m+" "+tpl)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk(a.routes())
	return out
}

// TestEveryRouteHasALevel: each route registered with every service present has its
// own row in routeLevels (a missing one would need ADMIN), and the table names no route
// that does not exist.
func TestEveryRouteHasALevel(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, key := range registeredRoutes(t) {
		seen[key] = true
		if _, ok := routeLevels[key]; !ok {
			t.Errorf("route %q has no access level in routeLevels", key)
		}
	}
	for key := range routeLevels {
		if !seen[key] {
			t.Errorf("routeLevels names %q, which is not a route", key)
		}
	}
}

func TestSkipped(t *testing.T) {
	t.Parallel()
	list := []string{"/health", "/metrics", "/", "/docs/", "/x"}
	tests := []struct {
		path string
		want bool
	}{
		{"/health", true}, {"/health/", false}, {"/healthz", false}, {"/", true}, {"/api/v1/push", false},
		{"/docs/", true}, {"/docs/a/b", true}, {"/docs", false}, {"/x", true}, {"/x/y", false}, {"", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			if got := skipped(list, tt.path); got != tt.want {
				t.Fatalf("skipped(%q) = %v", tt.path, got)
			}
		})
	}
}

// authRouter has routes with real templates and trivial handlers that answer the
// request's producerSub, including a mounted router as the consumer-groups routes are.
func authRouter() *mux.Router {
	echo := func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(producerSub(r))) }
	r := mux.NewRouter()
	r.HandleFunc("/health", echo).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/push", echo).Methods(http.MethodPost)
	r.HandleFunc("/api/v1/pop", echo).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/resources/queues", echo).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/dlq", echo).Methods(http.MethodDelete)
	r.HandleFunc("/api/v1/not-in-the-table", echo).Methods(http.MethodGet)
	g := mux.NewRouter()
	g.HandleFunc("/api/v1/consumer-groups/{group}", echo).Methods(http.MethodGet)
	g.HandleFunc("/api/v1/consumer-groups/{group}", echo).Methods(http.MethodDelete)
	g.HandleFunc("/api/v1/consumer-groups/{group}/subscription", echo).Methods(http.MethodPost)
	r.PathPrefix("/api/v1/consumer-groups").Handler(g)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) })
	return r
}

func hsToken(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	if _, ok := c["exp"]; !ok {
		c["exp"] = time.Now().Add(time.Hour).Unix()
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGuard(t *testing.T) {
	t.Parallel()
	hs, err := auth.New(auth.Options{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(edPriv.Public())
	noSecret, err := auth.New(auth.Options{Algorithm: "auto", PublicKey: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))})
	if err != nil {
		t.Fatal(err)
	}
	tok := func(role string) string { return "Bearer " + hsToken(t, jwt.MapClaims{"sub": "alice", "role": role}) }
	tests := []struct {
		name, method, path, header string
		verifier                   *auth.Verifier
		code                       int
		body                       string // exact, when set
	}{
		{name: "public route without a token", method: "GET", path: "/health", code: 200},
		{name: "skip list, exact", method: "GET", path: "/", code: 404},
		{name: "skip list, prefix", method: "POST", path: "/docs/api/v1/push", code: 404},
		{name: "no token", method: "POST", path: "/api/v1/push", code: 401, body: `{"error":"Authentication required"}`},
		{name: "empty bearer", method: "POST", path: "/api/v1/push", header: "Bearer ", code: 401, body: `{"error":"Authentication required"}`},
		{name: "basic", method: "POST", path: "/api/v1/push", header: "Basic YWxpY2U6cHc=", code: 401, body: `{"error":"Authentication required"}`},
		{name: "garbage", method: "POST", path: "/api/v1/push", header: "Bearer garbage", code: 401, body: `{"error":"Bad token header"}`},
		{name: "write-only pushes, stamped", method: "POST", path: "/api/v1/push", header: tok("write-only"), code: 200, body: "alice"},
		{name: "bare token", method: "POST", path: "/api/v1/push", header: strings.TrimPrefix(tok("write-only"), "Bearer "), code: 200, body: "alice"},
		{name: "read-only cannot push", method: "POST", path: "/api/v1/push", header: tok("read-only"), code: 403,
			body: `{"error":"Insufficient permissions"}`},
		{name: "write-only cannot pop", method: "GET", path: "/api/v1/pop", header: tok("write-only"), code: 403},
		{name: "write-only cannot read", method: "GET", path: "/api/v1/resources/queues", header: tok("write-only"), code: 403},
		{name: "read-only reads", method: "GET", path: "/api/v1/resources/queues", header: tok("read-only"), code: 200},
		{name: "no role", method: "GET", path: "/api/v1/resources/queues", header: tok(""), code: 403},
		{name: "read-write cannot purge", method: "DELETE", path: "/api/v1/dlq", header: tok("read-write"), code: 403},
		{name: "admin purges", method: "DELETE", path: "/api/v1/dlq", header: tok("admin"), code: 200, body: "alice"},
		{name: "mounted router: read", method: "GET", path: "/api/v1/consumer-groups/g", header: tok("read-only"), code: 200},
		{name: "mounted router: read-write route", method: "POST", path: "/api/v1/consumer-groups/g/subscription", header: tok("read-write"), code: 200},
		{name: "mounted router: delete needs admin", method: "DELETE", path: "/api/v1/consumer-groups/g", header: tok("read-write"), code: 403},
		{name: "route missing from the table needs admin", method: "GET", path: "/api/v1/not-in-the-table", header: tok("read-write"), code: 403},
		{name: "route missing from the table, admin", method: "GET", path: "/api/v1/not-in-the-table", header: tok("admin"), code: 200},
		{name: "unknown route without a token", method: "GET", path: "/api/v1/nope", code: 401},
		{name: "unknown route with a token", method: "GET", path: "/api/v1/nope", header: tok("read-write"), code: 404},
		{name: "HS token, no secret", method: "POST", path: "/api/v1/push", header: tok("admin"), verifier: noSecret, code: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := hs
			if tt.verifier != nil {
				v = tt.verifier
			}
			a := newAPI(Services{}, Options{Auth: v, SkipPaths: []string{"/", "/docs/"}, Logger: slog.New(slog.DiscardHandler)})
			root := authRouter()
			root.Use(markRoute) // as observe does: mounted routers must still be found under middleware
			h := a.guard(root)
			req := httptest.NewRequest(tt.method, tt.path, nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("status %d, want %d (body %s)", rec.Code, tt.code, rec.Body)
			}
			if tt.body != "" && rec.Body.String() != tt.body {
				t.Fatalf("body %s, want %s", rec.Body, tt.body)
			}
			if got := rec.Header().Get("WWW-Authenticate"); (tt.code == 401) != (got == "Bearer") {
				t.Fatalf("WWW-Authenticate %q with status %d", got, tt.code)
			}
		})
	}
}

// TestGuardLogsNoToken: refused and accepted tokens alike stay out of the logs, even at
// debug level.
func TestGuardLogsNoToken(t *testing.T) {
	t.Parallel()
	v, err := auth.New(auth.Options{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	a := newAPI(Services{}, Options{Auth: v, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h := a.guard(authRouter())
	good := hsToken(t, jwt.MapClaims{"sub": "alice", "role": "admin"})
	expired := hsToken(t, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(-time.Hour).Unix()})
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + parts[1] + "x." + parts[2]
	for _, token := range []string{good, expired, tampered, "garbage-token-value"} {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/push", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(httptest.NewRecorder(), req)
		for _, part := range append(strings.Split(token, "."), token) {
			if len(part) > 8 && strings.Contains(logs.String(), part) {
				t.Fatalf("the logs contain part of a token:\n%s", logs.String())
			}
		}
	}
	if !strings.Contains(logs.String(), "Token has expired") {
		t.Fatalf("the refusals are not logged at debug level:\n%s", logs.String())
	}
}

// TestAuthStatuses: the one error table maps every auth outcome.
func TestAuthStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		code int
	}{
		{auth.ErrNoToken, 401}, {&auth.Error{Kind: auth.ErrExpired, Cause: errors.New("x")}, 401}, {auth.ErrUnknownKID, 401},
		{auth.ErrForbidden, 403}, {auth.ErrNoSecret, 500}, {&auth.Error{Kind: auth.ErrKeysUnavailable}, 503},
	}
	for _, tt := range tests {
		if got := statusOf(tt.err); got != tt.code {
			t.Errorf("statusOf(%v) = %d, want %d", tt.err, got, tt.code)
		}
	}
	rec := httptest.NewRecorder()
	writeError(rec, slog.New(slog.DiscardHandler), &auth.Error{Kind: auth.ErrBadSignature, Cause: errors.New("crypto/rsa: verification error")})
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "Invalid token signature" || len(body) != 1 {
		t.Fatalf("body %s", rec.Body)
	}
}
