package serve

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/validation"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
)

func TestNeedsSubmit(t *testing.T) {
	oversized := "applications: []\n#" + strings.Repeat("x", validation.MaxServeConfigV2Bytes)
	tests := []struct {
		name      string
		last      Submitted
		submitted bool
		desired   string
		numApps   int
		want      bool
	}{
		{"nothing cached (first time, or after a restart)", Submitted{}, false, "a: 1", 1, true},
		{"cluster reports no application (head restarted)", Submitted{Config: "applications: [{name: a}]"}, true, "applications: [{name: a}]", 0, true},
		{"config changed", Submitted{Config: "a: 1"}, true, "a: 2", 1, true},
		{"same config, applications running", Submitted{Config: "a: 1"}, true, "a: 1", 1, false},
		{"same config with a target capacity", Submitted{Config: "a: 1", TargetCapacity: ptr.To[int32](40)}, true, "a: 1", 2, false},
		{"a config without applications is not resubmitted", Submitted{Config: "applications: []"}, true, "applications: []", 0, false},
		{"an empty config is not resubmitted", Submitted{}, true, "", 0, false},
		{"an empty config is submitted once", Submitted{}, false, "", 0, true},
		{"a blank config declares no application", Submitted{Config: "\t\n"}, true, "\t\n", 0, false},
		{"an oversized config is not parsed and counts as declaring applications", Submitted{Config: oversized}, true, oversized, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := NeedsSubmit(tt.last, tt.submitted, tt.desired, tt.numApps)
			if got != tt.want || why == "" {
				t.Fatalf("NeedsSubmit = %v (%q), want %v with a reason", got, why, tt.want)
			}
		})
	}
}

