package deploy

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/queen-go/queen/adapters/lambda"
)

const samTemplate = "lambda/template.yaml"

// cfn is a CloudFormation/SAM template as yaml.v3 nodes: the short tags (!Ref, !Sub,
// !GetAtt) stay tags on their nodes instead of failing a typed decode.
type cfn struct {
	root *yaml.Node // the top-level mapping
}

func parseCFN(data []byte) (cfn, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return cfn{}, fmt.Errorf("parse: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return cfn{}, errors.New("parse: the template is not a mapping")
	}
	return cfn{root: doc.Content[0]}, nil
}

// get walks mapping keys; nil when one is missing.
func get(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

// entries lists a mapping's keys and values in order.
func entries(n *yaml.Node) [][2]*yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
	}
	return out
}

// value is a node's value as deployed with the parameters' defaults: a plain scalar, or
// a !Ref to a parameter (its Default). dynamic is true for anything resolved only by
// CloudFormation (!Sub, !GetAtt, {{resolve:...}}), whose text is returned as written.
func (t cfn) value(n *yaml.Node) (v string, dynamic bool, err error) {
	switch {
	case n == nil:
		return "", false, errors.New("missing")
	case n.Tag == "!Ref" || get(n, "Ref") != nil:
		name := n.Value
		if r := get(n, "Ref"); r != nil {
			name = r.Value
		}
		p := get(t.root, "Parameters", name)
		if p == nil {
			return "", true, nil // a pseudo parameter or a resource
		}
		if d := get(p, "Default"); d != nil {
			return d.Value, false, nil
		}
		return "", true, nil
	case n.Kind == yaml.ScalarNode && (n.Tag == "!!str" || n.Tag == "!!int" || n.Tag == "!!bool" || n.Tag == "!!float"):
		return n.Value, strings.Contains(n.Value, "{{resolve:"), nil
	case n.Kind == yaml.ScalarNode:
		return n.Value, true, nil // !Sub "..." and the like
	}
	return "", true, nil
}

// functions lists the template's AWS::Serverless::Function resources by logical id.
func (t cfn) functions() map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for _, e := range entries(get(t.root, "Resources")) {
		if ty := get(e[1], "Type"); ty != nil && ty.Value == "AWS::Serverless::Function" {
			out[e[0].Value] = get(e[1], "Properties")
		}
	}
	return out
}

