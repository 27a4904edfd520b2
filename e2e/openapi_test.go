package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/queen-go/queen"
	"github.com/queen-go/queen/adapters/pglocal/pgtest"
)

// The OpenAPI check: every request the harness sends (broker.requestAuth, so
// do, get, post and request too) and every answer it gets are validated against the
// document the broker embeds and serves (docs/openapi.yaml). A request the test means to
// be invalid (the bad-input table, malformed bodies, wrong methods) is marked with
// badInput or sent with doBad: its request is not checked, its answer still is, since a
// refusal must have the documented shape. Raw connections (biRaw, hugeHeader) speak
// below the harness and are not checked.

// openAPI is the validator, built once per process: parsing the document and compiling
// its schemas takes far longer than checking an exchange.
var openAPI struct {
	once sync.Once
	c    *apiChecker
	err  error
}

// apiChecker checks exchanges against the document.
type apiChecker struct {
	v validator.Validator
	// unmatched checks the answer to a request no documented operation takes: the
	// router's 404 and 405 bodies (components RouteNotFound and Error).
	unmatched func(code int, header http.Header, body []byte) []string
}

func loadAPIChecker() (*apiChecker, error) {
	openAPI.once.Do(func() { openAPI.c, openAPI.err = newAPIChecker(queen.OpenAPI()) })
	return openAPI.c, openAPI.err
}

func newAPIChecker(doc []byte) (*apiChecker, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("parse the OpenAPI document: %w", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("build the OpenAPI model: %w", err)
	}
	// Security is not checked: most brokers here run without JWT_ENABLED, where no token
	// is needed, while the document describes the routes as they are with it on (the
	// auth tests check tokens and their refusals themselves). Formats are: a timestamp
	// that is not RFC 3339 is a wrong answer.
	opts := []config.Option{config.WithoutSecurityValidation(), config.WithFormatAssertions()}
	v := validator.NewValidatorFromV3Model(&m.Model, opts...)
	schemas := m.Model.Components.Schemas
	notFound, errBody := schemas.GetOrZero("RouteNotFound"), schemas.GetOrZero("Error")
	if notFound == nil || errBody == nil {
		return nil, fmt.Errorf("the OpenAPI document lacks components RouteNotFound or Error")
	}
	sv := schema_validation.NewSchemaValidator(opts...)
	unmatched := func(code int, header http.Header, body []byte) []string {
		name, schema := "RouteNotFound", notFound.Schema()
		switch code {
		case http.StatusNotFound:
		case http.StatusMethodNotAllowed:
			if header.Get("Allow") == "" {
				return []string{"a 405 without an Allow header"}
			}
			name, schema = "Error", errBody.Schema()
		default:
			return []string{fmt.Sprintf("status %d to a request no documented operation takes (want 404 or 405)", code)}
		}
		if ct := header.Get("Content-Type"); ct != "application/json" {
			return []string{fmt.Sprintf("%d with Content-Type %q, want application/json", code, ct)}
		}
		if ok, errs := sv.ValidateSchemaBytes(schema, body); !ok {
			return validationMessages("answer ("+name+")", errs)
		}
		return nil
	}
	return &apiChecker{v: v, unmatched: unmatched}, nil
}

// apiReq is what requestAuth tells the check of the request it sends: the test to fail
// (nil: the broker's, at its cleanup) and whether the request is deliberately invalid.
type apiReq struct {
	t        testing.TB
	badInput bool
}

type apiReqKey struct{}

// badInput marks the requests sent with ctx as deliberately invalid: only their answers
// are checked against the OpenAPI document.
func badInput(ctx context.Context) context.Context {
	r, _ := ctx.Value(apiReqKey{}).(apiReq)
	r.badInput = true
	return context.WithValue(ctx, apiReqKey{}, r)
}

// reportingTo makes t the test that a problem of the requests sent with ctx fails.
func reportingTo(ctx context.Context, t testing.TB) context.Context {
	r, _ := ctx.Value(apiReqKey{}).(apiReq)
	r.t = t
	return context.WithValue(ctx, apiReqKey{}, r)
}

// check validates one exchange: the request as sent (its body in sent) unless it is bad
// input, and the answer (its body in raw). It returns one line per problem.
func (c *apiChecker) check(req *http.Request, sent []byte, resp *http.Response, raw []byte, bad bool) []string {
	// The validator reads the bodies: give it copies of its own.
	vreq := req.Clone(req.Context())
	vreq.Body = io.NopCloser(bytes.NewReader(sent))
	vresp := &http.Response{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(raw)), ContentLength: int64(len(raw)), Request: vreq}
	var problems []string
	if !bad {
		if ok, errs := c.v.ValidateHttpRequestSync(vreq); !ok {
			problems = append(problems, validationMessages("request", errs)...)
		}
		vreq.Body = io.NopCloser(bytes.NewReader(sent))
	}
	ok, errs := c.v.ValidateHttpResponse(vreq, vresp)
	if !ok {
		if routeMissing(errs) {
			// No documented operation takes it: a request that meant one is already
			// reported above; the answer must be the router's own refusal.
			problems = append(problems, c.unmatched(resp.StatusCode, resp.Header, raw)...)
		} else {
			problems = append(problems, validationMessages("answer", errs)...)
		}
	}
	return problems
}

