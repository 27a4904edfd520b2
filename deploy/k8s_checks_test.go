package deploy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/queen-go/queen/config"
)

// variant is one applicable set of manifests (a kustomization), indexed for the checks.
type variant struct {
	dir        string
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	claims     map[string]*corev1.PersistentVolumeClaim
	services   []*corev1.Service
	brokers    []workload
	drains     []*batchv1.CronJob
	file       map[any]string // object -> the file it came from, for messages
}

// workload is a broker: a Deployment or a StatefulSet.
type workload struct {
	kind, name string
	replicas   int32
	pod        *corev1.PodTemplateSpec
}

func (w workload) String() string { return w.kind + " " + w.name }

// placeholderPodName stands for the pod's name where the downward API supplies it.
const placeholderPodName = "queen-pod"

// loadVariant renders dir and indexes what it applies.
func loadVariant(dir string) (*variant, error) {
	objs, _, err := render(dir)
	if err != nil {
		return nil, err
	}
	v := &variant{dir: dir, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		claims: map[string]*corev1.PersistentVolumeClaim{}, file: map[any]string{}}
	for _, o := range objs {
		v.file[o.obj] = o.file
		switch x := o.obj.(type) {
		case *corev1.ConfigMap:
			v.configMaps[x.Name] = x
		case *corev1.Secret:
			v.secrets[x.Name] = x
		case *corev1.PersistentVolumeClaim:
			v.claims[x.Name] = x
		case *corev1.Service:
			v.services = append(v.services, x)
		case *appsv1.Deployment:
			v.brokers = append(v.brokers, workload{kind: "Deployment", name: x.Name, replicas: replicas(x.Spec.Replicas), pod: &x.Spec.Template})
		case *appsv1.StatefulSet:
			v.brokers = append(v.brokers, workload{kind: "StatefulSet", name: x.Name, replicas: replicas(x.Spec.Replicas), pod: &x.Spec.Template})
		case *batchv1.CronJob:
			v.drains = append(v.drains, x)
		}
	}
	if len(v.brokers) == 0 {
		return nil, fmt.Errorf("%s: no broker (Deployment or StatefulSet)", dir)
	}
	return v, nil
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1 // the API's default
	}
	return *p
}

// envVar is one variable of a container's environment and where its value comes from.
type envVar struct {
	value  string
	source string // "ConfigMap queen-config", "Secret queen-secrets", "value", "fieldRef", ...
}

func (e envVar) fromSecret() bool { return strings.HasPrefix(e.source, "Secret ") }

// containerEnv is a container's environment as the kubelet builds it: envFrom in order,
// then env, later entries overriding earlier ones.
func (v *variant) containerEnv(where string, c *corev1.Container) (map[string]envVar, []error) {
	out := map[string]envVar{}
	var errs []error
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := v.configMaps[from.ConfigMapRef.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: envFrom ConfigMap %s is not in %s", where, from.ConfigMapRef.Name, v.dir))
				continue
			}
			for k, val := range cm.Data {
				out[from.Prefix+k] = envVar{value: val, source: "ConfigMap " + cm.Name}
			}
		case from.SecretRef != nil:
			s, ok := v.secrets[from.SecretRef.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: envFrom Secret %s is not in %s", where, from.SecretRef.Name, v.dir))
				continue
			}
			for k, val := range secretData(s) {
				out[from.Prefix+k] = envVar{value: val, source: "Secret " + s.Name}
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = envVar{value: e.Value, source: "value"}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			val, ok := secretData(v.secrets[ref.Name])[ref.Key]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: env %s: Secret %s has no key %s", where, e.Name, ref.Name, ref.Key))
			}
			out[e.Name] = envVar{value: val, source: "Secret " + ref.Name}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			var val string
			var ok bool
			if cm := v.configMaps[ref.Name]; cm != nil {
				val, ok = cm.Data[ref.Key]
			}
			if !ok {
				errs = append(errs, fmt.Errorf("%s: env %s: ConfigMap %s has no key %s", where, e.Name, ref.Name, ref.Key))
			}
			out[e.Name] = envVar{value: val, source: "ConfigMap " + ref.Name}
		case e.ValueFrom.FieldRef != nil:
			out[e.Name] = envVar{value: placeholderPodName, source: "fieldRef " + e.ValueFrom.FieldRef.FieldPath}
		default:
			out[e.Name] = envVar{source: "valueFrom"}
		}
	}
	return out, errs
}

