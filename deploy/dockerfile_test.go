package deploy

import (
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	dockerfile   = repoRoot + "/Dockerfile"
	dockerignore = repoRoot + "/.dockerignore"
	makefile     = repoRoot + "/Makefile"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM and its instructions.
type stage struct {
	from, name string
	ins        []instruction
}

// parseDockerfile splits a Dockerfile into stages: light parsing (no heredocs, no
// escape directive), enough for the checks below.
func parseDockerfile(data string) []stage {
	var stages []stage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "--") })
			s := stage{}
			if len(f) > 0 {
				s.from = f[0]
			}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			return
		}
		if len(stages) > 0 {
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
		}
	}
	for _, line := range strings.Split(data, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			continue // comments, also between continuation lines
		}
		if strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		cur.WriteString(t)
		flush()
	}
	flush()
	return stages
}

// goBuildRE is one `go build ... -o OUT PKG` (`$(GO) build` in the Makefile).
var goBuildRE = regexp.MustCompile(`(?:\bgo|\$\(GO\)) build\b[^&;]*?-o\s+(\S+)\s+(\./\S+)`)

// makeBuildTargets reads the Makefile's build target: binary name -> package.
func makeBuildTargets(makefileText string) (map[string]string, error) {
	_, rest, ok := strings.Cut(makefileText, "\nbuild:")
	if !ok {
		return nil, fmt.Errorf("%s: no build target", makefile)
	}
	out := map[string]string{}
	for _, line := range strings.Split(rest, "\n")[1:] {
		if !strings.HasPrefix(line, "\t") {
			break // the recipe ends at the first line that is not a command
		}
		for _, m := range goBuildRE.FindAllStringSubmatch(line, -1) {
			out[path.Base(m[1])] = m[2]
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: the build target builds nothing this test understands", makefile)
	}
	return out, nil
}

// probeBinary is what the image builds beyond `make build`: its health-check probe,
// from this module.
const probeBinary, probePackage = "queen-probe", "./queen-probe"

// checkDockerfile: the build stage builds what `make build` builds (statically, without
// build paths), the final stage runs queen-server as a non-root user with the spool as a
// volume and the broker's port exposed, and its environment names broker variables.
func checkDockerfile(text, makefileText string) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	want, err := makeBuildTargets(makefileText)
	if err != nil {
		return []error{err}
	}
	stages := parseDockerfile(text)
	if len(stages) < 2 {
		return []error{fmt.Errorf("%s: %d stages, want a build stage and a final one", dockerfile, len(stages))}
	}
	final := stages[len(stages)-1]
	built := map[string]string{}
	for _, s := range stages[:len(stages)-1] {
		for _, in := range s.ins {
			if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
				continue
			}
			if !strings.Contains(in.args, "CGO_ENABLED=0") {
				fail("%s: stage %s builds without CGO_ENABLED=0: the final image has no C library", dockerfile, s.name)
			}
			for _, m := range goBuildRE.FindAllStringSubmatch(in.args, -1) {
				if !strings.Contains(m[0], "-trimpath") {
					fail("%s: %q has no -trimpath", dockerfile, m[0])
				}
				built[path.Base(m[1])] = m[2]
			}
		}
	}
	for _, name := range slices.Sorted(mapKeys(want)) {
		if built[name] != want[name] {
			fail("%s: builds %s from %q, the Makefile's build target from %q", dockerfile, name, built[name], want[name])
		}
	}
	for _, name := range slices.Sorted(mapKeys(built)) {
		if _, ok := want[name]; !ok && !(name == probeBinary && built[name] == probePackage) {
			fail("%s: builds %s, which `make build` does not", dockerfile, name)
		}
	}
	if !strings.HasPrefix(final.from, "gcr.io/distroless/static") && final.from != "scratch" {
		fail("%s: final stage FROM %s, want distroless static or scratch", dockerfile, final.from)
	}
	user, env, exposed, volumes := "", map[string]string{}, []string(nil), []string(nil)
	var entrypoint, copied, healthcheck string
	for _, in := range final.ins {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENV":
			k, v, _ := strings.Cut(in.args, "=")
			env[k] = v
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "VOLUME":
			volumes = append(volumes, regexp.MustCompile(`/[^"\s,\]]+`).FindAllString(in.args, -1)...)
		case "ENTRYPOINT":
			entrypoint = in.args
		case "COPY":
			copied += " " + in.args
		case "HEALTHCHECK":
			healthcheck = in.args
		}
	}
	if uid, _, _ := strings.Cut(user, ":"); user == "" || uid == "root" || uid == "0" {
		fail("%s: the final stage runs as %q, want a non-root USER", dockerfile, user)
	}
	for _, name := range append(slices.Sorted(mapKeys(want)), probeBinary) {
		if !strings.Contains(copied, "/"+name) {
			fail("%s: the final stage does not copy %s", dockerfile, name)
		}
	}
	if !strings.Contains(entrypoint, "queen-server") {
		fail("%s: ENTRYPOINT %s does not run queen-server", dockerfile, entrypoint)
	}
	if !strings.Contains(healthcheck, probeBinary) {
		fail("%s: HEALTHCHECK does not run %s (the image has no shell or curl)", dockerfile, probeBinary)
	}
	for _, k := range slices.Sorted(mapKeys(env)) {
		errs = appendErr(errs, unknownVar(dockerfile+": ENV", k))
	}
	cfg, err := parseConfig(dockerfile+": ENV", map[string]string{"QUEEN_PG_URL": "postgres://u:p@db:5432/queen", "FILE_BUFFER_DIR": env["FILE_BUFFER_DIR"]})
	if err != nil {
		return append(errs, err)
	}
	if port := fmt.Sprint(cfg.Port); !slices.Contains(exposed, port) && !slices.Contains(exposed, port+"/tcp") {
		fail("%s: EXPOSE %v lacks the broker's default PORT %s", dockerfile, exposed, port)
	}
	if spool := cfg.SpoolDirs()[0]; !slices.Contains(volumes, spool) {
		fail("%s: VOLUME %v lacks the spool directory %s", dockerfile, volumes, spool)
	}
	return errs
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	report(t, checkDockerfile(string(readFile(t, dockerfile)), string(readFile(t, makefile))))
}

