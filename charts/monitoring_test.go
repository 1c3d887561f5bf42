package charts_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/testing/monitoring"
)

// rulesTests are the `promtool test rules` cases of the hub's alerts; their rule_files entry
// names the rules file by its base name, which the test writes beside them.
const rulesTests = "testdata/rayfleet-hub.rules.test.yaml"

// promRuleAPI is what `helm template --api-versions` passes for a cluster that serves
// PrometheusRules.
const promRuleAPI = "monitoring.coreos.com/v1/PrometheusRule"

// runTool runs a tool of `make tools` in dir and returns its combined output.
func runTool(t *testing.T, dir string, stdin []byte, name string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(tool(t, name), args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}

// The dashboards are ConfigMaps for Grafana's sidecar, one per file, each holding the file as
// it is; the toggle, namespace, labels and annotations are honoured.
func TestDashboardConfigMaps(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(hubChart, monitoring.DashboardsDir, "*.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("dashboards: %v %v", files, err)
	}
	want := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want["rayfleet-"+filepath.Base(f)] = data
	}
	uids := map[string]string{}
	for _, cm := range mustRender(t, hubChart).ofKind("ConfigMap") {
		if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != releaseNS {
			t.Errorf("ConfigMap %s/%s has labels %v, want grafana_dashboard: \"1\" in %s", cm.Namespace, cm.Name, cm.Labels, releaseNS)
		}
		var obj struct {
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(cm.YAML, &obj); err != nil {
			t.Fatal(err)
		}
		for key, body := range obj.Data {
			if body != strings.TrimSuffix(string(want[key]), "\n") {
				t.Errorf("ConfigMap %s key %s is not the dashboard file", cm.Name, key)
			}
			var d struct{ UID, Title string }
			if err := json.Unmarshal([]byte(body), &d); err != nil || d.UID == "" || d.Title == "" {
				t.Errorf("ConfigMap %s key %s: uid %q title %q: %v", cm.Name, key, d.UID, d.Title, err)
			}
			if other, dup := uids[d.UID]; dup {
				t.Errorf("dashboards %s and %s share uid %s", other, key, d.UID)
			}
			uids[d.UID] = key
			delete(want, key)
		}
	}
	if len(want) > 0 {
		t.Errorf("dashboards without a ConfigMap: %v", want)
	}

	if cms := mustRender(t, hubChart, "metrics.dashboards.enabled=false").ofKind("ConfigMap"); len(cms) != 0 {
		t.Errorf("metrics.dashboards.enabled=false rendered %d ConfigMaps", len(cms))
	}
	cms := mustRender(t, hubChart, "metrics.dashboards.namespace=monitoring",
		// Helm merges a map into the default: the sidecar's label stays.
		"json:metrics.dashboards.labels={\"team\":\"ray\"}", "json:metrics.dashboards.annotations={\"grafana_folder\":\"RayFleet\"}").ofKind("ConfigMap")
	for _, cm := range cms {
		if cm.Namespace != "monitoring" || cm.Labels["team"] != "ray" || cm.Labels["grafana_dashboard"] != "1" ||
			!bytes.Contains(cm.YAML, []byte("grafana_folder: RayFleet")) {
			t.Errorf("ConfigMap %s/%s labels %v ignores the namespace, labels or annotations set", cm.Namespace, cm.Name, cm.Labels)
		}
	}
}

// The PrometheusRule is rendered when asked, or on "auto" when the cluster serves the kind,
// and carries the rules file unchanged.
func TestPrometheusRuleToggle(t *testing.T) {
	tests := []struct {
		enabled string
		api     bool
		want    int
	}{
		{enabled: "auto", want: 0},
		{enabled: "auto", api: true, want: 1},
		{enabled: "true", want: 1},
		{enabled: "false", api: true, want: 0},
	}
	for _, tt := range tests {
		args := []string{"template", hubChart, hubChart, "--namespace", releaseNS,
			"--set", "metrics.prometheusRule.enabled=" + tt.enabled, "--set", "metrics.prometheusRule.labels.release=kps"}
		if tt.api {
			args = append(args, "--api-versions", promRuleAPI)
		}
		out, err := runHelm(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		rules := parseManifests(t, out).ofKind("PrometheusRule")
		if len(rules) != tt.want {
			t.Errorf("enabled=%s api=%v: %d PrometheusRules, want %d", tt.enabled, tt.api, len(rules), tt.want)
			continue
		}
		if tt.want == 1 {
			if rules[0].Labels["release"] != "kps" {
				t.Errorf("PrometheusRule labels %v lack metrics.prometheusRule.labels", rules[0].Labels)
			}
			if got := renderedRules(t, rules[0]); !bytes.Equal(got, mustYAML(t, readRules(t))) {
				t.Errorf("PrometheusRule spec differs from %s:\n%s", monitoring.RulesFile, got)
			}
		}
	}
	if _, err := render(t, hubChart, "metrics.prometheusRule.enabled=yes"); err == nil {
		t.Error("metrics.prometheusRule.enabled=yes rendered, want a schema error")
	}
}

// renderedRules is a PrometheusRule's spec as a rules file, normalised through YAML.
func renderedRules(t *testing.T, o object) []byte {
	t.Helper()
	var pr struct {
		APIVersion string                `json:"apiVersion"`
		Kind       string                `json:"kind"`
		Metadata   map[string]any        `json:"metadata"`
		Spec       monitoring.RuleGroups `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(o.YAML, &pr); err != nil {
		t.Fatalf("PrometheusRule %s: %v", o.Name, err)
	}
	return mustYAML(t, pr.Spec)
}

func readRules(t *testing.T) monitoring.RuleGroups {
	t.Helper()
	g, err := monitoring.Rules(hubChart)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The alerts, as the chart renders them, pass `promtool check rules` (syntax, templates, lint)
// and their unit tests (`promtool test rules`), which feed them series and assert which alerts
// fire with which labels and text.
func TestAlertRules(t *testing.T) {
	out, err := runHelm(t, "template", hubChart, hubChart, "--namespace", releaseNS, "--api-versions", promRuleAPI)
	if err != nil {
		t.Fatal(err)
	}
	rules := parseManifests(t, out).ofKind("PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules rendered, want 1", len(rules))
	}
	dir := t.TempDir()
	rulesFile := filepath.Join(dir, filepath.Base(monitoring.RulesFile))
	if err := os.WriteFile(rulesFile, renderedRules(t, rules[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(rulesTests)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runTool(t, dir, nil, "promtool", "check", "rules", "--lint-fatal", filepath.Base(rulesFile)); err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := runTool(t, dir, nil, "promtool", "test", "rules", "tests.yaml"); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}
	// Every alert has a test: an alert no test fires is an alert nobody saw work.
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if !bytes.Contains(tests, []byte("alertname: "+r.Alert+"\n")) {
				t.Errorf("alert %s has no case in %s", r.Alert, rulesTests)
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if r.Annotations[a] == "" {
					t.Errorf("alert %s has no %s annotation", r.Alert, a)
				}
			}
		}
	}
}

// Every dashboard panel's and variable's expression parses with Prometheus' own parser (as
// recording rules under `promtool check rules`), and selects metrics by name.
func TestDashboardExpressions(t *testing.T) {
	exprs, err := monitoring.Dashboards(hubChart)
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 30 {
		t.Fatalf("only %d dashboard expressions found", len(exprs))
	}
	rules, err := monitoring.RecordingRules(exprs)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboards.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runTool(t, dir, nil, "promtool", "check", "rules", "dashboards.yaml"); err != nil {
		t.Errorf("promtool check rules on the dashboards' expressions: %v\n%s", err, out)
	}
	alerts, err := monitoring.AlertExprs(hubChart)
	if err != nil {
		t.Fatal(err)
	}
	names, err := monitoring.MetricNames(tool(t, "promql-names"), append(exprs, alerts...))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range append(exprs, alerts...) {
		if len(names[i]) == 0 {
			t.Errorf("%s: %q selects no metric", e.Source, e.Expr)
		}
	}
}