type validationError = liberrors.ValidationError

// routeMissing reports whether errs say that the document has no operation for the
// request's path or method (libopenapi-validator's path validation).
func routeMissing(errs []*validationError) bool {
	for _, e := range errs {
		if e.ValidationType == helpers.PathValidation {
			return true
		}
	}
	return false
}

func validationMessages(what string, errs []*validationError) []string {
	var out []string
	for _, e := range errs {
		msg := what + ": " + e.Message
		if e.Reason != "" && e.Reason != e.Message {
			msg += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			msg += fmt.Sprintf("\n\t\tat %s: %s", se.FieldPath, se.Reason)
		}
		out = append(out, msg)
	}
	return out
}

// apiProblems are the problems of requests sent without a test to fail (broker.request
// from goroutines): the broker's cleanup fails the test that started it with them.
type apiProblems struct {
	mu   sync.Mutex
	list []string
}

func (p *apiProblems) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.list) < 50 { // enough to see what is wrong; a loop would repeat it
		p.list = append(p.list, s)
	}
}

func (p *apiProblems) report(t testing.TB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.list {
		t.Errorf("OpenAPI check: %s", s)
	}
	p.list = nil
}

// checkAPI checks one exchange and says what does not match the document ("" when all
// does): the request, unless ctx marks it as bad input, and the answer.
func checkAPI(ctx context.Context, req *http.Request, sent []byte, resp *http.Response, raw []byte) string {
	c, err := loadAPIChecker()
	var problems []string
	if err != nil {
		problems = []string{err.Error()}
	} else {
		r, _ := ctx.Value(apiReqKey{}).(apiReq)
		problems = c.check(req, sent, resp, raw, r.badInput)
	}
	if len(problems) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s answered %d: %s\n\tbody: %.300s", req.Method, req.URL.RequestURI(), resp.StatusCode,
		strings.Join(problems, "\n\t"), raw)
}

// reportAPI fails the test of reportingTo(ctx) with problem, or, when there is none, the
// broker's test at its cleanup.
func (b *broker) reportAPI(ctx context.Context, problem string) {
	if r, _ := ctx.Value(apiReqKey{}).(apiReq); r.t != nil {
		r.t.Errorf("OpenAPI check: %s", problem)
		return
	}
	b.apiProblems.add(problem)
}

// TestOperationsRoutes: the document is served as the broker embeds it, and the probes
// answer as documented, with the database there and away (their answers are checked
// against the document like every other: these are the requests that exercise them).
func TestOperationsRoutes(t *testing.T) {
	t.Parallel()
	proxy, db := newPGProxy(t, pgtest.NewDatabase(t))
	b := startBrokerOn(t, db, nil)

	t.Run("openapi.yaml is docs/openapi.yaml", func(t *testing.T) {
		want, err := os.ReadFile("../docs/openapi.yaml")
		if err != nil {
			t.Fatal(err)
		}
		resp, raw := b.do(t, http.MethodGet, "/openapi.yaml", nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/yaml" {
			t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !bytes.Equal(raw, want) {
			t.Fatalf("GET /openapi.yaml answered %d bytes that differ from docs/openapi.yaml (%d bytes)", len(raw), len(want))
		}
	})

	probes := func(t *testing.T, want map[string]int) {
		t.Helper()
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			for _, path := range []string{"/health", "/ready", "/live"} {
				resp, raw := b.do(t, method, path, nil)
				if resp.StatusCode != want[path] {
					t.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want[path])
				}
				if method == http.MethodHead && len(raw) != 0 {
					t.Errorf("HEAD %s answered a body: %s", path, raw)
				}
			}
		}
	}
	t.Run("probes, the database there", func(t *testing.T) {
		probes(t, map[string]int{"/health": http.StatusOK, "/ready": http.StatusOK, "/live": http.StatusOK})
	})
	t.Run("probes, the database away", func(t *testing.T) {
		proxy.cut()
		defer proxy.restore(t)
		// Health asks the database; readiness is kept by the spool; liveness asks nothing.
		probes(t, map[string]int{"/health": http.StatusServiceUnavailable, "/ready": http.StatusOK, "/live": http.StatusOK})
	})
}