// secretData is a Secret's values, stringData and data together (nil Secret: none).
func secretData(s *corev1.Secret) map[string]string {
	out := map[string]string{}
	if s == nil {
		return out
	}
	for k, b := range s.Data {
		out[k] = string(b)
	}
	for k, val := range s.StringData {
		out[k] = val
	}
	return out
}

// configOf is the configuration a container's broker or drain would run with.
func (v *variant) configOf(where string, c *corev1.Container) (config.Config, map[string]envVar, []error) {
	env, errs := v.containerEnv(where, c)
	plain := make(map[string]string, len(env))
	for k, e := range env {
		plain[k] = e.value
	}
	cfg, err := parseConfig(where, plain)
	if err != nil {
		errs = append(errs, err)
	}
	return cfg, env, errs
}

// brokerContainers are a workload's containers that run queen-server (the image's
// entrypoint: no command, or queen-server's).
func brokerContainers(w workload) []*corev1.Container {
	var out []*corev1.Container
	for i := range w.pod.Spec.Containers {
		c := &w.pod.Spec.Containers[i]
		if len(c.Command) == 0 || path.Base(c.Command[0]) == "queen-server" {
			out = append(out, c)
		}
	}
	return out
}

// drainContainer is the CronJob's container running queen-drain, or nil.
func drainContainer(cj *batchv1.CronJob) *corev1.Container {
	cs := cj.Spec.JobTemplate.Spec.Template.Spec.Containers
	for i := range cs {
		if len(cs[i].Command) > 0 && path.Base(cs[i].Command[0]) == "queen-drain" {
			return &cs[i]
		}
	}
	return nil
}

// allContainers lists every container of the variant's pods, named for messages.
func (v *variant) allContainers() map[string]*corev1.Container {
	out := map[string]*corev1.Container{}
	add := func(owner string, spec *corev1.PodSpec) {
		for i := range spec.InitContainers {
			out[owner+" initContainer "+spec.InitContainers[i].Name] = &spec.InitContainers[i]
		}
		for i := range spec.Containers {
			out[owner+" container "+spec.Containers[i].Name] = &spec.Containers[i]
		}
	}
	for _, w := range v.brokers {
		add(w.String(), &w.pod.Spec)
	}
	for _, cj := range v.drains {
		add("CronJob "+cj.Name, &cj.Spec.JobTemplate.Spec.Template.Spec)
	}
	return out
}

// checkEnvNames: every variable a ConfigMap, a Secret or a container sets is one the
// broker reads, so that a typo fails here instead of being silently ignored.
func checkEnvNames(v *variant) []error {
	var errs []error
	for _, cm := range sortedValues(v.configMaps) {
		for _, k := range slices.Sorted(mapKeys(cm.Data)) {
			errs = appendErr(errs, unknownVar(fmt.Sprintf("%s: ConfigMap %s", v.file[cm], cm.Name), k))
		}
	}
	for _, s := range sortedValues(v.secrets) {
		for _, k := range slices.Sorted(mapKeys(secretData(s))) {
			errs = appendErr(errs, unknownVar(fmt.Sprintf("%s: Secret %s", v.file[s], s.Name), k))
		}
	}
	containers := v.allContainers()
	for _, where := range slices.Sorted(mapKeys(containers)) {
		for _, e := range containers[where].Env {
			errs = appendErr(errs, unknownVar(where, e.Name))
		}
		for _, from := range containers[where].EnvFrom {
			if from.Prefix != "" {
				errs = append(errs, fmt.Errorf("%s: envFrom prefix %q: the broker's variables have none", where, from.Prefix))
			}
		}
	}
	return errs
}