// rateRE is an EventBridge rate expression.
var rateRE = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// checkSAM: the template deploys queen-drain as the brief of deploy/lambda/README.md
// says, with variables the broker reads and its secret from Secrets Manager.
func checkSAM(data []byte) []error {
	t, err := parseCFN(data)
	if err != nil {
		return []error{err}
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	transform := get(t.root, "Transform")
	if transform == nil || !(transform.Value == "AWS::Serverless-2016-10-31" ||
		slices.ContainsFunc(transform.Content, func(n *yaml.Node) bool { return n.Value == "AWS::Serverless-2016-10-31" })) {
		fail("Transform is not AWS::Serverless-2016-10-31")
	}
	fns := t.functions()
	if len(fns) == 0 {
		fail("no AWS::Serverless::Function")
	}
	for _, id := range slices.Sorted(mapKeys(fns)) {
		p := fns[id]
		where := "function " + id
		scalar := func(key string) string {
			v, _, err := t.value(get(p, key))
			if err != nil {
				fail("%s: %s: %v", where, key, err)
			}
			return v
		}
		if v := scalar("Runtime"); v != "provided.al2023" {
			fail("%s: Runtime %q, want provided.al2023", where, v)
		}
		if v := scalar("Handler"); v != "bootstrap" {
			fail("%s: Handler %q, want bootstrap (the executable provided.al2023 runs)", where, v)
		}
		arch := get(p, "Architectures")
		if arch == nil || arch.Kind != yaml.SequenceNode || len(arch.Content) != 1 {
			fail("%s: Architectures must list one architecture", where)
		} else if v, _, _ := t.value(arch.Content[0]); v != "arm64" && v != "x86_64" {
			fail("%s: architecture %q, want arm64 or x86_64", where, v)
		}
		mem, err := strconv.Atoi(scalar("MemorySize"))
		if err != nil || mem < 128 || mem > 10240 {
			fail("%s: MemorySize %d (%v): want 128 to 10240 MB", where, mem, err)
		}
		timeoutS, err := strconv.Atoi(scalar("Timeout"))
		if err != nil || timeoutS < 1 || timeoutS > 900 {
			fail("%s: Timeout %d (%v): want 1 to 900 s", where, timeoutS, err)
		}
		env := map[string]string{}
		for _, e := range entries(get(p, "Environment", "Variables")) {
			name := e[0].Value
			errs = appendErr(errs, unknownVar(where+": Environment", name))
			v, dynamic, _ := t.value(e[1])
			if isSecretVar(name) && !(dynamic && strings.Contains(v, "{{resolve:secretsmanager:")) {
				fail("%s: %s (a secret) must be a {{resolve:secretsmanager:...}} reference, not %q", where, name, v)
			}
			if dynamic {
				v = placeholderValue(name)
			}
			env[name] = v
		}
		cfg, err := parseConfig(where, env)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cfg.Embedded() {
			fail("%s: no QUEEN_PG_URL nor PG_*: the drain has no database", where)
		}
		// The handler drains until lambda.Budget, shortly before the invocation's deadline:
		// the timeout must leave most of the invocation to draining.
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Duration(timeoutS)*time.Second))
		if drainFor := time.Until(lambda.Budget(ctx, cfg.StatementTimeout)); drainFor < time.Duration(timeoutS)*time.Second/2 {
			fail("%s: Timeout %d s leaves only %v of draining (lambda.Budget keeps the rest for closing)", where, timeoutS, drainFor.Round(time.Second))
		}
		cancel()
		mounts := map[string]bool{}
		fsc := get(p, "FileSystemConfigs")
		if fsc == nil || len(fsc.Content) == 0 {
			fail("%s: no FileSystemConfigs: the spool directories are not mounted", where)
		} else {
			for _, m := range fsc.Content {
				mp, _, _ := t.value(get(m, "LocalMountPath"))
				if !strings.HasPrefix(mp, "/mnt/") || get(m, "Arn") == nil {
					fail("%s: FileSystemConfigs entry needs an Arn and a LocalMountPath under /mnt/ (got %q)", where, mp)
				}
				mounts[path.Clean(mp)] = true
			}
		}
		if len(cfg.DrainDirs) == 0 {
			fail("%s: QUEEN_DRAIN_DIRS is empty: the drain would look in the broker's default spool directory, not on EFS", where)
		}
		for _, d := range cfg.DrainDirs {
			if !slices.ContainsFunc(slices.Collect(mapKeys(mounts)), func(mp string) bool { return strings.HasPrefix(path.Clean(d), mp+"/") }) {
				fail("%s: QUEEN_DRAIN_DIRS entry %s is not under a FileSystemConfigs mount %v", where, d, slices.Sorted(mapKeys(mounts)))
			}
		}
		if get(p, "VpcConfig", "SubnetIds") == nil || get(p, "VpcConfig", "SecurityGroupIds") == nil {
			fail("%s: VpcConfig needs SubnetIds and SecurityGroupIds: EFS is reached inside a VPC", where)
		}
		pol := get(p, "Policies")
		if pol == nil || len(pol.Content) == 0 {
			fail("%s: no Policies", where)
		} else if !hasEFSAccess(pol) {
			fail("%s: Policies grant no EFS client access (EFSWriteAccessPolicy, or elasticfilesystem:ClientWrite)", where)
		}
		scheduled := false
		for _, e := range entries(get(p, "Events")) {
			if ty := get(e[1], "Type"); ty == nil || ty.Value != "Schedule" {
				continue
			}
			scheduled = true
			expr, _, _ := t.value(get(e[1], "Properties", "Schedule"))
			if m := rateRE.FindStringSubmatch(expr); m != nil {
				n, _ := strconv.Atoi(m[1])
				every := time.Duration(n) * map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[m[2][0]]
				if every < time.Duration(timeoutS)*time.Second {
					fail("%s: schedule %s fires before a run of Timeout %d s may end", where, expr, timeoutS)
				}
			} else if !strings.HasPrefix(expr, "cron(") {
				fail("%s: event %s: schedule %q is neither rate(...) nor cron(...)", where, e[0].Value, expr)
			}
		}
		if !scheduled {
			fail("%s: no Events entry of Type Schedule", where)
		}
	}
	return errs
}