// TestDockerfileChecksCatch breaks the Dockerfile, or the Makefile it follows, one way at
// a time.
func TestDockerfileChecksCatch(t *testing.T) {
	t.Parallel()
	goodDocker, goodMake := string(readFile(t, dockerfile)), string(readFile(t, makefile))
	cases := []struct {
		name       string
		inMakefile bool
		old, new   string
		wantErr    string
	}{
		{name: "a binary missing", old: "go build -trimpath -o /out/queen-bench ./cmd/queen-bench && \\", new: "\\", wantErr: "builds queen-bench from \"\""},
		{name: "the Makefile builds one more", inMakefile: true, old: "\t$(GO) build -o $(BIN)/queen-drain ./cmd/lambda\n",
			new: "\t$(GO) build -o $(BIN)/queen-drain ./cmd/lambda\n\t$(GO) build -o $(BIN)/queen-admin ./cmd/admin\n", wantErr: "builds queen-admin from \"\""},
		{name: "a package changed", old: "-o /out/queen-drain ./cmd/lambda", new: "-o /out/queen-drain ./cmd/drain", wantErr: "the Makefile's build target from \"./cmd/lambda\""},
		{name: "cgo", old: "export CGO_ENABLED=0 ", new: "export ", wantErr: "CGO_ENABLED=0"},
		{name: "no -trimpath", old: "go build -trimpath -o /out/queen-server", new: "go build -o /out/queen-server", wantErr: "no -trimpath"},
		{name: "root", old: "USER 65532:65532", new: "USER root", wantErr: "non-root USER"},
		{name: "no USER", old: "USER 65532:65532\n", new: "", wantErr: "non-root USER"},
		{name: "another entrypoint", old: `ENTRYPOINT ["/usr/local/bin/queen-server"]`, new: `ENTRYPOINT ["/usr/local/bin/queen-drain"]`, wantErr: "does not run queen-server"},
		{name: "spool volume elsewhere", old: `VOLUME ["/var/lib/queen/buffers"]`, new: `VOLUME ["/data"]`, wantErr: "lacks the spool directory"},
		{name: "typo in ENV", old: "ENV FILE_BUFFER_DIR=", new: "ENV FILE_BUFER_DIR=", wantErr: "did you mean FILE_BUFFER_DIR?"},
		{name: "another port", old: "EXPOSE 6632", new: "EXPOSE 8080", wantErr: "lacks the broker's default PORT 6632"},
		{name: "a full OS image", old: "FROM gcr.io/distroless/static-debian12:nonroot", new: "FROM debian:12", wantErr: "want distroless static"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, m := goodDocker, goodMake
			target := &d
			if tc.inMakefile {
				target = &m
			}
			if !strings.Contains(*target, tc.old) {
				t.Fatalf("no %q to break", tc.old)
			}
			*target = strings.Replace(*target, tc.old, tc.new, 1)
			errs := checkDockerfile(d, m)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.wantErr) {
					return
				}
			}
			t.Errorf("checkDockerfile says %v, want an error containing %q", errs, tc.wantErr)
		})
	}
}

