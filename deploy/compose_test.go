package deploy

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const composeFile = repoRoot + "/docker-compose.yaml"

// compose is the part of the Compose file format docker-compose.yaml uses, decoded with
// known fields only: a misspelt key (healtcheck) fails instead of being ignored.
type compose struct {
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]*struct{}      `yaml:"volumes"`
}

type composeService struct {
	Image     string `yaml:"image"`
	Build     string `yaml:"build"`
	DependsOn map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	ReadOnly    bool              `yaml:"read_only"`
	Tmpfs       []string          `yaml:"tmpfs"`
	Healthcheck *struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		StartPeriod string   `yaml:"start_period"`
		Retries     int      `yaml:"retries"`
	} `yaml:"healthcheck"`
	StopGracePeriod string `yaml:"stop_grace_period"`
}

func parseCompose(data []byte) (compose, error) {
	var c compose
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", composeFile, err)
	}
	return c, nil
}

// checkCompose: the broker service (built from the Dockerfile) runs with variables the
// broker reads, against the compose PostgreSQL once it is healthy, with its spool on a
// named volume at FILE_BUFFER_DIR, a health check on /ready and a stop grace that covers
// the shutdown.
func checkCompose(data []byte) []error {
	c, err := parseCompose(data)
	if err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	brokers := 0
	for _, name := range slices.Sorted(mapKeys(c.Services)) {
		s := c.Services[name]
		if s.Build != "." {
			continue // not the image of this repository (PostgreSQL)
		}
		brokers++
		where := composeFile + ": service " + name
		for _, k := range slices.Sorted(mapKeys(s.Environment)) {
			errs = appendErr(errs, unknownVar(where, k))
		}
		cfg, err := parseConfig(where, s.Environment)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cfg.Embedded() {
			fail("%s: no QUEEN_PG_URL nor PG_*: the image has no PostgreSQL to embed", where)
		}
		for dep, d := range s.DependsOn {
			if d.Condition != "service_healthy" || c.Services[dep].Healthcheck == nil {
				fail("%s: depends_on %s should wait for service_healthy, with a healthcheck on %s", where, dep, dep)
			}
		}
		if len(s.DependsOn) == 0 {
			fail("%s: depends on no database service", where)
		}
		hc := s.Healthcheck
		wantURL := fmt.Sprintf("http://127.0.0.1:%d/ready", cfg.Port)
		if hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" || !slices.Contains(hc.Test, wantURL) {
			fail("%s: healthcheck must be [CMD, /usr/local/bin/queen-probe, %s] (exec form: the image has no shell)", where, wantURL)
		} else if path.Base(hc.Test[1]) != "queen-probe" {
			fail("%s: healthcheck runs %s, want queen-probe (the image has no curl or wget)", where, hc.Test[1])
		}
		if !slices.ContainsFunc(s.Ports, func(p string) bool { return strings.HasSuffix(p, fmt.Sprintf(":%d", cfg.Port)) }) {
			fail("%s: ports %v publish no container port %d (PORT)", where, s.Ports, cfg.Port)
		}
		spool := cfg.SpoolDirs()[0]
		mounted := false
		for _, vol := range s.Volumes {
			src, dst, _ := strings.Cut(vol, ":")
			dst, _, _ = strings.Cut(dst, ":")
			if path.Clean(dst) != path.Clean(spool) {
				continue
			}
			mounted = true
			if _, named := c.Volumes[src]; !named {
				fail("%s: the spool %s is on %s, not on a named volume of the file", where, spool, src)
			}
		}
		if !mounted {
			fail("%s: no volume at the spool directory %s (FILE_BUFFER_DIR)", where, spool)
		}
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if need := cfg.ShutdownTimeout + cfg.StatementTimeout + 5*time.Second; err != nil || grace <= need {
			fail("%s: stop_grace_period %q must exceed QUEEN_SHUTDOWN_TIMEOUT_MS + DB_STATEMENT_TIMEOUT + 5s = %v", where, s.StopGracePeriod, need)
		}
	}
	if brokers == 0 {
		fail("%s: no service is built from the Dockerfile (build: .)", composeFile)
	}
	return errs
}

func TestCompose(t *testing.T) {
	t.Parallel()
	report(t, checkCompose(readFile(t, composeFile)))
}

// TestComposeChecksCatch breaks docker-compose.yaml one way at a time.
func TestComposeChecksCatch(t *testing.T) {
	t.Parallel()
	good := string(readFile(t, composeFile))
	cases := []struct {
		name, old, new, wantErr string
	}{
		{"typo in a variable", "FILE_BUFFER_DIR: /var", "FILE_BUFER_DIR: /var", "did you mean FILE_BUFFER_DIR?"},
		{"misspelt key", "    healthcheck:\n      test: [\"CMD\", \"/usr", "    healtcheck:\n      test: [\"CMD\", \"/usr", "field healtcheck not found"},
		{"health check on /health", "127.0.0.1:6632/ready", "127.0.0.1:6632/health", "healthcheck must be"},
		{"health check in a shell", `["CMD", "/usr/local/bin/queen-probe",`, `["CMD-SHELL", "/usr/local/bin/queen-probe",`, "healthcheck must be"},
		{"PORT moved, health check not", `PORT: "6632"`, `PORT: "7000"`, "http://127.0.0.1:7000/ready"},
		{"no database", "      QUEEN_PG_URL:", "      # QUEEN_PG_URL:", "no QUEEN_PG_URL"},
		{"spool on no volume", "- queen-spool:/var/lib/queen/buffers", "- queen-spool:/data", "no volume at the spool directory"},
		{"short stop grace", "stop_grace_period: 70s", "stop_grace_period: 10s", "stop_grace_period"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(good, tc.old) {
				t.Fatalf("docker-compose.yaml has no %q to break", tc.old)
			}
			errs := checkCompose([]byte(strings.Replace(good, tc.old, tc.new, 1)))
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.wantErr) {
					return
				}
			}
			t.Errorf("checkCompose says %v, want an error containing %q", errs, tc.wantErr)
		})
	}
}