// checkSecretsFromSecrets: a variable the broker treats as a secret (config.Variable.Secret)
// never sits in a ConfigMap or a literal value; and the example Secret holds placeholders
// only, so that no real credential is ever committed here.
func checkSecretsFromSecrets(v *variant) []error {
	var errs []error
	for _, cm := range sortedValues(v.configMaps) {
		for _, k := range slices.Sorted(mapKeys(cm.Data)) {
			if isSecretVar(k) {
				errs = append(errs, fmt.Errorf("%s: ConfigMap %s holds %s, a secret: put it in a Secret", v.file[cm], cm.Name, k))
			}
		}
	}
	containers := v.allContainers()
	for _, where := range slices.Sorted(mapKeys(containers)) {
		env, cerrs := v.containerEnv(where, containers[where])
		errs = append(errs, cerrs...)
		for _, k := range slices.Sorted(mapKeys(env)) {
			if isSecretVar(k) && !env[k].fromSecret() {
				errs = append(errs, fmt.Errorf("%s: %s (a secret) comes from %s: it must come from a Secret", where, k, env[k].source))
			}
		}
	}
	for _, s := range sortedValues(v.secrets) {
		for k, val := range secretData(s) {
			if !strings.Contains(val, "REPLACE-ME") {
				errs = append(errs, fmt.Errorf("%s: Secret %s: %s is not a placeholder (no REPLACE-ME in it): real secrets are created out of band", v.file[s], s.Name, k))
			}
		}
	}
	return errs
}

// checkBrokers: per broker container, what start-up, the kubelet and the shutdown need.
func checkBrokers(v *variant) []error {
	var errs []error
	for _, w := range v.brokers {
		cs := brokerContainers(w)
		if len(cs) == 0 {
			errs = append(errs, fmt.Errorf("%s: no container runs queen-server", w))
		}
		for _, c := range cs {
			where := fmt.Sprintf("%s container %s", w, c.Name)
			cfg, _, cerrs := v.configOf(where, c)
			if len(cerrs) > 0 {
				errs = append(errs, cerrs...)
				continue
			}
			if cfg.Embedded() {
				errs = append(errs, fmt.Errorf("%s: no QUEEN_PG_URL nor PG_*: the broker would start an embedded PostgreSQL, which the image does not have", where))
			}
			errs = append(errs, checkPorts(where, c, cfg)...)
			errs = append(errs, checkGrace(where, w.pod, c, cfg)...)
			if _, _, err := v.brokerSpool(w, c, cfg); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
			errs = append(errs, checkContainerHardening(where, &w.pod.Spec, c)...)
		}
	}
	return errs
}

// checkPorts: the container port named http is PORT, and the probes ask /ready
// (readiness) and /live (liveness, startup) on it; never /health, which answers 503
// while the database is down and would have spooling brokers killed.
func checkPorts(where string, c *corev1.Container, cfg config.Config) []error {
	var errs []error
	httpPort := int32(-1)
	for _, p := range c.Ports {
		if p.Name == "http" {
			httpPort = p.ContainerPort
		}
	}
	if httpPort != int32(cfg.Port) {
		errs = append(errs, fmt.Errorf("%s: container port named http is %d, want PORT=%d", where, httpPort, cfg.Port))
	}
	probes := []struct {
		name  string
		probe *corev1.Probe
		paths []string
	}{
		{"readinessProbe", c.ReadinessProbe, []string{"/ready"}},
		{"livenessProbe", c.LivenessProbe, []string{"/live"}},
		{"startupProbe", c.StartupProbe, []string{"/live", "/ready"}},
	}
	for _, p := range probes {
		if p.probe == nil {
			if p.name != "startupProbe" {
				errs = append(errs, fmt.Errorf("%s: no %s", where, p.name))
			}
			continue
		}
		get := p.probe.HTTPGet
		if get == nil {
			errs = append(errs, fmt.Errorf("%s: %s is not an httpGet", where, p.name))
			continue
		}
		if !slices.Contains(p.paths, get.Path) {
			errs = append(errs, fmt.Errorf("%s: %s asks %s, want %s", where, p.name, get.Path, strings.Join(p.paths, " or ")))
		}
		if port, err := resolvePort(c, get.Port); err != nil || port != int32(cfg.Port) {
			errs = append(errs, fmt.Errorf("%s: %s port %s is %d (%v), want PORT=%d", where, p.name, get.Port.String(), port, err, cfg.Port))
		}
		if get.Scheme != "" && get.Scheme != corev1.URISchemeHTTP {
			errs = append(errs, fmt.Errorf("%s: %s scheme %s: the broker serves plain HTTP", where, p.name, get.Scheme))
		}
	}
	return errs
}

