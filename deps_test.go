package queen

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/queen-go/queen"

// pureLibraries are the non-standard libraries core may use: algorithms, no I/O stacks
// (golang-jwt parses and verifies tokens; fetching keys is adapters/jwks's job; x/time/rate
// paces log lines).
var pureLibraries = []string{"github.com/zeebo/xxh3", "github.com/klauspost/compress", "github.com/google/uuid",
	"github.com/golang-jwt/jwt/v5", "golang.org/x/time/rate"}

// technology libraries and the one adapter allowed to import each.
var technologies = map[string]string{
	"github.com/uptrace/bun":         "adapters/admin",
	"github.com/gorilla/mux":         "adapters/httpapi",
	"github.com/aws/aws-lambda-go":   "adapters/lambda",
	"github.com/google/wire":         "",
	"github.com/jackc/pgx":           "adapters/postgres adapters/pglocal",
	"github.com/prometheus/":         "adapters/metrics",
	"github.com/caarlos0/env":        "",
	"github.com/klauspost/compress/": "",
	"github.com/lestrrat-go/":        "adapters/jwks",
}

// sharedAdapter is the one package the adapters share: the translation of PostgreSQL's
// errors (SQLSTATEs) that both PostgreSQL adapters use. It names no driver.
const sharedAdapter = module + "/adapters/pgerr"

// files selects the Go files imports reads.
type files int

const (
	codeFiles files = iota // non-test files
	testFiles              // _test.go files
	allFiles
)

