package deploy

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// k8sDir holds the Kubernetes manifests; every kustomization under it is a variant that
// can be applied (kubectl apply -k).
const k8sDir = "kubernetes"

// kinds are the objects a manifest may hold, by apiVersion and kind, each decoded into
// its typed Kubernetes API struct. Anything else is refused: a kind the tests cannot
// decode is a kind they cannot check.
var kinds = map[string]func() any{
	"v1/ConfigMap":                  func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                     func() any { return &corev1.Secret{} },
	"v1/Service":                    func() any { return &corev1.Service{} },
	"v1/PersistentVolumeClaim":      func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/Deployment":            func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":           func() any { return &appsv1.StatefulSet{} },
	"batch/v1/CronJob":              func() any { return &batchv1.CronJob{} },
	"policy/v1/PodDisruptionBudget": func() any { return &policyv1.PodDisruptionBudget{} },
}

// kustomization is the part of kustomize's Kustomization these manifests use; decoded
// strictly too, so a field added to a kustomization.yaml must be added here (and its
// meaning to render) before the tests accept it.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// object is one decoded manifest document and where it came from.
type object struct {
	file string // path relative to this directory
	obj  any    // one of kinds' types
}

// docSeparator splits a multi-document YAML file.
var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// decodeManifests decodes every document of one manifest file strictly: each into the
// typed object of its apiVersion and kind, with unknown and duplicate fields refused.
func decodeManifests(file string, data []byte) ([]object, error) {
	var out []object
	for i, doc := range docSeparator.Split(string(data), -1) {
		if isBlankYAML(doc) {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, i+1, err)
		}
		gvk := tm.APIVersion + "/" + tm.Kind
		newObj, ok := kinds[gvk]
		if !ok {
			return nil, fmt.Errorf("%s: document %d: unknown kind %q (apiVersion %q): the tests decode %s",
				file, i+1, tm.Kind, tm.APIVersion, strings.Join(slices.Sorted(mapKeys(kinds)), ", "))
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", file, i+1, gvk, err)
		}
		out = append(out, object{file: file, obj: obj})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no manifest in it", file)
	}
	return out, nil
}

// isBlankYAML reports whether a document holds only comments and blank lines.
func isBlankYAML(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// decodeKustomization decodes a kustomization.yaml strictly.
func decodeKustomization(file string, data []byte) (kustomization, error) {
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return k, fmt.Errorf("%s: %w", file, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		return k, fmt.Errorf("%s: apiVersion %q kind %q, want kustomize.config.k8s.io/v1beta1 Kustomization", file, k.APIVersion, k.Kind)
	}
	if len(k.Resources) == 0 {
		return k, fmt.Errorf("%s: no resources", file)
	}
	return k, nil
}

// render is what `kubectl apply -k dir` applies, as far as these kustomizations go
// (resources only: files and other kustomization directories), and every file read.
func render(dir string) ([]object, []string, error) {
	kfile := path.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(filepath.FromSlash(kfile))
	if err != nil {
		return nil, nil, fmt.Errorf("render %s: %w", dir, err)
	}
	k, err := decodeKustomization(kfile, data)
	if err != nil {
		return nil, nil, err
	}
	var objs []object
	files := []string{kfile}
	for _, r := range k.Resources {
		p := path.Join(dir, r)
		st, err := os.Stat(filepath.FromSlash(p))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: resource %s: %w", kfile, r, err)
		}
		if st.IsDir() {
			o, f, err := render(p)
			if err != nil {
				return nil, nil, err
			}
			objs, files = append(objs, o...), append(files, f...)
			continue
		}
		b, err := os.ReadFile(filepath.FromSlash(p))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: resource %s: %w", kfile, r, err)
		}
		o, err := decodeManifests(p, b)
		if err != nil {
			return nil, nil, err
		}
		objs, files = append(objs, o...), append(files, p)
	}
	// kustomize refuses two objects of one kind and name; so does the test, early.
	seen := map[string]string{}
	for _, o := range objs {
		id := fmt.Sprintf("%T %s", o.obj, metaOf(o.obj).Name)
		if prev, dup := seen[id]; dup {
			return nil, nil, fmt.Errorf("%s: %s is in both %s and %s", kfile, id, prev, o.file)
		}
		seen[id] = o.file
	}
	return objs, files, nil
}

// metaOf is an object's metadata.
func metaOf(obj any) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

// yamlFiles lists the YAML files under dir.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
			out = append(out, filepath.ToSlash(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("no YAML file under %s", dir)
	}
	return out
}

// variantDirs are the directories holding a kustomization.yaml that is not only a base
// for others: the ones a user applies.
func variantDirs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range yamlFiles(t, k8sDir) {
		if path.Base(f) == "kustomization.yaml" && path.Base(path.Dir(f)) != "base" {
			out = append(out, path.Dir(f))
		}
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestManifestsDecodeStrictly decodes every YAML file under deploy/kubernetes into its
// typed Kubernetes object (or a Kustomization), refusing unknown fields and kinds.
func TestManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	for _, f := range yamlFiles(t, k8sDir) {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			data := readFile(t, f)
			var err error
			if path.Base(f) == "kustomization.yaml" {
				_, err = decodeKustomization(f, data)
			} else {
				_, err = decodeManifests(f, data)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
}

// TestEveryManifestIsApplied fails on a manifest that no kustomization reaches: it would
// be checked here and never deployed.
func TestEveryManifestIsApplied(t *testing.T) {
	t.Parallel()
	reached := map[string]bool{}
	for _, dir := range variantDirs(t) {
		_, files, err := render(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			reached[f] = true
		}
	}
	for _, f := range yamlFiles(t, k8sDir) {
		if !reached[f] {
			t.Errorf("%s is in no kustomization's resources", f)
		}
	}
}

// TestDecoderRefuses makes sure the strict decoding above refuses what it must: a test
// of the test, so that a passing TestManifestsDecodeStrictly means something.
func TestDecoderRefuses(t *testing.T) {
	t.Parallel()
	const service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: queen\nspec:\n  ports:\n    - port: 6632\n"
	cases := []struct {
		name    string
		doc     string
		wantErr string // "" when the document must decode
	}{
		{name: "valid service", doc: service},
		{name: "comment-only documents are skipped", doc: "# a comment\n---\n" + service + "---\n"},
		{name: "unknown field", doc: strings.Replace(service, "  ports:", "  portz:", 1), wantErr: `unknown field "portz"`},
		{name: "misplaced field", doc: service + "  containerPort: 1\n", wantErr: "unknown field"},
		{name: "duplicate field", doc: service + "metadata:\n  name: other\n", wantErr: "already set"},
		{name: "wrong type", doc: strings.Replace(service, "port: 6632", "port: http", 1), wantErr: "cannot unmarshal"},
		{name: "unknown kind", doc: "apiVersion: v1\nkind: Servise\nmetadata:\n  name: q\n", wantErr: `unknown kind "Servise"`},
		{name: "kind under the wrong apiVersion", doc: "apiVersion: apps/v1\nkind: Service\n", wantErr: "unknown kind"},
		{name: "no kind at all", doc: "metadata:\n  name: q\n", wantErr: "unknown kind"},
		{name: "empty file", doc: "# nothing\n", wantErr: "no manifest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := decodeManifests("case.yaml", []byte(tc.doc))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("decode: %v, want success", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("decode: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
	t.Run("kustomization with an unknown field", func(t *testing.T) {
		t.Parallel()
		_, err := decodeKustomization("k.yaml", []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [a.yaml]\nresource: [b.yaml]\n"))
		if err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("decode: %v, want an unknown-field error", err)
		}
	})
}
