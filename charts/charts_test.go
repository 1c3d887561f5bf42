// Package charts_test checks the Helm charts rayfleet-hub and rayfleet-spoke without a cluster:
// `helm lint --strict`, and assertions on `helm template` output (RBAC against the generated and
// shared/hubaccess rules, Deployments, values the schema rejects, every value in the READMEs),
// and the hub chart's dashboards and alerts with promtool (monitoring_test.go).
// It imports only shared/hubaccess, shared/testing/monitoring and spoke/features (the gates the schema
// admits).
package charts_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/spoke/features"
)

// The charts under test, as directories of this package, and the release each test installs.
// The namespace is not the binaries' default (rayfleet-system), so that a test notices a
// template that hard-codes it instead of following the release.
const (
	hubChart   = "rayfleet-hub"
	spokeChart = "rayfleet-spoke"
	releaseNS  = "fleet-system"
)

// helm returns the path of the helm binary that `make tools` builds.
func helm(t *testing.T) string {
	t.Helper()
	return tool(t, "helm")
}

// tool returns the path of a tool `make tools` builds: in $KUBEBUILDER_ASSETS, then
// $RAYFLEET_K8S_BIN, then the repository's bin/k8s, as the other tests find their tools.
func tool(t *testing.T, name string) string {
	t.Helper()
	var dirs []string
	for _, env := range []string{"KUBEBUILDER_ASSETS", "RAYFLEET_K8S_BIN"} {
		if d := os.Getenv(env); d != "" {
			dirs = append(dirs, d)
		}
	}
	dirs = append(dirs, filepath.Join("..", "bin", "k8s"))
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p
		}
	}
	t.Fatalf("%s not found in %v: run make tools", name, dirs)
	return ""
}

// runHelm runs helm with args and returns its standard output, or an error carrying its
// standard error.
func runHelm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm(t), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New(strings.TrimSpace(err.Error() + ": " + stderr.String() + stdout.String()))
	}
	return stdout.Bytes(), nil
}

// object is one rendered manifest: what identifies it, and its YAML.
type object struct {
	Kind, Name, Namespace string
	Labels                map[string]string
	YAML                  []byte
}

// manifests are the objects of one `helm template`.
type manifests []object

// render runs `helm template` of chart as release chart in releaseNS with the --set
// arguments set (each "key=value"; a value starting with "json:" is passed with --set-json).
func render(t *testing.T, chart string, set ...string) (manifests, error) {
	t.Helper()
	args := []string{"template", chart, chart, "--namespace", releaseNS}
	for _, s := range set {
		if v, ok := strings.CutPrefix(s, "json:"); ok {
			args = append(args, "--set-json", v)
		} else {
			args = append(args, "--set", s)
		}
	}
	out, err := runHelm(t, args...)
	if err != nil {
		return nil, err
	}
	return parseManifests(t, out), nil
}

// mustRender is render for values that must render.
func mustRender(t *testing.T, chart string, set ...string) manifests {
	t.Helper()
	m, err := render(t, chart, set...)
	if err != nil {
		t.Fatalf("helm template %s %v: %v", chart, set, err)
	}
	return m
}

// parseManifests splits a multi-document YAML stream into objects, skipping empty documents.
func parseManifests(t *testing.T, data []byte) manifests {
	t.Helper()
	var out manifests
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading rendered YAML: %v", err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string            `json:"name"`
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("parsing rendered document %q: %v", doc, err)
		}
		if meta.Kind == "" {
			continue // a template that rendered nothing but a comment
		}
		out = append(out, object{
			Kind: meta.Kind, Name: meta.Metadata.Name, Namespace: meta.Metadata.Namespace,
			Labels: meta.Metadata.Labels, YAML: doc,
		})
	}
}

