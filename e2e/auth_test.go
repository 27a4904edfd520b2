package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queen-go/queen/adapters/pglocal/pgtest"
	"github.com/queen-go/queen/internal/syncbuf"
)

// The security table of docs/api.md §3 (and of the brief that made JWT_EXP required), run
// over real HTTP against two brokers: one checking HS256 tokens with a secret, one
// checking RS256 tokens with the keys of a JWKS served by an httptest server. Tokens are
// built here from the standard library (RFC 7515/7519), not with the JWT library the
// broker uses, so the broker is checked against the standard.

const (
	authIssuer   = "queen-e2e-idp"
	authAudience = "queen-e2e"
	authSecret   = "e2e-hs256-secret-that-is-well-over-32-bytes"
	authKid      = "k1"
)

// authRSA is the JWKS configuration's signing key (generated once: it takes a while).
var authRSA = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

func b64JSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// signJWT builds a compact JWS: HS256 with a []byte key, RS256 with an *rsa.PrivateKey,
// and an empty signature for any other alg (none, in its casings).
func signJWT(t testing.TB, header, claims map[string]any, key any) string {
	t.Helper()
	input := b64JSON(t, header) + "." + b64JSON(t, claims)
	var sig []byte
	switch header["alg"] {
	case "HS256":
		mac := hmac.New(sha256.New, key.([]byte))
		mac.Write([]byte(input))
		sig = mac.Sum(nil)
	case "RS256":
		sum := sha256.Sum256([]byte(input))
		var err error
		if sig, err = rsa.SignPKCS1v15(rand.Reader, key.(*rsa.PrivateKey), crypto.SHA256, sum[:]); err != nil {
			t.Fatal(err)
		}
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// jwksServer serves one RSA public key as a JWKS and counts its hits.
type jwksServer struct {
	*httptest.Server
	hits atomic.Int64
}

func newJWKSServer(t *testing.T, pub *rsa.PublicKey, kid string) *jwksServer {
	t.Helper()
	body := mustJSON(t, map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
	s := &jwksServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// authFixture is one configuration's broker, how its tokens are signed, and every
// token sent to it (none may appear in its logs).
type authFixture struct {
	kind     string // "hs" or "jwks"
	b        *broker
	logs     *syncbuf.Buffer
	jwks     *jwksServer // nil for "hs"
	queue    string      // pushed to by the rows
	delQueue string      // deleted by the admin row, with its consumer group g
	subQueue string      // the producerSub row's

	mu     sync.Mutex
	tokens []string
}

func newAuthFixture(t *testing.T, kind string) *authFixture {
	t.Helper()
	f := &authFixture{kind: kind, logs: &syncbuf.Buffer{}, queue: "auth-" + kind, delQueue: "auth-del-" + kind, subQueue: "auth-sub-" + kind}
	env := map[string]string{"JWT_ENABLED": "true", "JWT_ISSUER": authIssuer, "JWT_AUDIENCE": authAudience, "LOG_LEVEL": "debug"}
	if kind == "hs" {
		env["JWT_SECRET"] = authSecret
	} else {
		f.jwks = newJWKSServer(t, &authRSA().PublicKey, authKid)
		env["JWT_ALGORITHM"], env["JWT_JWKS_URL"] = "RS256", f.jwks.URL
	}
	b, err := launchBroker(t, pgtest.NewDatabase(t), env, f.logs)
	if err != nil {
		t.Fatal(err)
	}
	f.b = b
	admin := f.bearer(t, "admin")
	for _, q := range []string{f.queue, f.delQueue} {
		if code, _, raw := f.call(t, "POST", "/api/v1/push", admin, pushOne(q, "")); code != http.StatusCreated {
			t.Fatalf("setup push to %s: %d %s", q, code, raw)
		}
	}
	if code, _, raw := f.call(t, "GET", "/api/v1/pop/queue/"+f.delQueue+"?consumerGroup=g&wait=false", admin, ""); code != http.StatusOK {
		t.Fatalf("setup pop of %s: %d %s", f.delQueue, code, raw)
	}
	return f
}

// claims are valid for an hour: alice with role (no role claim when role is "").
func authClaims(role string) map[string]any {
	now := time.Now()
	c := map[string]any{"sub": "alice", "iss": authIssuer, "aud": authAudience, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	if role != "" {
		c["role"] = role
	}
	return c
}

// token signs claims as this configuration's identity provider does, after mod.
func (f *authFixture) token(t testing.TB, claims map[string]any, mod func(header, claims map[string]any)) string {
	t.Helper()
	header := map[string]any{"alg": "HS256", "typ": "JWT"}
	var key any = []byte(authSecret)
	if f.kind == "jwks" {
		header["alg"], header["kid"], key = "RS256", authKid, authRSA()
	}
	if mod != nil {
		mod(header, claims)
	}
	return signJWT(t, header, claims, key)
}

// bearer is a valid "Bearer <jwt>" of alice with role.
func (f *authFixture) bearer(t testing.TB, role string) string {
	return "Bearer " + f.token(t, authClaims(role), nil)
}

// call sends one request and remembers its token.
func (f *authFixture) call(t testing.TB, method, path, authorization, body string) (int, http.Header, []byte) {
	t.Helper()
	f.mu.Lock()
	f.tokens = append(f.tokens, authorization)
	f.mu.Unlock()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	resp, raw, err := f.b.requestAuth(reportingTo(context.Background(), t), method, path, authorization, rd)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, resp.Header, raw
}

// pushOne is a push body of one item, with a producerSub field when sub is set (which
// the broker must ignore).
func pushOne(queue, sub string) string {
	it := map[string]any{"queue": queue, "payload": map[string]any{"n": 1}}
	if sub != "" {
		it["producerSub"] = sub
	}
	b, _ := json.Marshal(map[string]any{"items": []any{it}})
	return string(b)
}

// authReq is one request of a row; want 0 takes the row's status.
type authReq struct {
	method, path, authorization, body string
	want                              int
}

// routes are requests to every kind of protected route, with authorization.
func (f *authFixture) routes(authorization string, kinds ...string) []authReq {
	all := map[string]authReq{
		"push":            {method: "POST", path: "/api/v1/push", body: pushOne(f.queue, "")},
		"pop":             {method: "GET", path: "/api/v1/pop/queue/" + f.queue + "?wait=false"},
		"ack":             {method: "POST", path: "/api/v1/ack", body: `{"transactionId":"t","partitionId":"00000000-0000-0000-0000-000000000000","leaseId":"00000000-0000-0000-0000-000000000000","status":"completed"}`},
		"transaction":     {method: "POST", path: "/api/v1/transaction", body: `{"operations":[{"type":"push","queue":"` + f.queue + `","payload":{}}]}`},
		"resources":       {method: "GET", path: "/api/v1/resources/queues"},
		"status":          {method: "GET", path: "/api/v1/status"},
		"configure":       {method: "POST", path: "/api/v1/configure", body: `{"queue":"` + f.queue + `","options":{}}`},
		"delete queue":    {method: "DELETE", path: "/api/v1/resources/queues/" + f.delQueue},
		"delete group":    {method: "DELETE", path: "/api/v1/consumer-groups/g"},
		"purge dlq":       {method: "DELETE", path: "/api/v1/dlq?queue=" + f.delQueue},
		"maintenance":     {method: "GET", path: "/api/v1/system/maintenance"},
		"set maintenance": {method: "POST", path: "/api/v1/system/maintenance", body: `{"enabled":false}`},
		"shared state":    {method: "GET", path: "/api/v1/system/shared-state"},
	}
	var out []authReq
	for _, k := range kinds {
		r, ok := all[k]
		if !ok {
			panic("no route kind " + k)
		}
		r.authorization = authorization
		out = append(out, r)
	}
	return out
}

var everyProtectedRoute = []string{"push", "pop", "ack", "transaction", "resources", "status", "configure", "delete queue",
	"delete group", "purge dlq", "maintenance", "set maintenance", "shared state"}

// authCase is a row of the security table: its requests all answer want (unless a
// request says otherwise), with the error text msg when set; then runs further checks.
type authCase struct {
	name string
	only string // "hs" or "jwks": the one configuration the row applies to
	reqs func(t *testing.T, f *authFixture) []authReq
	want int
	msg  string
	then func(t *testing.T, f *authFixture)
}

// read is a request to a READ_ONLY route with authorization.
func read(authorization string) []authReq {
	return []authReq{{method: "GET", path: "/api/v1/resources/queues", authorization: authorization}}
}

var authCases = []authCase{
	{name: "no Authorization header on a protected route", want: 401, msg: "Authentication required",
		reqs: func(t *testing.T, f *authFixture) []authReq { return f.routes("", "resources", "push", "delete queue") }},
	{name: "empty bearer token", want: 401, msg: "Authentication required",
		reqs: func(t *testing.T, f *authFixture) []authReq { return read("Bearer ") }},
	{name: "Basic credentials", want: 401, msg: "Authentication required",
		reqs: func(t *testing.T, f *authFixture) []authReq { return read("Basic YWxpY2U6c2VjcmV0") }},
	{name: "garbage", want: 401, msg: "Bad token header",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return append(read("Bearer garbage"), read("not.a.token")...)
		}},
	{name: "expired beyond the skew", want: 401, msg: "Token has expired",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			c := authClaims("admin")
			c["exp"] = time.Now().Add(-2 * time.Minute).Unix()
			return read("Bearer " + f.token(t, c, nil))
		}},
	{name: "expired inside the skew", want: 200,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			c := authClaims("admin")
			c["exp"] = time.Now().Add(-10 * time.Second).Unix()
			return read("Bearer " + f.token(t, c, nil))
		}},
	{name: "nbf in the future beyond the skew", want: 401, msg: "Token not yet valid",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			c := authClaims("admin")
			c["nbf"] = time.Now().Add(2 * time.Minute).Unix()
			return read("Bearer " + f.token(t, c, nil))
		}},
	{name: "exp missing", want: 401,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			c := authClaims("admin")
			delete(c, "exp")
			return read("Bearer " + f.token(t, c, nil))
		}},
	{name: "payload changed, signature kept", want: 401, msg: "Invalid token signature",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			parts := strings.Split(f.token(t, authClaims("read-only"), nil), ".")
			c := authClaims("admin") // promoted
			parts[1] = b64JSON(t, c)
			return read("Bearer " + strings.Join(parts, "."))
		}},
	{name: "alg none in any casing", want: 401, msg: "Unsupported token algorithm",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			var out []authReq
			for _, alg := range []string{"none", "None", "NONE", "nOnE"} {
				out = append(out, read("Bearer "+f.token(t, authClaims("admin"), func(h, _ map[string]any) { h["alg"] = alg }))...)
			}
			return out
		}},
	{name: "HS256 signed with the public key as HMAC secret", only: "jwks", want: 401, msg: "Unsupported token algorithm",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			der, err := x509.MarshalPKIXPublicKey(&authRSA().PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
			var out []authReq
			for _, key := range [][]byte{pemKey, der} {
				tok := signJWT(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": authKid}, authClaims("admin"), key)
				out = append(out, read("Bearer "+tok)...)
			}
			return out
		}},
	{name: "RS256 token on an HS256 server", only: "hs", want: 401, msg: "Unsupported token algorithm",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return read("Bearer " + signJWT(t, map[string]any{"alg": "RS256", "typ": "JWT"}, authClaims("admin"), authRSA()))
		}},
	{name: "wrong issuer", want: 401, msg: "Invalid token issuer",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			c := authClaims("admin")
			c["iss"] = "someone-else"
			return read("Bearer " + f.token(t, c, nil))
		}},
	{name: "wrong audience", want: 401, msg: "Invalid token audience",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			c := authClaims("admin")
			c["aud"] = []string{"another-service"}
			return read("Bearer " + f.token(t, c, nil))
		}},
	{name: "audience in an array", want: 200,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			c := authClaims("admin")
			c["aud"] = []string{"another-service", authAudience}
			return read("Bearer " + f.token(t, c, nil))
		}},
	{name: "unknown kid, 1,000 requests", only: "jwks", want: 401, msg: "Unknown key ID",
		reqs: func(t *testing.T, f *authFixture) []authReq {
			// The kid is looked up before the signature is checked: one signature serves.
			sig := strings.Split(f.token(t, authClaims("admin"), nil), ".")[2]
			payload := b64JSON(t, authClaims("admin"))
			out := make([]authReq, 1000)
			for i := range out {
				h := b64JSON(t, map[string]any{"alg": "RS256", "typ": "JWT", "kid": fmt.Sprintf("invented-%d", i)})
				out[i] = read("Bearer " + h + "." + payload + "." + sig)[0]
			}
			f.jwks.hits.Store(0)
			return out
		},
		then: func(t *testing.T, f *authFixture) {
			// One re-fetch per 5 s at most: the 1,000 requests take a second or two.
			if n := f.jwks.hits.Load(); n > 3 {
				t.Fatalf("%d JWKS fetches for 1,000 unknown kids", n)
			}
			if code, _, raw := f.call(t, "GET", "/api/v1/resources/queues", f.bearer(t, "read-only"), ""); code != 200 {
				t.Fatalf("the known kid after the flood: %d %s", code, raw)
			}
		}},
	{name: "no role claim", want: 403, msg: "Insufficient permissions",
		reqs: func(t *testing.T, f *authFixture) []authReq { return f.routes(f.bearer(t, ""), everyProtectedRoute...) }},
	{name: "unknown role", want: 403,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return f.routes(f.bearer(t, "superuser"), everyProtectedRoute...)
		}},
	{name: "write-only token on pop, ack, transaction, resources", want: 403,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return f.routes(f.bearer(t, "write-only"), "pop", "ack", "transaction", "resources", "status")
		}},
	{name: "write-only token pushes", want: 201,
		reqs: func(t *testing.T, f *authFixture) []authReq { return f.routes(f.bearer(t, "write-only"), "push") }},
	{name: "read-only token on push, queue deletion, maintenance", want: 403,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return f.routes(f.bearer(t, "read-only"), "push", "transaction", "pop", "delete queue", "maintenance", "set maintenance")
		}},
	{name: "read-only token reads", want: 200,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return f.routes(f.bearer(t, "read-only"), "resources", "status")
		}},
	{name: "read-write token on system routes and deletions", want: 403,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return f.routes(f.bearer(t, "read-write"), "maintenance", "set maintenance", "shared state", "delete group",
				"purge dlq", "delete queue")
		}},
	{name: "admin token on system routes and deletions", want: 200,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			return f.routes(f.bearer(t, "admin"), "maintenance", "set maintenance", "shared state", "delete group",
				"purge dlq", "delete queue")
		}},
	{name: "producerSub in the body with a token whose sub is alice", want: 201,
		reqs: func(t *testing.T, f *authFixture) []authReq {
			rw := f.bearer(t, "read-write")
			return []authReq{
				{method: "POST", path: "/api/v1/push", authorization: rw, body: pushOne(f.subQueue, "mallory")},
				{method: "POST", path: "/api/v1/transaction", authorization: rw, want: 200,
					body: `{"operations":[{"type":"push","queue":"` + f.subQueue + `","payload":{"n":2},"producerSub":"mallory"}]}`},
			}
		},
		then: func(t *testing.T, f *authFixture) {
			code, _, raw := f.call(t, "GET", "/api/v1/pop/queue/"+f.subQueue+"?batch=10&wait=false", f.bearer(t, "read-write"), "")
			p, err := decodePop(code, raw)
			if err != nil || p == nil || len(p.Messages) != 2 {
				t.Fatalf("pop: %v %+v", err, p)
			}
			for _, m := range p.Messages {
				if m.ProducerSub == nil || *m.ProducerSub != "alice" {
					t.Fatalf("message %s: producerSub %v, want alice", m.TransactionID, m.ProducerSub)
				}
			}
		}},
	{name: "Authorization header of 2 MiB", want: 431,
		reqs: func(*testing.T, *authFixture) []authReq { return nil },
		then: func(t *testing.T, f *authFixture) {
			if code := hugeHeader(t, f.b, 2<<20); code != 431 {
				t.Fatalf("status %d, want 431", code)
			}
			if code, _, raw := f.call(t, "GET", "/api/v1/resources/queues", f.bearer(t, "admin"), ""); code != 200 {
				t.Fatalf("after the huge header: %d %s", code, raw)
			}
		}},
	// Last: every token the rows above sent.
	{name: "token in logs", want: 0,
		reqs: func(*testing.T, *authFixture) []authReq { return nil },
		then: func(t *testing.T, f *authFixture) {
			logs := f.logs.String()
			if !strings.Contains(logs, "Token has expired") {
				t.Fatalf("the broker's refusals are not in the captured logs (LOG_LEVEL=debug)")
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, a := range f.tokens {
				tok := strings.TrimSpace(strings.TrimPrefix(a, "Bearer "))
				for _, part := range append(strings.Split(tok, "."), tok) {
					// Segments of a dozen characters could occur by chance; the header
					// segment is the same for many tokens but still never logged.
					if len(part) >= 16 && strings.Contains(logs, part) {
						t.Fatalf("a log line contains part of a token (%q...)", part[:16])
					}
				}
			}
		}},
}