// resolvePort is a port number or a container port's name as a number.
func resolvePort(c *corev1.Container, p intstr.IntOrString) (int32, error) {
	if p.Type == intstr.Int {
		return p.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("container %s has no port named %q", c.Name, p.StrVal)
}

// checkGrace: the pod's termination grace covers the preStop sleep, the broker's drain
// of in-flight requests (QUEEN_SHUTDOWN_TIMEOUT_MS) and fusion's last commits, which get
// DB_STATEMENT_TIMEOUT + 5 s whatever the shutdown deadline (App.stopComponents): a
// SIGKILL before that could cut short a push already accepted.
func checkGrace(where string, pod *corev1.PodTemplateSpec, c *corev1.Container, cfg config.Config) []error {
	var preStop time.Duration
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		switch h := c.Lifecycle.PreStop; {
		case h.Sleep != nil:
			preStop = time.Duration(h.Sleep.Seconds) * time.Second
		case h.Exec != nil:
			return []error{fmt.Errorf("%s: preStop exec: the image has no shell or sleep; use the sleep action", where)}
		default:
			return []error{fmt.Errorf("%s: preStop: only the sleep action is understood here", where)}
		}
	}
	grace := 30 * time.Second // the API's default
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	need := preStop + cfg.ShutdownTimeout + cfg.StatementTimeout + 5*time.Second
	if grace <= need {
		return []error{fmt.Errorf("%s: terminationGracePeriodSeconds %v is not more than preStop %v + QUEEN_SHUTDOWN_TIMEOUT_MS %v + DB_STATEMENT_TIMEOUT %v + 5s = %v",
			where, grace, preStop, cfg.ShutdownTimeout, cfg.StatementTimeout, need)}
	}
	return nil
}

// brokerSpool finds the volume mounted at the broker's spool directory (FILE_BUFFER_DIR,
// or the broker's default) and returns its claim and the directories, relative to the
// claim's root, that the workload's pods use. The spool holds pushes answered "buffered"
// until they are replayed: it must outlive the pod (a claim, never an emptyDir or the
// container's file system), and each pod needs its own directory (a second broker on a
// spool directory refuses to start), known in advance so that the drain job can name it.
func (v *variant) brokerSpool(w workload, c *corev1.Container, cfg config.Config) (string, []string, error) {
	spoolDir := cfg.SpoolDirs()[0]
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if path.Clean(c.VolumeMounts[i].MountPath) == path.Clean(spoolDir) {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil {
		return "", nil, fmt.Errorf("no volume is mounted at the spool directory %s (FILE_BUFFER_DIR): the spool would be lost with the container", spoolDir)
	}
	var vol *corev1.Volume
	for i := range w.pod.Spec.Volumes {
		if w.pod.Spec.Volumes[i].Name == mount.Name {
			vol = &w.pod.Spec.Volumes[i]
		}
	}
	switch {
	case vol == nil:
		return "", nil, fmt.Errorf("volume %s mounted at %s is not declared", mount.Name, spoolDir)
	case vol.PersistentVolumeClaim == nil:
		return "", nil, fmt.Errorf("the spool volume %s is not a persistentVolumeClaim: buffered pushes would be lost with the pod", vol.Name)
	}
	claim := vol.PersistentVolumeClaim.ClaimName
	pvc, ok := v.claims[claim]
	if !ok {
		return "", nil, fmt.Errorf("the spool claim %s is not in %s", claim, v.dir)
	}
	if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteMany) {
		return "", nil, fmt.Errorf("the spool claim %s is not ReadWriteMany: the drain job could not mount it beside running brokers", claim)
	}
	var dirs []string
	switch {
	case mount.SubPathExpr != "":
		if mount.SubPathExpr != "$(QUEEN_SERVER_ID)" || !isPodName(c, "QUEEN_SERVER_ID") {
			return "", nil, fmt.Errorf("subPathExpr %q: only $(QUEEN_SERVER_ID) set from metadata.name is understood", mount.SubPathExpr)
		}
		if w.kind != "StatefulSet" {
			return "", nil, fmt.Errorf("subPathExpr by pod name in a %s: its pods have random names, so no drain job could name a gone pod's spool", w.kind)
		}
		for i := range w.replicas {
			dirs = append(dirs, fmt.Sprintf("%s-%d", w.name, i))
		}
	default:
		if w.replicas != 1 {
			return "", nil, fmt.Errorf("%d replicas share the spool directory %q: all but one would refuse to start (flock)", w.replicas, mount.SubPath)
		}
		dirs = []string{path.Clean("/" + mount.SubPath)[1:]}
	}
	return claim, dirs, nil
}