// ofKind returns the objects of kind.
func (m manifests) ofKind(kind string) []object {
	var out []object
	for _, o := range m {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// decode strictly decodes the only object of kind named name into into, failing the test when
// there is not exactly one or it has fields the type does not know (a mis-indented template).
func (m manifests) decode(t *testing.T, kind, name string, into any) {
	t.Helper()
	var found []object
	for _, o := range m.ofKind(kind) {
		if o.Name == name {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("found %d %s objects named %q, want 1", len(found), kind, name)
	}
	if err := yaml.UnmarshalStrict(found[0].YAML, into); err != nil {
		t.Fatalf("decoding %s %s: %v", kind, name, err)
	}
}

func TestLint(t *testing.T) {
	tests := []struct {
		chart string
		set   []string
	}{
		{chart: hubChart},
		{chart: hubChart, set: []string{"replicas=2", "metrics.serviceMonitor.enabled=true"}},
		{chart: spokeChart},
		{chart: spokeChart, set: []string{"replicas=2", "metrics.serviceMonitor.enabled=true", "hubAccess.create=false"}},
		{chart: spokeChart, set: []string{"hubPolicy.enabled=false", "hubPolicy.allowHostNetwork=true"}},
	}
	for _, tt := range tests {
		t.Run(tt.chart+strings.Join(tt.set, ","), func(t *testing.T) {
			args := []string{"lint", "--strict", tt.chart, "--namespace", releaseNS}
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			if out, err := runHelm(t, args...); err != nil {
				t.Fatalf("helm %v: %v\n%s", args, err, out)
			}
		})
	}
}

// A typo or a wrong type in the values fails the install with the offending key named,
// rather than being ignored.
func TestBadValuesFail(t *testing.T) {
	tests := []struct {
		name      string
		charts    []string
		set       []string
		wantInErr string
	}{
		{name: "replicas not a number", charts: []string{hubChart, spokeChart}, set: []string{"json:replicas=\"two\""}, wantInErr: "/replicas"},
		{name: "negative replicas", charts: []string{hubChart, spokeChart}, set: []string{"replicas=-1"}, wantInErr: "/replicas"},
		{name: "unknown log format", charts: []string{hubChart, spokeChart}, set: []string{"logging.format=xml"}, wantInErr: "/logging/format"},
		{name: "unknown log level", charts: []string{hubChart, spokeChart}, set: []string{"logging.level=verbose"}, wantInErr: "/logging/level"},
		{name: "unknown top-level key", charts: []string{hubChart, spokeChart}, set: []string{"replica=2"}, wantInErr: "'replica'"},
		{name: "unknown nested key", charts: []string{hubChart, spokeChart}, set: []string{"kubeAPI.qpss=5"}, wantInErr: "'qpss'"},
		{name: "unknown pull policy", charts: []string{hubChart, spokeChart}, set: []string{"image.pullPolicy=Sometimes"}, wantInErr: "/image/pullPolicy"},
		{name: "port out of range", charts: []string{hubChart, spokeChart}, set: []string{"metrics.port=70000"}, wantInErr: "/metrics/port"},
		{name: "duration without unit", charts: []string{hubChart}, set: []string{"heartbeatTimeout=40"}, wantInErr: "/heartbeatTimeout"},
		{name: "duration misspelt", charts: []string{hubChart}, set: []string{"resync=10 seconds"}, wantInErr: "/resync"},
		{name: "hub name not a label value", charts: []string{hubChart}, set: []string{"hubName=east hub"}, wantInErr: "/hubName"},
		{name: "report interval misspelt", charts: []string{spokeChart}, set: []string{"reportInterval=often"}, wantInErr: "/reportInterval"},
		{name: "hub values on the spoke", charts: []string{spokeChart}, set: []string{"memberAPI.qps=5"}, wantInErr: "'memberAPI'"},
		{name: "spoke values on the hub", charts: []string{hubChart}, set: []string{"reportInterval=5s"}, wantInErr: "'reportInterval'"},
		// The spoke does not run RayJobs; KubeRay's RayJob gates would only fail at start.
		{name: "RayJob feature gate", charts: []string{spokeChart}, set: []string{"featureGates.RayJobDeletionPolicy=true"}, wantInErr: "'RayJobDeletionPolicy'"},
		{name: "feature gate not a bool", charts: []string{spokeChart}, set: []string{"featureGates.RayMultiHostIndexing=on"}, wantInErr: "/featureGates/RayMultiHostIndexing"},
		{name: "unknown hub policy key", charts: []string{spokeChart}, set: []string{"hubPolicy.allowPrivileged=true"}, wantInErr: "'allowPrivileged'"},
		{name: "unknown Pod Security level", charts: []string{spokeChart}, set: []string{"hubPolicy.minPodSecurityLevel=strict"}, wantInErr: "/hubPolicy/minPodSecurityLevel"},
		{name: "no worker groups", charts: []string{spokeChart}, set: []string{"hubPolicy.maxWorkerGroups=0"}, wantInErr: "/hubPolicy/maxWorkerGroups"},
		{name: "sidecar without an image", charts: []string{spokeChart}, set: []string{`json:headSidecarContainers=[{"name":"fluentbit"}]`}, wantInErr: "/headSidecarContainers/0"},
		{name: "sidecar name not a DNS label", charts: []string{spokeChart}, set: []string{`json:workerSidecarContainers=[{"name":"Ship_Logs","image":"x"}]`}, wantInErr: "/workerSidecarContainers/0/name"},
		{name: "sidecar not a list", charts: []string{spokeChart}, set: []string{`json:headSidecarContainers={"name":"x"}`}, wantInErr: "/headSidecarContainers"},
		{name: "capability in lower case", charts: []string{spokeChart}, set: []string{`json:hubPolicy.allowedCapabilities=["sys_admin"]`}, wantInErr: "/hubPolicy/allowedCapabilities/0"},
		{name: "GatewayClass not a name", charts: []string{spokeChart}, set: []string{`json:hubPolicy.allowedGatewayClasses=[""]`}, wantInErr: "/hubPolicy/allowedGatewayClasses/0"},
		{
			name: "several replicas without leader election", charts: []string{hubChart, spokeChart},
			set: []string{"replicas=2", "leaderElection.enabled=false"}, wantInErr: "leaderElection.enabled",
		},
	}
	for _, tt := range tests {
		for _, chart := range tt.charts {
			t.Run(chart+"/"+tt.name, func(t *testing.T) {
				_, err := render(t, chart, tt.set...)
				if err == nil {
					t.Fatalf("helm template with %v succeeded, want an error naming %s", tt.set, tt.wantInErr)
				}
				if !strings.Contains(err.Error(), tt.wantInErr) {
					t.Errorf("helm template with %v failed with %q, want it to name %s", tt.set, err, tt.wantInErr)
				}
			})
		}
	}
}

// The chart READMEs document every value: each leaf key of values.yaml appears in them as
// `key.path` (a map or list that is empty by default is a leaf).
func TestREADMEDocumentsEveryValue(t *testing.T) {
	for _, chart := range []string{hubChart, spokeChart} {
		t.Run(chart, func(t *testing.T) {
			values := readValues(t, chart)
			readme, err := os.ReadFile(filepath.Join(chart, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			leaves := leafKeys("", values)
			if len(leaves) < 30 {
				t.Fatalf("found only %d values in %s/values.yaml: %v", len(leaves), chart, leaves)
			}
			for _, key := range leaves {
				if !bytes.Contains(readme, []byte("`"+key+"`")) {
					t.Errorf("%s/README.md does not document `%s`", chart, key)
				}
			}
		})
	}
}

// The schema admits exactly the feature gates the spoke registers, so that a gate the
// binary would reject fails at install time instead.
func TestSpokeSchemaFeatureGates(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(spokeChart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			FeatureGates struct {
				Properties           map[string]any `json:"properties"`
				AdditionalProperties *bool          `json:"additionalProperties"`
			} `json:"featureGates"`
		} `json:"properties"`
	}
	if err := yaml.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	gates := schema.Properties.FeatureGates
	var names []string
	for name := range gates.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	if !slices.Equal(names, features.Names()) {
		t.Errorf("schema's featureGates = %v, want the spoke's gates %v", names, features.Names())
	}
	if gates.AdditionalProperties == nil || *gates.AdditionalProperties {
		t.Error("schema's featureGates admits other names, want additionalProperties: false")
	}
}

// readValues parses chart's values.yaml.
func readValues(t *testing.T, chart string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chart, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatalf("parsing %s/values.yaml: %v", chart, err)
	}
	return values
}

// leafKeys returns the dotted paths of the leaves under v, sorted.
func leafKeys(prefix string, v any) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return []string{prefix}
	}
	var out []string
	for k, child := range m {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		out = append(out, leafKeys(path, child)...)
	}
	sort.Strings(out)
	return out
}