func TestConfigJSON(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		capacity *int32
		want     string
		wantErr  string
	}{
		{"applications", "applications:\n  - name: a\n    import_path: m.app\n", nil,
			`{"applications":[{"import_path":"m.app","name":"a"}]}`, ""},
		{"with target_capacity", "applications: []\n", ptr.To[int32](30), `{"applications":[],"target_capacity":30}`, ""},
		{"target_capacity 0 is sent", "applications: []\n", ptr.To[int32](0), `{"applications":[],"target_capacity":0}`, ""},
		{"numbers kept exactly", "http_options:\n  port: 8000\n  request_timeout_s: 9007199254740993\n", nil,
			`{"http_options":{"port":8000,"request_timeout_s":9007199254740993}}`, ""},
		{"empty config", "", ptr.To[int32](100), `{"target_capacity":100}`, ""},
		// Found by FuzzConfigJSON: validation takes blanks for no config, the YAML parser refuses a tab.
		{"only blanks, a tab among them", " \t\n", nil, `{}`, ""},
		{"malformed YAML", "applications: [", nil, "", "parse serveConfigV2"},
		{"not a mapping", "- a\n- b\n", nil, "", "not a YAML mapping"},
		{"over the size limit, not parsed", "applications: [" + strings.Repeat("x", validation.MaxServeConfigV2Bytes), nil, "",
			"over the 524288 a Serve config may have"},
		{"billion laughs", "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
			"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n", nil, "", "excessive aliasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigJSON(tt.yaml, tt.capacity)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("ConfigJSON = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestConfigJSONLargeConfig(t *testing.T) {
	var b strings.Builder
	b.WriteString("applications:\n")
	line := func(i int) string {
		return fmt.Sprintf("  - name: app%d\n    import_path: module%d.app\n    route_prefix: /app%d\n", i, i, i)
	}
	for i := 0; b.Len()+len(line(i)) <= validation.MaxServeConfigV2Bytes; i++ {
		b.WriteString(line(i))
	}
	got, err := ConfigJSON(b.String(), ptr.To[int32](50))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Applications   []map[string]any `json:"applications"`
		TargetCapacity int              `json:"target_capacity"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Applications) < 5000 || doc.TargetCapacity != 50 {
		t.Fatalf("got %d applications, target_capacity %d", len(doc.Applications), doc.TargetCapacity)
	}
}

func TestApplications(t *testing.T) {
	running := dashboard.ApplicationDetails{Status: dashboard.AppStatusRunning,
		Deployments: map[string]dashboard.DeploymentDetails{"d": {Status: dashboard.DeploymentStatusHealthy}}}
	deploying := dashboard.ApplicationDetails{Status: dashboard.AppStatusDeploying, Message: "starting"}
	failed := dashboard.ApplicationDetails{Status: dashboard.AppStatusDeployFailed, Message: "import error",
		Deployments: map[string]dashboard.DeploymentDetails{"d": {Status: dashboard.DeploymentStatusDeployFailed, Message: "boom"}}}
	tests := []struct {
		name      string
		details   *dashboard.ServeDetails
		wantApps  map[string]rayv1.AppStatus
		wantReady bool
	}{
		{"no details", nil, map[string]rayv1.AppStatus{}, false},
		{"no applications: not ready", &dashboard.ServeDetails{Applications: map[string]dashboard.ApplicationDetails{}},
			map[string]rayv1.AppStatus{}, false},
		{"all running", &dashboard.ServeDetails{Applications: map[string]dashboard.ApplicationDetails{"a": running, "b": running}},
			map[string]rayv1.AppStatus{
				"a": {Status: "RUNNING", Deployments: map[string]rayv1.ServeDeploymentStatus{"d": {Status: "HEALTHY"}}},
				"b": {Status: "RUNNING", Deployments: map[string]rayv1.ServeDeploymentStatus{"d": {Status: "HEALTHY"}}},
			}, true},
		{"one deploying", &dashboard.ServeDetails{Applications: map[string]dashboard.ApplicationDetails{"a": running, "b": deploying}},
			map[string]rayv1.AppStatus{
				"a": {Status: "RUNNING", Deployments: map[string]rayv1.ServeDeploymentStatus{"d": {Status: "HEALTHY"}}},
				"b": {Status: "DEPLOYING", Message: "starting"},
			}, false},
		{"failed with messages", &dashboard.ServeDetails{Applications: map[string]dashboard.ApplicationDetails{"a": failed}},
			map[string]rayv1.AppStatus{"a": {Status: "DEPLOY_FAILED", Message: "import error",
				Deployments: map[string]rayv1.ServeDeploymentStatus{"d": {Status: "DEPLOY_FAILED", Message: "boom"}}}}, false},
		{"an unnamed application is called default", &dashboard.ServeDetails{Applications: map[string]dashboard.ApplicationDetails{"": running}},
			map[string]rayv1.AppStatus{"default": {Status: "RUNNING", Deployments: map[string]rayv1.ServeDeploymentStatus{"d": {Status: "HEALTHY"}}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps, ready := Applications(tt.details)
			if ready != tt.wantReady {
				t.Errorf("ready = %v, want %v", ready, tt.wantReady)
			}
			if diff := cmp.Diff(tt.wantApps, apps); diff != "" {
				t.Errorf("applications (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCache(t *testing.T) {
	rs := types.NamespacedName{Namespace: "ns", Name: "svc"}
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	tests := []struct {
		name string
		run  func(c *Cache)
		key  types.NamespacedName
		rc   string
		want *Submitted
	}{
		{"empty", func(*Cache) {}, rs, "a", nil},
		{"put then get", func(c *Cache) { c.Put(rs, "a", Submitted{Config: "x"}) }, rs, "a", &Submitted{Config: "x"}},
		{"per RayService", func(c *Cache) { c.Put(rs, "a", Submitted{Config: "x"}) }, other, "a", nil},
		{"overwrite", func(c *Cache) {
			c.Put(rs, "a", Submitted{Config: "x"})
			c.Put(rs, "a", Submitted{Config: "y", TargetCapacity: ptr.To[int32](10)})
		}, rs, "a", &Submitted{Config: "y", TargetCapacity: ptr.To[int32](10)}},
		{"prune keeps active and pending", func(c *Cache) {
			c.Put(rs, "a", Submitted{Config: "x"})
			c.Put(rs, "b", Submitted{Config: "y"})
			c.Put(rs, "old", Submitted{Config: "z"})
			c.Prune(rs, "a", "b")
		}, rs, "b", &Submitted{Config: "y"}},
		{"prune drops the rest", func(c *Cache) {
			c.Put(rs, "a", Submitted{Config: "x"})
			c.Put(rs, "old", Submitted{Config: "z"})
			c.Prune(rs, "a", "")
		}, rs, "old", nil},
		{"forget", func(c *Cache) {
			c.Put(rs, "a", Submitted{Config: "x"})
			c.Forget(rs)
		}, rs, "a", nil},
		{"least recently used RayService evicted", func(c *Cache) {
			c.Put(rs, "a", Submitted{Config: "x"})
			c.Put(other, "a", Submitted{Config: "y"})
			c.Put(types.NamespacedName{Namespace: "ns", Name: "third"}, "a", Submitted{Config: "z"})
		}, rs, "a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache(2)
			tt.run(c)
			got, ok := c.Get(tt.key, tt.rc)
			if (tt.want != nil) != ok {
				t.Fatalf("Get found = %v, want %v", ok, tt.want != nil)
			}
			if tt.want != nil {
				if diff := cmp.Diff(*tt.want, got); diff != "" {
					t.Fatalf("Get (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestCacheConcurrentUse(t *testing.T) {
	c := NewCache(CacheSize)
	rs := types.NamespacedName{Namespace: "ns", Name: "svc"}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				c.Put(rs, fmt.Sprintf("c%d", i), Submitted{Config: fmt.Sprint(j)})
				c.Get(rs, "c0")
				c.Prune(rs, "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7")
			}
		})
	}
	wg.Wait()
	for i := range 8 {
		if got, ok := c.Get(rs, fmt.Sprintf("c%d", i)); ok && got.Config != "199" {
			t.Errorf("cluster c%d: %q", i, got.Config)
		}
	}
}

// rayImportFailure is the message of a Serve application whose module raises at import, as Ray
// 2.52's dashboard reports it (from the contract test e2e/ray, paths shortened).
const rayImportFailure = `Deploying app 'broken' failed with exception:
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/ray/serve/_private/application_state.py", line 1390, in build_serve_application
    import_attr(import_path), args
    ^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/ray/_common/utils.py", line 43, in import_module_and_attr
    module = importlib.import_module(module_name)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/serveapp/broken.py", line 7, in <module>
    raise RuntimeError("rayfleet test application: broken at import")
RuntimeError: rayfleet test application: broken at import
`

func TestFailing(t *testing.T) {
	long := strings.Repeat("é", MaxFailureMessage) // 2 bytes each: cut on a character boundary
	tests := []struct {
		name string
		apps map[string]rayv1.AppStatus
		want []FailingApp
	}{
		{"none", nil, nil},
		{"running and on their way are not failures", map[string]rayv1.AppStatus{
			"a": {Status: "RUNNING"}, "b": {Status: "DEPLOYING"}, "c": {Status: "NOT_STARTED"}, "d": {Status: "DELETING"},
		}, nil},
		{"DEPLOY_FAILED and UNHEALTHY, by name", map[string]rayv1.AppStatus{
			"z": {Status: "UNHEALTHY", Message: "health checks"}, "a": {Status: "DEPLOY_FAILED", Message: "import error"},
			"m": {Status: "RUNNING"},
		}, []FailingApp{{Name: "a", Status: "DEPLOY_FAILED", Message: "import error"}, {Name: "z", Status: "UNHEALTHY", Message: "health checks"}}},
		{"a long line is cut", map[string]rayv1.AppStatus{"a": {Status: "DEPLOY_FAILED", Message: long}},
			[]FailingApp{{Name: "a", Status: "DEPLOY_FAILED", Message: strings.Repeat("é", MaxFailureMessage/2)}}},
		{"a traceback keeps its first line and the exception", map[string]rayv1.AppStatus{"a": {Status: "DEPLOY_FAILED", Message: rayImportFailure}},
			[]FailingApp{{Name: "a", Status: "DEPLOY_FAILED",
				Message: "Deploying app 'broken' failed with exception: … RuntimeError: rayfleet test application: broken at import"}}},
		{"an exception longer than the bound is cut", map[string]rayv1.AppStatus{"a": {Status: "UNHEALTHY", Message: "Unhealthy:\n" + long}},
			[]FailingApp{{Name: "a", Status: "UNHEALTHY", Message: strings.Repeat("é", MaxFailureMessage/2)}}},
		{"a long exception leaves room for part of the first line", map[string]rayv1.AppStatus{"a": {Status: "UNHEALTHY",
			Message: strings.Repeat("x", 300) + "\n" + strings.Repeat("y", MaxFailureMessage-13)}},
			[]FailingApp{{Name: "a", Status: "UNHEALTHY", Message: strings.Repeat("x", 8) + " … " + strings.Repeat("y", MaxFailureMessage-13)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Failing(tt.apps)); diff != "" {
				t.Fatalf("Failing (-want +got):\n%s", diff)
			}
		})
	}
}