// isPodName reports whether the container's variable name is the pod's name.
func isPodName(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath == "metadata.name"
		}
	}
	return false
}

// checkContainerHardening: non-root, read-only root file system, no privilege
// escalation, resources requested and limited.
func checkContainerHardening(where string, pod *corev1.PodSpec, c *corev1.Container) []error {
	var errs []error
	psc, csc := pod.SecurityContext, c.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	nonRoot := (psc.RunAsNonRoot != nil && *psc.RunAsNonRoot) || (csc.RunAsNonRoot != nil && *csc.RunAsNonRoot)
	if !nonRoot {
		errs = append(errs, fmt.Errorf("%s: runAsNonRoot is not true", where))
	}
	for _, uid := range []*int64{psc.RunAsUser, csc.RunAsUser} {
		if uid != nil && *uid == 0 {
			errs = append(errs, fmt.Errorf("%s: runAsUser 0", where))
		}
	}
	if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
		errs = append(errs, fmt.Errorf("%s: readOnlyRootFilesystem is not true", where))
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		errs = append(errs, fmt.Errorf("%s: allowPrivilegeEscalation is not false", where))
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			errs = append(errs, fmt.Errorf("%s: no %s request", where, r))
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			errs = append(errs, fmt.Errorf("%s: no %s limit", where, r))
		}
	}
	return errs
}

// checkService: a Service selects every broker's pods and sends to PORT, and selects no
// drain pod.
func checkService(v *variant) []error {
	var errs []error
	for _, w := range v.brokers {
		cs := brokerContainers(w)
		if len(cs) == 0 {
			continue // checkBrokers says so
		}
		cfg, _, cerrs := v.configOf(w.String(), cs[0])
		if len(cerrs) > 0 {
			continue // checkBrokers says so
		}
		found := false
		for _, svc := range v.services {
			if !selects(svc.Spec.Selector, w.pod.Labels) {
				continue
			}
			found = true
			for _, p := range svc.Spec.Ports {
				target := p.TargetPort
				if target.Type == intstr.Int && target.IntVal == 0 {
					target = intstr.FromInt32(p.Port) // the API's default: the same number
				}
				port, err := resolvePort(cs[0], target)
				if err != nil || port != int32(cfg.Port) {
					errs = append(errs, fmt.Errorf("%s: Service %s port %s targets %s = %d (%v), want the broker's PORT=%d",
						v.file[svc], svc.Name, p.Name, target.String(), port, err, cfg.Port))
				}
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("%s: no Service selects its pods (labels %v)", w, w.pod.Labels))
		}
	}
	for _, svc := range v.services {
		for _, cj := range v.drains {
			if selects(svc.Spec.Selector, cj.Spec.JobTemplate.Spec.Template.Labels) {
				errs = append(errs, fmt.Errorf("%s: Service %s selects the drain job's pods (CronJob %s)", v.file[svc], svc.Name, cj.Name))
			}
		}
	}
	return errs
}

// selects reports whether a Service selector matches pod labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, val := range selector {
		if labels[k] != val {
			return false
		}
	}
	return true
}

