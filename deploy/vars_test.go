package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/queen-go/queen/config"
)

// repoRoot is the main module's directory: the Dockerfile, docker-compose.yaml and the
// Makefile live there.
const repoRoot = ".."

// variables indexes config.Variables by name and by alias.
var variables = sync.OnceValue(func() map[string]config.Variable {
	out := map[string]config.Variable{}
	for _, v := range config.Variables() {
		out[v.Name] = v
		for _, a := range v.Aliases {
			out[a] = v
		}
	}
	return out
})

// unknownVar is nil when the broker reads name, else an error naming where it was found
// and the closest variable the broker knows (most unknown names are typos).
func unknownVar(where, name string) error {
	if _, ok := variables()[name]; ok {
		return nil
	}
	best, bestDist := "", 1<<30
	for known := range variables() {
		if d := editDistance(name, known); d < bestDist || d == bestDist && known < best {
			best, bestDist = known, d
		}
	}
	return fmt.Errorf("%s: %s is not a variable the broker reads (config.Variables); did you mean %s?", where, name, best)
}

// isSecretVar reports whether the broker treats name's value as a secret.
func isSecretVar(name string) bool { return variables()[name].Secret }

// parseConfig is what the broker would run with under env: config.Parse, which also
// validates every value (ranges, URLs, one-of words) as start-up does.
func parseConfig(where string, env map[string]string) (config.Config, error) {
	cfg, err := config.Parse(env)
	if err != nil {
		return cfg, fmt.Errorf("%s: the broker would not start with this environment: %w", where, err)
	}
	return cfg, nil
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// readFile reads a file of the repository, relative to this directory.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

// report fails t with every error a check found.
func report(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
}

func TestUnknownVarSuggestsTheClosestName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, variable, wantHint string
	}{
		{name: "known name", variable: "PORT"},
		{name: "known alias", variable: "PG_DB"},
		{name: "typo", variable: "FILE_BUFER_DIR", wantHint: "did you mean FILE_BUFFER_DIR?"},
		{name: "wrong prefix", variable: "QUEEN_PORT", wantHint: "is not a variable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := unknownVar("here", tc.variable)
			switch {
			case tc.wantHint == "" && err != nil:
				t.Errorf("unknownVar(%s) = %v, want nil", tc.variable, err)
			case tc.wantHint != "" && (err == nil || !strings.Contains(err.Error(), tc.wantHint)):
				t.Errorf("unknownVar(%s) = %v, want an error containing %q", tc.variable, err, tc.wantHint)
			}
		})
	}
}

func TestSecretVariablesAreKnown(t *testing.T) {
	t.Parallel()
	// The manifests' secret checks rely on these being marked secret in the config table.
	for _, name := range []string{"QUEEN_PG_URL", "PG_PASSWORD", "JWT_SECRET", "QUEEN_ENCRYPTION_KEY"} {
		if !isSecretVar(name) {
			t.Errorf("%s is not marked Secret in config.Variables", name)
		}
	}
	if isSecretVar("PORT") {
		t.Error("PORT is marked Secret")
	}
}