// hugeHeader sends a GET with an Authorization header of n bytes over a raw
// connection (the server answers before reading it all, and closes) and returns the
// status of the answer.
func hugeHeader(t *testing.T, b *broker, n int) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		w := bufio.NewWriter(conn)
		fmt.Fprintf(w, "GET /api/v1/resources/queues HTTP/1.1\r\nHost: queen\r\nAuthorization: Bearer ")
		w.Write(bytes.Repeat([]byte("a"), n))
		fmt.Fprintf(w, "\r\n\r\n")
		_ = w.Flush() // fails once the server has answered and closed: expected
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	resp.Body.Close()
	conn.Close()
	<-written
	return resp.StatusCode
}

func TestAuthSecurityTable(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"hs", "jwks"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := newAuthFixture(t, kind)
			for _, tc := range authCases {
				t.Run(tc.name, func(t *testing.T) {
					if tc.only != "" && tc.only != kind {
						t.Skipf("applies to the %s configuration", tc.only)
					}
					for _, r := range tc.reqs(t, f) {
						want := tc.want
						if r.want != 0 {
							want = r.want
						}
						code, hdr, raw := f.call(t, r.method, r.path, r.authorization, r.body)
						if code != want {
							t.Fatalf("%s %s: status %d, want %d; body %s", r.method, r.path, code, want, raw)
						}
						if code == 401 && hdr.Get("WWW-Authenticate") != "Bearer" {
							t.Fatalf("%s %s: 401 with WWW-Authenticate %q", r.method, r.path, hdr.Get("WWW-Authenticate"))
						}
						if tc.msg != "" {
							var e struct{ Error string }
							if err := json.Unmarshal(raw, &e); err != nil || e.Error != tc.msg {
								t.Fatalf("%s %s: body %s, want {\"error\":%q}", r.method, r.path, raw, tc.msg)
							}
						}
					}
					if tc.then != nil {
						tc.then(t, f)
					}
				})
			}
		})
	}
}

