package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/queen-go/queen/core/auth"
)

// openAPIFile is the document the root package embeds and GET /openapi.yaml serves.
const openAPIFile = "../../docs/openapi.yaml"

func readOpenAPI(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatalf("read the OpenAPI document: %v", err)
	}
	return b
}

func openAPIModel(t *testing.T) (libopenapi.Document, *v3.Document) {
	t.Helper()
	doc, err := libopenapi.NewDocument(readOpenAPI(t))
	if err != nil {
		t.Fatalf("parse %s: %v", openAPIFile, err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the model of %s: %v", openAPIFile, err)
	}
	return doc, &m.Model
}

// TestOpenAPIDocumentIsValid: the document is OpenAPI 3.1 by its schema, and every $ref
// resolves (a broken one would make the e2e validation skip what it points to).
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc, m := openAPIModel(t)
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1") {
		t.Fatalf("openapi %q, want 3.1", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("build a validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  at %s (%s): %s", se.FieldPath, se.KeywordLocation, se.Reason)
			}
		}
	}
	if idx := doc.GetRolodex(); idx != nil {
		for _, err := range idx.GetCaughtErrors() {
			t.Errorf("reference: %v", err)
		}
	}
	if m.Paths == nil || m.Paths.PathItems.Len() == 0 {
		t.Fatal("the document has no paths")
	}
}

// muxVariable matches a gorilla/mux path variable with its pattern ({queue:.+}).
var muxVariable = regexp.MustCompile(`\{([A-Za-z0-9_]+):[^}]*\}`)

// servedRoutes returns every registered route as "METHOD /openapi/path" -> the
// "METHOD template" it comes from.
func servedRoutes(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, key := range registeredRoutes(t) {
		method, tpl, _ := strings.Cut(key, " ")
		out[method+" "+muxVariable.ReplaceAllString(tpl, "{$1}")] = key
	}
	return out
}

// documentedOperations returns "METHOD /path" -> its operation, for every operation of m.
func documentedOperations(m *v3.Document) map[string]*v3.Operation {
	out := map[string]*v3.Operation{}
	for path, item := range m.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			out[strings.ToUpper(method)+" "+path] = op
		}
	}
	return out
}

// TestOpenAPICoversEveryRoute: the document describes exactly the routes the broker
// serves (method and path), and gives each the access level routeLevels gives it, with
// security: [] exactly on the public ones.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	_, m := openAPIModel(t)
	served, documented := servedRoutes(t), documentedOperations(m)
	for _, key := range slices.Sorted(func(yield func(string) bool) {
		for k := range served {
			if !yield(k) {
				return
			}
		}
	}) {
		if _, ok := documented[key]; !ok {
			t.Errorf("the broker serves %q (%s), which docs/openapi.yaml lacks", key, served[key])
		}
	}
	for key, op := range documented {
		muxKey, ok := served[key]
		if !ok {
			t.Errorf("docs/openapi.yaml documents %q, which the broker does not serve", key)
			continue
		}
		level, ok := routeLevels[muxKey]
		if !ok {
			continue // TestEveryRouteHasALevel reports it
		}
		want := strings.ToLower(strings.ReplaceAll(level.String(), "_", "-"))
		var got string
		if n, ok := op.Extensions.Get("x-queen-access-level"); ok && n != nil {
			got = n.Value
		}
		if got != want {
			t.Errorf("%s: x-queen-access-level %q, want %q (routeLevels)", key, got, want)
		}
		public := op.Security != nil && len(op.Security) == 0
		if public != (level == auth.Public) {
			t.Errorf("%s: security: [] is %v, want it exactly on public routes (level %s)", key, public, level)
		}
		if op.OperationId == "" {
			t.Errorf("%s: no operationId", key)
		}
	}
}

// TestServeOpenAPI: GET /openapi.yaml answers the document given, as YAML, without a
// token when authentication is on; without a document there is no such route.
func TestServeOpenAPI(t *testing.T) {
	t.Parallel()
	doc := readOpenAPI(t)
	v, err := auth.New(auth.Options{Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		opts  Options
		code  int
		body  []byte
		ctype string
	}{
		{"served", Options{OpenAPI: doc}, http.StatusOK, doc, "application/yaml"},
		{"public with authentication on", Options{OpenAPI: doc, Auth: v}, http.StatusOK, doc, "application/yaml"},
		{"no document, no route", Options{}, http.StatusNotFound, nil, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			New(Services{DB: pinger{}}, tt.opts).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil))
			if rec.Code != tt.code {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.code, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type %q, want %q", got, tt.ctype)
			}
			if tt.body != nil && !bytes.Equal(rec.Body.Bytes(), tt.body) {
				t.Errorf("body of %d bytes, want the document's %d", rec.Body.Len(), len(tt.body))
			}
		})
	}
}