// imports lists, per package directory under root, the imports of its files of the
// kind which.
func imports(t *testing.T, root string, which files) map[string][]string {
	t.Helper()
	out := make(map[string][]string)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		if isTest := strings.HasSuffix(path, "_test.go"); which == codeFiles && isTest || which == testFiles && !isTest {
			return nil
		}
		if root == "." && filepath.Dir(path) != "." {
			return nil // the root package only
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			out[dir] = append(out[dir], p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isStd(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }

func hasPrefix(p string, prefixes ...string) bool {
	for _, x := range prefixes {
		if p == x || strings.HasPrefix(p, strings.TrimSuffix(x, "/")+"/") {
			return true
		}
	}
	return false
}

// TestDependencyRule enforces docs/design.md "Inside the code": ports imports only the standard library
// (porttest only it and ports); core imports ports, core, the standard library and pure algorithm libraries;
// adapters never import each other, and each technology stays in its adapter.
func TestDependencyRule(t *testing.T) {
	t.Parallel()
	for dir, imps := range imports(t, "ports", codeFiles) {
		for _, p := range imps {
			switch {
			case dir == "ports/porttest" || strings.HasPrefix(dir, "ports/porttest/"):
				if !isStd(p) && p != module+"/ports" {
					t.Errorf("%s imports %s: the conformance suite may import only ports and the standard library", dir, p)
				}
			case !isStd(p):
				t.Errorf("%s imports %s: ports may import only the standard library", dir, p)
			}
		}
	}
	for dir, imps := range imports(t, "core", codeFiles) {
		for _, p := range imps {
			if isStd(p) || hasPrefix(p, module+"/ports", module+"/core") || hasPrefix(p, pureLibraries...) {
				continue
			}
			t.Errorf("%s imports %s: core may import only ports, core, the standard library and %v", dir, p, pureLibraries)
		}
	}
	for dir, imps := range imports(t, "adapters", codeFiles) {
		for _, p := range imps {
			if err := adapterMayImport(dir, p); err != "" {
				t.Errorf("%s imports %s: %s", dir, p, err)
			}
		}
	}
}

// adapterMayImport says why adapter package dir may not import p ("" when it may).
func adapterMayImport(dir, p string) string {
	own := strings.Join(strings.Split(dir, "/")[:2], "/") // adapters/<name>
	if hasPrefix(p, module+"/adapters") && !hasPrefix(p, module+"/"+own, sharedAdapter) {
		return "adapters never import each other"
	}
	if own == "adapters/pgerr" && !isStd(p) && p != module+"/ports" {
		return "the adapters share it: it may import only ports and the standard library"
	}
	if hasPrefix(p, module) && !hasPrefix(p, module+"/ports", module+"/core", module+"/schema", module+"/adapters") {
		return "adapters import only ports, core and schema of this module"
	}
	for lib, allowed := range technologies {
		if hasPrefix(p, lib) && !hasPrefix(own, strings.Fields(allowed)...) {
			return fmt.Sprintf("that technology belongs in %q only", allowed)
		}
	}
	return ""
}

// testSupport are the packages any adapter's tests may import besides what its code
// may: the throwaway PostgreSQL and the conformance suites.
var testSupport = []string{module + "/adapters/pglocal/pgtest", module + "/ports/porttest", module + "/core/spool/spooltest"}

// testPeers are the other adapters (and their technology) an adapter's tests may
// import: adapters/admin and adapters/postgres are two adapters over one database, as
// the broker wires them (the admin adapter runs on the postgres store's pool, reads and
// changes the rows its hot path writes). Each runs the conformance suites of the ports
// it implements with the other supplying the rest of that database: the admin suites
// push, pop and ack through the postgres store; the RetentionStore suite of the postgres
// store configures queues and reads what retention left through the admin adapter.
var testPeers = map[string][]string{
	"adapters/admin":    {module + "/adapters/postgres", "github.com/jackc/pgx/v5/stdlib"},
	"adapters/postgres": {module + "/adapters/admin"},
}

// TestAdapterTestsDependencyRule: an adapter's tests import what its code may, the test
// support packages, and the peers testPeers lists for it; nothing else of another adapter.
func TestAdapterTestsDependencyRule(t *testing.T) {
	t.Parallel()
	for dir, imps := range imports(t, "adapters", testFiles) {
		own := strings.Join(strings.Split(dir, "/")[:2], "/")
		for _, p := range imps {
			if hasPrefix(p, testSupport...) || hasPrefix(p, testPeers[own]...) {
				continue
			}
			if err := adapterMayImport(dir, p); err != "" {
				t.Errorf("%s's tests import %s: %s (tests may add only %v and the peers listed in testPeers)", dir, p, err, testSupport)
			}
		}
	}
}

// TestRootOnlyWires enforces docs/design.md "Inside the code" for the composition root: its code imports the
// standard library, google/wire and this module's packages (the technologies stay in
// their adapters), and its only tests are the repository's own rules (rootTests):
// black-box tests live in e2e/, port behaviour in ports/porttest, benchmarks in bench/.
func TestRootOnlyWires(t *testing.T) {
	t.Parallel()
	for _, p := range imports(t, ".", codeFiles)["."] {
		if !isStd(p) && !hasPrefix(p, module, "github.com/google/wire") {
			t.Errorf("the root package imports %s: it may import only the standard library, wire and this module", p)
		}
	}
	tests, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tests {
		if !slices.Contains(rootTests, f) {
			t.Errorf("the root package has the test file %s: only the repository's rules %v belong here", f, rootTests)
		}
	}
}

// rootTests are the test files of the root package: the rules of the whole repository,
// this architecture test and the document references' test.
var rootTests = []string{"deps_test.go", "docrefs_test.go"}

// e2eAllowed are the packages black-box tests may use besides the standard library: the
// broker's public constructor and configuration, a throwaway PostgreSQL, the leak check,
// the load tool's client-side library and verifier (the ordered-pipeline test drives
// the broker over HTTP with them, as queen-bench does), the log capture of the tests
// (internal/syncbuf), the in-process broker start (internal/brokertest: the broker's
// public constructor, as queen-server calls it), the TCP proxy that cuts or freezes a
// database for one broker (internal/netproxy), and the OpenAPI validator.
var e2eAllowed = []string{module, module + "/config", module + "/adapters/pglocal/pgtest", "go.uber.org/goleak",
	module + "/bench/load", module + "/bench/verify", module + "/internal/syncbuf", module + "/internal/brokertest",
	module + "/internal/netproxy",
	// The OpenAPI check of every exchange (e2e/openapi_test.go): a client-side validator.
	"github.com/pb33f/libopenapi", "github.com/pb33f/libopenapi-validator",
	"github.com/pb33f/libopenapi-validator/config", "github.com/pb33f/libopenapi-validator/errors",
	"github.com/pb33f/libopenapi-validator/helpers", "github.com/pb33f/libopenapi-validator/schema_validation"}

// faultsAllowed adds, for the fault scenarios (e2e/faults), what breaking things takes:
// the PostgreSQL cluster they crash and freeze (adapters/pglocal) and pgx to read the
// database invariants after the drain. They still run the broker as a process and
// speak HTTP to it.
var faultsAllowed = []string{module + "/adapters/pglocal", "github.com/jackc/pgx/v5"}

// browserAllowed adds, for the dashboard's browser tests (e2e/browser), the browser
// driver and its protocol types: they still reach the broker only through its pages and
// its HTTP API. (performance: the main thread's busy time, e2e/browser/scale_test.go.)
var browserAllowed = []string{"github.com/chromedp/chromedp", "github.com/chromedp/cdproto/cdp",
	"github.com/chromedp/cdproto/runtime", "github.com/chromedp/cdproto/performance"}

// TestE2EIsBlackBox: e2e/ speaks to the broker through its public API only.
func TestE2EIsBlackBox(t *testing.T) {
	t.Parallel()
	found := imports(t, "e2e", allFiles)
	if len(found) == 0 {
		t.Fatal("no Go files under e2e/: the black-box tests are missing")
	}
	for dir, imps := range found {
		for _, p := range imps {
			if !isStd(p) && !slices.Contains(e2eAllowed, p) && (dir != "e2e/faults" || !slices.Contains(faultsAllowed, p)) &&
				(dir != "e2e/browser" || !slices.Contains(browserAllowed, p)) {
				t.Errorf("%s imports %s: e2e may import only the standard library and %v", dir, p, e2eAllowed)
			}
		}
	}
}

// TestReadmeTreeMatchesPackages: the README's layout names every package of the module,
// and nothing that is not one (each line of its tree block starts with a package path).
func TestReadmeTreeMatchesPackages(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- tree -->\n```\n")
	tree, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no tree block (a ``` block right after <!-- tree -->)")
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(tree, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			listed[strings.TrimSuffix(f[0], "/")] = true
		}
	}
	actual := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			actual[filepath.ToSlash(filepath.Dir(path))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range actual {
		if !listed[dir] {
			t.Errorf("package %s is missing from the README's tree", dir)
		}
	}
	for dir := range listed {
		if !actual[dir] {
			t.Errorf("the README's tree lists %s, which holds no Go package", dir)
		}
	}
}