// checkDrain: a CronJob runs queen-drain, one at a time, with the deadlines it needs,
// and names every broker's spool directory on the claim it mounts.
func checkDrain(v *variant) []error {
	if len(v.drains) == 0 {
		return []error{fmt.Errorf("%s: no CronJob: nothing replays the spool of a broker that is gone", v.dir)}
	}
	var errs []error
	drained := map[string][]string{} // claim -> directories relative to its root
	for _, cj := range v.drains {
		where := fmt.Sprintf("%s: CronJob %s", v.file[cj], cj.Name)
		c := drainContainer(cj)
		if c == nil {
			errs = append(errs, fmt.Errorf("%s: no container whose command is queen-drain", where))
			continue
		}
		spec := &cj.Spec.JobTemplate.Spec
		if cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
			errs = append(errs, fmt.Errorf("%s: concurrencyPolicy %q, want Forbid: a second drain only finds the directories locked", where, cj.Spec.ConcurrencyPolicy))
		}
		cfg, _, cerrs := v.configOf(where, c)
		if len(cerrs) > 0 {
			errs = append(errs, cerrs...)
			continue
		}
		if cfg.Embedded() {
			errs = append(errs, fmt.Errorf("%s: no QUEEN_PG_URL nor PG_*: the drain has no database", where))
		}
		dirs, maxDur, err := drainArgs(c.Args)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		if len(dirs) == 0 {
			dirs = cfg.DrainDirs
		}
		if len(dirs) == 0 {
			dirs = cfg.SpoolDirs()[:1]
		}
		// The job stops draining at --max-duration, then gives its last commits
		// DB_STATEMENT_TIMEOUT + 5 s; SIGTERM (activeDeadlineSeconds) also gets that.
		closing := cfg.StatementTimeout + 5*time.Second
		if d := spec.ActiveDeadlineSeconds; d != nil && maxDur > 0 && time.Duration(*d)*time.Second <= maxDur+closing {
			errs = append(errs, fmt.Errorf("%s: activeDeadlineSeconds %d is not more than --max-duration %v + %v of closing", where, *d, maxDur, closing))
		}
		if g := spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= closing {
			errs = append(errs, fmt.Errorf("%s: terminationGracePeriodSeconds must exceed DB_STATEMENT_TIMEOUT + 5 s = %v", where, closing))
		}
		for _, d := range dirs {
			claim, rel, err := claimPath(&spec.Template.Spec, c, d)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: drain directory %s: %w", where, d, err))
				continue
			}
			drained[claim] = append(drained[claim], rel)
		}
		errs = append(errs, checkContainerHardening(where, &spec.Template.Spec, c)...)
	}
	for _, w := range v.brokers {
		for _, c := range brokerContainers(w) {
			cfg, _, cerrs := v.configOf(w.String(), c)
			if len(cerrs) > 0 {
				continue // checkBrokers says so
			}
			claim, dirs, err := v.brokerSpool(w, c, cfg)
			if err != nil {
				continue // checkBrokers says so
			}
			for _, d := range dirs {
				if !slices.Contains(drained[claim], d) {
					errs = append(errs, fmt.Errorf("%s: its spool directory %q on claim %s is drained by no CronJob (they drain %v)", w, d, claim, drained[claim]))
				}
			}
		}
	}
	return errs
}

// drainArgs reads queen-drain's --dir and --max-duration flags.
func drainArgs(args []string) (dirs []string, maxDur time.Duration, err error) {
	for i := 0; i < len(args); i++ {
		flag := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(flag, "-"), "=")
		if !hasVal && i+1 < len(args) {
			i++
			val = args[i]
		}
		switch name {
		case "dir":
			for _, d := range strings.Split(val, ",") {
				if d = strings.TrimSpace(d); d != "" {
					dirs = append(dirs, d)
				}
			}
		case "max-duration":
			if maxDur, err = time.ParseDuration(val); err != nil {
				return nil, 0, fmt.Errorf("--max-duration %q: %w", val, err)
			}
		default:
			return nil, 0, fmt.Errorf("queen-drain has no flag %q", flag)
		}
	}
	return dirs, maxDur, nil
}

// claimPath is the claim holding dir in a pod and dir's path relative to the claim's root.
func claimPath(pod *corev1.PodSpec, c *corev1.Container, dir string) (string, string, error) {
	dir = path.Clean(dir)
	var best *corev1.VolumeMount
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		mp := path.Clean(m.MountPath)
		if (dir == mp || strings.HasPrefix(dir, mp+"/")) && (best == nil || len(mp) > len(path.Clean(best.MountPath))) {
			best = m
		}
	}
	if best == nil {
		return "", "", errors.New("no volume is mounted there")
	}
	for _, vol := range pod.Volumes {
		if vol.Name != best.Name {
			continue
		}
		if vol.PersistentVolumeClaim == nil {
			return "", "", fmt.Errorf("volume %s is not a persistentVolumeClaim", vol.Name)
		}
		rel := path.Join("/", best.SubPath, strings.TrimPrefix(dir, path.Clean(best.MountPath)))
		return vol.PersistentVolumeClaim.ClaimName, rel[1:], nil
	}
	return "", "", fmt.Errorf("volume %s is not declared", best.Name)
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

func sortedValues[V any](m map[string]V) []V {
	out := make([]V, 0, len(m))
	for _, k := range slices.Sorted(mapKeys(m)) {
		out = append(out, m[k])
	}
	return out
}