// hasEFSAccess looks for EFS client permissions anywhere in Policies.
func hasEFSAccess(n *yaml.Node) bool {
	if n.Value == "EFSWriteAccessPolicy" || n.Value == "elasticfilesystem:ClientWrite" {
		return true
	}
	return slices.ContainsFunc(n.Content, hasEFSAccess)
}

// placeholderValue stands for a value CloudFormation resolves at deploy time.
func placeholderValue(name string) string {
	if name == "QUEEN_PG_URL" {
		return "postgres://user:secret@db.example:5432/queen"
	}
	return "x"
}

func TestSAMTemplate(t *testing.T) {
	t.Parallel()
	report(t, checkSAM(readFile(t, samTemplate)))
}

// TestSAMChecksCatch breaks the template one way at a time: the check must say so.
func TestSAMChecksCatch(t *testing.T) {
	t.Parallel()
	good := string(readFile(t, samTemplate))
	cases := []struct {
		name, old, new, wantErr string
	}{
		{"typo in a variable", "QUEEN_DRAIN_DIRS: !Ref", "QUEEN_DRAIN_DIR: !Ref", "did you mean QUEEN_DRAIN_DIRS?"},
		{"secret in plain text", `QUEEN_PG_URL: !Sub "{{resolve:secretsmanager:${PgUrlSecretId}:SecretString:url}}"`,
			"QUEEN_PG_URL: postgres://u:p@h/db", "must be a {{resolve:secretsmanager:...}} reference"},
		{"no database", `QUEEN_PG_URL: !Sub "{{resolve:secretsmanager:${PgUrlSecretId}:SecretString:url}}"`, "", "no QUEEN_PG_URL"},
		{"another runtime", "Runtime: provided.al2023", "Runtime: go1.x", "want provided.al2023"},
		{"another handler", "Handler: bootstrap", "Handler: queen-drain", "want bootstrap"},
		{"no transform", "Transform: AWS::Serverless-2016-10-31", "", "Transform"},
		{"timeout above Lambda's maximum", "Timeout: 300", "Timeout: 1200", "want 1 to 900 s"},
		{"timeout that leaves no time to drain", "Timeout: 300", "Timeout: 15", "of draining"},
		{"schedule faster than a run", "Default: rate(5 minutes)", "Default: rate(1 minute)", "fires before a run"},
		{"no schedule event", "Type: Schedule", "Type: SQS", "no Events entry of Type Schedule"},
		{"drain directory off the mount", "Default: /mnt/queen/queen-0,", "Default: /var/spool/queen-0,", "not under a FileSystemConfigs mount"},
		{"mount outside /mnt", "LocalMountPath: /mnt/queen", "LocalMountPath: /efs", "under /mnt/"},
		{"no EFS permission", "- EFSWriteAccessPolicy:", "- EFSReadOnlyPolicy:", "no EFS client access"},
		{"no VPC", "VpcConfig:", "VpcConfg:", "VpcConfig"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(good, tc.old) {
				t.Fatalf("the template has no %q to break", tc.old)
			}
			errs := checkSAM([]byte(strings.Replace(good, tc.old, tc.new, 1)))
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.wantErr) {
					return
				}
			}
			t.Errorf("checkSAM says %v, want an error containing %q", errs, tc.wantErr)
		})
	}
}
