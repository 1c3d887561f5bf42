package raydashboard

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

func TestParseServeConfig(t *testing.T) {
	type app struct {
		Name        string
		Route       *string
		Deployments []string
	}
	tests := []struct {
		name     string
		body     string
		wantApps []app
		wantTC   *float64
		wantErr  string
	}{
		{name: "KubeRay's sample", body: `{"applications":[
			{"name":"fruit_app","import_path":"fruit.deployment_graph","route_prefix":"/fruit",
			 "runtime_env":{"working_dir":"https://example/x.zip"},
			 "deployments":[{"name":"MangoStand","num_replicas":1,"user_config":{"price":3}},{"name":"FruitMarket"}]},
			{"name":"math_app","import_path":"conditional_dag.serve_dag","route_prefix":"/calc",
			 "deployments":[{"name":"Adder"}]}]}`,
			wantApps: []app{
				{Name: "fruit_app", Route: ptr.To("/fruit"), Deployments: []string{"MangoStand", "FruitMarket"}},
				{Name: "math_app", Route: ptr.To("/calc"), Deployments: []string{"Adder"}},
			}},
		{name: "defaults: name, route, deployment from import path with colon",
			body:     `{"applications":[{"import_path":"text_ml:app"}]}`,
			wantApps: []app{{Name: "default", Route: ptr.To("/"), Deployments: []string{"app"}}}},
		{name: "empty name is the default one; deployment from a dotted import path",
			body:     `{"applications":[{"name":"","import_path":"fruit.deployment_graph","deployments":[]}]}`,
			wantApps: []app{{Name: "default", Route: ptr.To("/"), Deployments: []string{"deployment_graph"}}}},
		{name: "null route means no route; two of them do not clash",
			body:     `{"applications":[{"name":"a","import_path":"m:a","route_prefix":null},{"name":"b","import_path":"m:b","route_prefix":null}]}`,
			wantApps: []app{{Name: "a", Deployments: []string{"a"}}, {Name: "b", Deployments: []string{"b"}}}},
		{name: "target capacity", body: `{"target_capacity":37.5,"applications":[]}`, wantTC: ptr.To(37.5)},
		{name: "null target capacity", body: `{"target_capacity":null,"applications":[]}`},
		{name: "no applications is valid: Serve runs with none", body: `{"applications":[],"http_options":{"port":8000}}`},

		{name: "not JSON", body: `applications: []`, wantErr: "not a JSON object"},
		{name: "null", body: `null`, wantErr: "not a JSON object: null"},
		{name: "a list", body: `[]`, wantErr: "not a JSON object"},
		{name: "no applications", body: `{"target_capacity":50}`, wantErr: "applications: field required"},
		{name: "applications not a list", body: `{"applications":{"a":{}}}`, wantErr: "applications: must be a list, got an object"},
		{name: "application not an object", body: `{"applications":["a"]}`, wantErr: "applications[0]: must be an object, got a string"},
		{name: "no import path", body: `{"applications":[{"name":"a"}]}`, wantErr: "applications[0]: import_path: field required"},
		{name: "import path not a string", body: `{"applications":[{"name":"a","import_path":3}]}`, wantErr: "import_path: must be a string, got a number"},
		{name: "name not a string", body: `{"applications":[{"name":true,"import_path":"m:a"}]}`, wantErr: "name: must be a string, got a boolean"},
		{name: "duplicate names", body: `{"applications":[{"name":"a","import_path":"m:a","route_prefix":"/a"},{"name":"a","import_path":"m:b","route_prefix":"/b"}]}`,
			wantErr: `multiple applications named "a"`},
		{name: "duplicate default names", body: `{"applications":[{"import_path":"m:a","route_prefix":"/a"},{"import_path":"m:b","route_prefix":"/b"}]}`,
			wantErr: `multiple applications named "default"`},
		{name: "duplicate routes, default ones included", body: `{"applications":[{"name":"a","import_path":"m:a"},{"name":"b","import_path":"m:b"}]}`,
			wantErr: `"a" and "b" both have route_prefix "/"`},
		{name: "route without leading slash", body: `{"applications":[{"name":"a","import_path":"m:a","route_prefix":"a"}]}`,
			wantErr: `route_prefix: "a" must start with "/"`},
		{name: "route not a string", body: `{"applications":[{"name":"a","import_path":"m:a","route_prefix":[]}]}`,
			wantErr: "route_prefix: must be a string, got a list"},
		{name: "deployments not a list", body: `{"applications":[{"name":"a","import_path":"m:a","deployments":{}}]}`,
			wantErr: "deployments: must be a list"},
		{name: "deployment not an object", body: `{"applications":[{"name":"a","import_path":"m:a","deployments":[null]}]}`,
			wantErr: "deployments[0]: must be an object, got null"},
		{name: "deployment without name", body: `{"applications":[{"name":"a","import_path":"m:a","deployments":[{"num_replicas":1}]}]}`,
			wantErr: "deployments[0]: name: field required"},
		{name: "duplicate deployments", body: `{"applications":[{"name":"a","import_path":"m:a","deployments":[{"name":"d"},{"name":"d"}]}]}`,
			wantErr: `multiple deployments named "d"`},
		{name: "target capacity above 100", body: `{"target_capacity":101,"applications":[]}`, wantErr: "between 0 and 100, got 101"},
		{name: "negative target capacity", body: `{"target_capacity":-1,"applications":[]}`, wantErr: "between 0 and 100"},
		{name: "target capacity as a string", body: `{"target_capacity":"50","applications":[]}`, wantErr: "target_capacity: must be a number, got a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseServeConfig([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []app
			for _, a := range cfg.apps {
				got = append(got, app{Name: a.name, Route: a.routePrefix, Deployments: a.deployments})
			}
			if diff := cmp.Diff(tc.wantApps, got); diff != "" {
				t.Errorf("apps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTC, cfg.targetCapacity); diff != "" {
				t.Errorf("target capacity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFingerprint: the same application written differently (key order, spacing, number
// spelling) is the same application; any change of content is a different one.
func TestFingerprint(t *testing.T) {
	fp := func(body string) string {
		t.Helper()
		cfg, err := parseServeConfig([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return cfg.apps[0].fingerprint
	}
	base := fp(`{"applications":[{"name":"a","import_path":"m:a","deployments":[{"name":"d","num_replicas":1}]}]}`)
	if got := fp(`{"applications":[ {"deployments":[{"num_replicas":1.0,"name":"d"}], "import_path":"m:a","name":"a"} ]}`); got != base {
		t.Errorf("reordered application has another fingerprint:\n%s\n%s", got, base)
	}
	if got := fp(`{"target_capacity":10,"applications":[{"name":"a","import_path":"m:a","deployments":[{"name":"d","num_replicas":1}]}]}`); got != base {
		t.Error("target_capacity changed the application's fingerprint")
	}
	if got := fp(`{"applications":[{"name":"a","import_path":"m:a","deployments":[{"name":"d","num_replicas":2}]}]}`); got == base {
		t.Error("a changed replica count kept the fingerprint")
	}
}

func TestDeploymentReplicas(t *testing.T) {
	tests := []struct {
		name    string
		app     string
		want    map[string]int
		wantErr string
	}{
		{name: "no deployments entry: one replica of the import path's", app: `{"import_path":"m:app"}`, want: map[string]int{"app": 1}},
		{name: "num_replicas, absent and null", app: `{"import_path":"m:a","deployments":[
			{"name":"A","num_replicas":3},{"name":"B"},{"name":"C","num_replicas":null}]}`,
			want: map[string]int{"A": 3, "B": 1, "C": 1}},
		{name: "autoscaling starts at initial_replicas, else min_replicas, else 1", app: `{"import_path":"m:a","deployments":[
			{"name":"I","num_replicas":"auto","autoscaling_config":{"min_replicas":1,"initial_replicas":2}},
			{"name":"M","autoscaling_config":{"min_replicas":0}},
			{"name":"D","num_replicas":"auto"}]}`,
			want: map[string]int{"I": 2, "M": 0, "D": 1}},
		{name: "zero", app: `{"import_path":"m:a","deployments":[{"name":"A","num_replicas":0}]}`, wantErr: "deployments[0]: num_replicas: must be a positive integer"},
		{name: "fraction", app: `{"import_path":"m:a","deployments":[{"name":"A","num_replicas":1.5}]}`, wantErr: "must be a positive integer"},
		{name: "another string", app: `{"import_path":"m:a","deployments":[{"name":"A","num_replicas":"many"}]}`, wantErr: `got "many"`},
		{name: "a list", app: `{"import_path":"m:a","deployments":[{"name":"A","num_replicas":[1]}]}`, wantErr: "got a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseServeConfig([]byte(`{"applications":[` + tt.app + `]}`))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cfg.apps[0].replicas); diff != "" {
				t.Errorf("replicas (-want +got):\n%s", diff)
			}
		})
	}
}