// TestDockerignoreKeepsTheSources: the build context keeps every file the image's builds
// read (the packages `go list -deps` names, their embedded files, both modules' go.mod
// and go.sum), so that .dockerignore cannot break `docker build`. (-e: a package that does
// not build is still listed; building is not this test's business.)
func TestDockerignoreKeepsTheSources(t *testing.T) {
	t.Parallel()
	targets, err := makeBuildTargets(string(readFile(t, makefile)))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"list", "-e", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{range .EmbedFiles}} {{$.Dir}}/{{.}}{{end}}{{end}}"},
		slices.Sorted(func(yield func(string) bool) {
			for _, p := range targets {
				if !yield(p) {
					return
				}
			}
		})...)
	out := mustOutput(t, exec.Command("go", args...), repoRoot)
	root := strings.TrimSpace(mustOutput(t, exec.Command("go", "list", "-m", "-f", "{{.Dir}}"), repoRoot))
	needed := []string{"go.mod", "go.sum", "deploy/go.mod", "deploy/go.sum", "deploy/queen-probe/main.go"}
	for _, f := range strings.Fields(out) {
		if rel, ok := strings.CutPrefix(f, root+"/"); ok {
			needed = append(needed, rel)
		} // else: in the module cache, downloaded by the build
	}
	patterns := strings.Split(string(readFile(t, dockerignore)), "\n")
	for _, p := range needed {
		if pat := ignoredBy(patterns, p); pat != "" {
			t.Errorf("%s excludes %s (pattern %q), which the image's build needs", dockerignore, p, pat)
		}
	}
}

// ignoredBy is the .dockerignore pattern excluding rel (a path or one of its parents), or
// "". Patterns are matched as Docker does for these simple forms: relative to the context
// root, with path.Match globs and a leading **/ matching at any depth; no ! exceptions.
func ignoredBy(patterns []string, rel string) string {
	parts := strings.Split(rel, "/")
	for _, raw := range patterns {
		p := strings.TrimSpace(raw)
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		p = strings.TrimPrefix(path.Clean(p), "/")
		for i := 1; i <= len(parts); i++ {
			prefix := strings.Join(parts[:i], "/")
			if ok, _ := path.Match(p, prefix); ok {
				return raw
			}
			if rest, any := strings.CutPrefix(p, "**/"); any {
				if ok, _ := path.Match(rest, parts[i-1]); ok {
					return raw
				}
			}
		}
	}
	return ""
}

func mustOutput(t *testing.T, cmd *exec.Cmd, dir string) string {
	t.Helper()
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v in %s: %v\n%s", cmd.Args, dir, err, stderr.String())
	}
	return string(out)
}

func TestIgnoredBy(t *testing.T) {
	t.Parallel()
	patterns := []string{"# comment", ".git", "/lambda", "docs", "**/*.test", "deploy/kubernetes"}
	cases := []struct {
		path, want string
	}{
		{"lambda", "/lambda"},
		{"cmd/lambda/main.go", ""},
		{"adapters/lambda/lambda.go", ""},
		{"docs/design.md", "docs"},
		{"core/push/push.test", "**/*.test"},
		{"deploy/kubernetes/base/secret.yaml", "deploy/kubernetes"},
		{"deploy/queen-probe/main.go", ""},
		{".git/HEAD", ".git"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			if got := ignoredBy(patterns, tc.path); got != tc.want {
				t.Errorf("ignoredBy(%s) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}

// TestProbeDefaultPort: queen-probe without arguments asks the broker's default PORT.
func TestProbeDefaultPort(t *testing.T) {
	t.Parallel()
	var port string
	for _, v := range variables() {
		if v.Name == "PORT" {
			port = v.Default
		}
	}
	if src := string(readFile(t, "queen-probe/main.go")); port == "" || !strings.Contains(src, `port = "`+port+`"`) {
		t.Errorf("queen-probe/main.go does not default to the broker's PORT %q", port)
	}
}
