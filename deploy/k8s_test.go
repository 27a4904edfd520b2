package deploy

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checks are the broker's requirements on a variant, by name.
var checks = []struct {
	name  string
	check func(*variant) []error
}{
	{"env names are broker variables", checkEnvNames},
	{"secrets come from Secrets", checkSecretsFromSecrets},
	{"brokers: database, port, probes, grace, spool, hardening", checkBrokers},
	{"Service targets the broker's port", checkService},
	{"drain CronJob reaches every spool", checkDrain},
}

// TestVariants runs every check on every applicable kustomization (deploy/kubernetes,
// deploy/kubernetes/statefulset).
func TestVariants(t *testing.T) {
	t.Parallel()
	dirs := variantDirs(t)
	if len(dirs) < 2 {
		t.Fatalf("variants %v: want the Deployment one and the StatefulSet one", dirs)
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			v, err := loadVariant(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					report(t, c.check(v))
				})
			}
		})
	}
}

// TestChecksCatch breaks one thing at a time in a variant and expects the check meant to
// catch it to fail, saying why: each check fails for the right reason.
func TestChecksCatch(t *testing.T) {
	t.Parallel()
	const deployment, statefulset = k8sDir, k8sDir + "/statefulset"
	cases := []struct {
		name    string
		dir     string
		breakIt func(*variant)
		check   func(*variant) []error
		wantErr string
	}{
		{name: "typo in a ConfigMap variable", dir: deployment, check: checkEnvNames, wantErr: "did you mean FILE_BUFFER_DIR?",
			breakIt: func(v *variant) { cm(v)["FILE_BUFER_DIR"] = "/x" }},
		{name: "typo in a container variable", dir: deployment, check: checkEnvNames, wantErr: "did you mean QUEEN_SHUTDOWN_TIMEOUT_MS?",
			breakIt: func(v *variant) { setEnv(broker(v), "QUEEN_SHUTDOWN_TIMOUT_MS", "1") }},
		{name: "typo in a Secret variable", dir: deployment, check: checkEnvNames, wantErr: "did you mean JWT_SECRET?",
			breakIt: func(v *variant) { v.secrets["queen-secrets"].StringData["JWT_SECRT"] = "REPLACE-ME" }},
		{name: "typo in the drain's variable", dir: statefulset, check: checkEnvNames, wantErr: "did you mean QUEEN_DRAIN_DIRS?",
			breakIt: func(v *variant) { setEnv(drain(v), "QUEEN_DRAIN_DIR", "/spool") }},
		{name: "secret in the ConfigMap", dir: deployment, check: checkSecretsFromSecrets, wantErr: "holds JWT_SECRET, a secret",
			breakIt: func(v *variant) { cm(v)["JWT_SECRET"] = "REPLACE-ME" }},
		{name: "secret as a literal value", dir: deployment, check: checkSecretsFromSecrets, wantErr: "QUEEN_PG_URL (a secret) comes from value",
			breakIt: func(v *variant) { setEnv(broker(v), "QUEEN_PG_URL", "postgres://u:REPLACE-ME@h/db") }},
		{name: "a real value in the example Secret", dir: deployment, check: checkSecretsFromSecrets, wantErr: "JWT_SECRET is not a placeholder",
			breakIt: func(v *variant) { v.secrets["queen-secrets"].StringData["JWT_SECRET"] = "hunter2" }},
		{name: "no database", dir: deployment, check: checkBrokers, wantErr: "embedded PostgreSQL",
			breakIt: func(v *variant) { delete(v.secrets["queen-secrets"].StringData, "QUEEN_PG_URL") }},
		{name: "a value the broker refuses", dir: deployment, check: checkBrokers, wantErr: "would not start",
			breakIt: func(v *variant) { cm(v)["LOG_FORMAT"] = "xml" }},
		{name: "liveness on /health", dir: deployment, check: checkBrokers, wantErr: "livenessProbe asks /health",
			breakIt: func(v *variant) { broker(v).LivenessProbe.HTTPGet.Path = "/health" }},
		{name: "readiness on /live", dir: statefulset, check: checkBrokers, wantErr: "readinessProbe asks /live",
			breakIt: func(v *variant) { broker(v).ReadinessProbe.HTTPGet.Path = "/live" }},
		{name: "no readiness probe", dir: deployment, check: checkBrokers, wantErr: "no readinessProbe",
			breakIt: func(v *variant) { broker(v).ReadinessProbe = nil }},
		{name: "probe on another port", dir: deployment, check: checkBrokers, wantErr: "livenessProbe port 8080",
			breakIt: func(v *variant) { broker(v).LivenessProbe.HTTPGet.Port = intstr.FromInt32(8080) }},
		{name: "PORT moved, container port not", dir: deployment, check: checkBrokers, wantErr: "want PORT=7000",
			breakIt: func(v *variant) { cm(v)["PORT"] = "7000" }},
		{name: "PORT moved, Service not", dir: deployment, check: checkService, wantErr: "want the broker's PORT=7000",
			breakIt: func(v *variant) { cm(v)["PORT"] = "7000" }},
		{name: "Service targets another port", dir: statefulset, check: checkService, wantErr: "targets 8080",
			breakIt: func(v *variant) { v.services[0].Spec.Ports[0].TargetPort = intstr.FromInt32(8080) }},
		{name: "Service selects nothing", dir: deployment, check: checkService, wantErr: "no Service selects",
			breakIt: func(v *variant) { v.services[0].Spec.Selector["app.kubernetes.io/component"] = "brokr" }},
		{name: "grace shorter than the shutdown", dir: deployment, check: checkBrokers, wantErr: "terminationGracePeriodSeconds 1m0s",
			breakIt: func(v *variant) { g := int64(60); v.brokers[0].pod.Spec.TerminationGracePeriodSeconds = &g }},
		{name: "shutdown timeout raised, grace not", dir: statefulset, check: checkBrokers, wantErr: "QUEEN_SHUTDOWN_TIMEOUT_MS 1m0s",
			breakIt: func(v *variant) { cm(v)["QUEEN_SHUTDOWN_TIMEOUT_MS"] = "60000" }},
		{name: "spool directory moved, mount not", dir: deployment, check: checkBrokers, wantErr: "no volume is mounted at the spool directory /data/spool",
			breakIt: func(v *variant) { cm(v)["FILE_BUFFER_DIR"] = "/data/spool" }},
		{name: "spool on an emptyDir", dir: deployment, check: checkBrokers, wantErr: "not a persistentVolumeClaim",
			breakIt: func(v *variant) {
				v.brokers[0].pod.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			}},
		{name: "two Deployment replicas on one spool directory", dir: deployment, check: checkBrokers, wantErr: "refuse to start",
			breakIt: func(v *variant) { v.brokers[0].replicas = 2 }},
		{name: "Deployment spool by pod name", dir: deployment, check: checkBrokers, wantErr: "random names",
			breakIt: func(v *variant) {
				m := &broker(v).VolumeMounts[0]
				m.SubPath, m.SubPathExpr = "", "$(QUEEN_SERVER_ID)"
			}},
		{name: "writable root file system", dir: deployment, check: checkBrokers, wantErr: "readOnlyRootFilesystem",
			breakIt: func(v *variant) { f := false; broker(v).SecurityContext.ReadOnlyRootFilesystem = &f }},
		{name: "drain misses a broker's directory", dir: deployment, check: checkDrain, wantErr: `spool directory "queen-0" on claim queen-spool is drained by no CronJob`,
			breakIt: func(v *variant) { setEnv(drain(v), "QUEEN_DRAIN_DIRS", "/spool/queen-1") }},
		{name: "StatefulSet scaled past the drained directories", dir: statefulset, check: checkDrain, wantErr: `"queen-3"`,
			breakIt: func(v *variant) { v.brokers[0].replicas = 4 }},
		{name: "drain directory off the claim", dir: deployment, check: checkDrain, wantErr: "drain directory /tmp/x: no volume is mounted there",
			breakIt: func(v *variant) { setEnv(drain(v), "QUEEN_DRAIN_DIRS", "/spool/queen-0,/tmp/x") }},
		{name: "drain runs the broker", dir: deployment, check: checkDrain, wantErr: "no container whose command is queen-drain",
			breakIt: func(v *variant) { drain(v).Command = []string{"/usr/local/bin/queen-server"} }},
		{name: "drain deadline shorter than its run", dir: deployment, check: checkDrain, wantErr: "activeDeadlineSeconds 250",
			breakIt: func(v *variant) { d := int64(250); v.drains[0].Spec.JobTemplate.Spec.ActiveDeadlineSeconds = &d }},
		{name: "drain with an unknown flag", dir: deployment, check: checkDrain, wantErr: `no flag "--dirs"`,
			breakIt: func(v *variant) { drain(v).Args = append(drain(v).Args, "--dirs", "/spool") }},
		{name: "concurrent drains", dir: deployment, check: checkDrain, wantErr: "concurrencyPolicy",
			breakIt: func(v *variant) { v.drains[0].Spec.ConcurrencyPolicy = "Allow" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := loadVariant(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if errs := tc.check(v); len(errs) > 0 {
				t.Fatalf("the check fails before anything is broken: %v", errs)
			}
			tc.breakIt(v)
			errs := tc.check(v)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.wantErr) {
					return
				}
			}
			t.Errorf("after breaking it the check says %v, want an error containing %q", errs, tc.wantErr)
		})
	}
}

// cm is the broker's ConfigMap data.
func cm(v *variant) map[string]string { return v.configMaps["queen-config"].Data }

// broker is the first broker container.
func broker(v *variant) *corev1.Container { return brokerContainers(v.brokers[0])[0] }

// drain is the first drain CronJob's queen-drain container.
func drain(v *variant) *corev1.Container { return drainContainer(v.drains[0]) }

// setEnv sets a literal variable on a container, replacing any entry of that name.
func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}