// TestAuthStartup: what the broker does at start with authentication misconfigured, weak
// or off.
func TestAuthStartup(t *testing.T) {
	t.Parallel()
	t.Run("auth on without key material refuses to start", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDatabase(t)
		for _, tt := range []struct {
			env  map[string]string
			want string
		}{
			{map[string]string{"JWT_ENABLED": "true"}, "want JWT_SECRET"},
			{map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256"}, "want JWT_PUBLIC_KEY or JWT_JWKS_URL"},
			{map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "RS256", "JWT_PUBLIC_KEY": "not a PEM key"}, "no PEM block"},
		} {
			b, err := launchBroker(t, db, tt.env, io.Discard)
			if err == nil {
				t.Fatalf("%v: the broker started at %s", tt.env, b.URL)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v: %v, want %q", tt.env, err, tt.want)
			}
		}
	})
	t.Run("HS256 secret shorter than 32 bytes starts with a warning", func(t *testing.T) {
		t.Parallel()
		const short = "short-secret"
		logs := &syncbuf.Buffer{}
		b, err := launchBroker(t, pgtest.NewDatabase(t), map[string]string{"JWT_ENABLED": "true", "JWT_SECRET": short}, logs)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(logs.String(), "JWT_SECRET is shorter than 32 bytes"); n != 1 {
			t.Fatalf("%d warnings about the short secret in:\n%s", n, logs)
		}
		c := authClaims("write-only")
		delete(c, "iss")
		delete(c, "aud")
		tok := signJWT(t, map[string]any{"alg": "HS256", "typ": "JWT"}, c, []byte(short))
		resp, raw, err := b.requestAuth(context.Background(), "POST", "/api/v1/push", "Bearer "+tok, strings.NewReader(pushOne("short", "")))
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("push with the short secret's token: %v %v %s", err, resp, raw)
		}
	})
	t.Run("auth off: one warning at start, producerSub null unless given", func(t *testing.T) {
		t.Parallel()
		logs := &syncbuf.Buffer{}
		b, err := launchBroker(t, pgtest.NewDatabase(t), nil, logs)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(logs.String(), "authentication is off"); n != 1 {
			t.Fatalf("%d warnings that authentication is off in:\n%s", n, logs)
		}
		// The push path takes no producerSub from a body: messages carry none.
		if code, raw := b.post(t, "/api/v1/push", pushOne("open", "mallory")); code != 201 {
			t.Fatalf("push without a token: %d %s", code, raw)
		}
		p := b.pop(t, "/api/v1/pop/queue/open?wait=false")
		if p == nil || len(p.Messages) != 1 || p.Messages[0].ProducerSub != nil {
			t.Fatalf("pop: %+v", p)
		}
	})
}
