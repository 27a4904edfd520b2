package queen

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/queen-go/queen"

// pureLibraries are the non-standard libraries core may use: algorithms, no I/O stacks.
var pureLibraries = []string{"github.com/zeebo/xxh3", "github.com/klauspost/compress", "github.com/google/uuid"}

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
}

// imports lists, per package directory, the imports of its non-test Go files.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := make(map[string][]string)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
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

// TestDependencyRule enforces design.md §2: ports imports only the standard library
// (porttest only it and ports); core imports ports, core, the standard library and pure algorithm libraries;
// adapters never import each other, and each technology stays in its adapter.
func TestDependencyRule(t *testing.T) {
	t.Parallel()
	for dir, imps := range imports(t, "ports") {
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
	for dir, imps := range imports(t, "core") {
		for _, p := range imps {
			if isStd(p) || hasPrefix(p, module+"/ports", module+"/core") || hasPrefix(p, pureLibraries...) {
				continue
			}
			t.Errorf("%s imports %s: core may import only ports, core, the standard library and %v", dir, p, pureLibraries)
		}
	}
	for dir, imps := range imports(t, "adapters") {
		own := strings.Join(strings.Split(dir, "/")[:2], "/") // adapters/<name>
		for _, p := range imps {
			if hasPrefix(p, module+"/adapters") && !hasPrefix(p, module+"/"+own) {
				t.Errorf("%s imports %s: adapters never import each other", dir, p)
			}
			if hasPrefix(p, module) && !hasPrefix(p, module+"/ports", module+"/core", module+"/schema", module+"/adapters") {
				t.Errorf("%s imports %s: adapters import only ports, core and schema of this module", dir, p)
			}
			for lib, allowed := range technologies {
				if hasPrefix(p, lib) && !hasPrefix(own, strings.Fields(allowed)...) {
					t.Errorf("%s imports %s: that technology belongs in %q only", dir, p, allowed)
				}
			}
		}
	}
}
