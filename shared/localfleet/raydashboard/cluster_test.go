package raydashboard

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

// TestTransitions: an application's status at each instant after its submission, per fault.
func TestTransitions(t *testing.T) {
	const delay = 10 * time.Second
	tests := []struct {
		name    string
		delay   time.Duration
		fault   Fault
		elapsed time.Duration
		want    map[string]string
		wantMsg bool
	}{
		{name: "just submitted", delay: delay, elapsed: 0, want: map[string]string{"app": "NOT_STARTED"}},
		{name: "end of NOT_STARTED", delay: delay, elapsed: time.Second - 1, want: map[string]string{"app": "NOT_STARTED"}},
		{name: "deploying", delay: delay, elapsed: time.Second, want: map[string]string{"app": "DEPLOYING", "app/D": "UPDATING"}},
		{name: "end of DEPLOYING", delay: delay, elapsed: delay - 1, want: map[string]string{"app": "DEPLOYING", "app/D": "UPDATING"}},
		{name: "running", delay: delay, elapsed: delay, want: map[string]string{"app": "RUNNING", "app/D": "HEALTHY"}},
		{name: "running long after", delay: delay, elapsed: time.Hour, want: map[string]string{"app": "RUNNING", "app/D": "HEALTHY"}},
		{name: "no delay: running at once", elapsed: 0, want: map[string]string{"app": "RUNNING", "app/D": "HEALTHY"}},
		{name: "deploy failure shows after the delay", delay: delay, fault: Fault{DeployFailed: true}, elapsed: delay / 2,
			want: map[string]string{"app": "DEPLOYING", "app/D": "UPDATING"}},
		{name: "deploy failed", delay: delay, fault: Fault{DeployFailed: true}, elapsed: delay,
			want: map[string]string{"app": "DEPLOY_FAILED", "app/D": "DEPLOY_FAILED"}, wantMsg: true},
		{name: "unhealthy only once running", delay: delay, fault: Fault{Unhealthy: true}, elapsed: delay / 2,
			want: map[string]string{"app": "DEPLOYING", "app/D": "UPDATING"}},
		{name: "unhealthy", delay: delay, fault: Fault{Unhealthy: true}, elapsed: delay,
			want: map[string]string{"app": "UNHEALTHY", "app/D": "UNHEALTHY"}, wantMsg: true},
		{name: "deploy failure wins over unhealthy", delay: delay, fault: Fault{DeployFailed: true, Unhealthy: true}, elapsed: delay,
			want: map[string]string{"app": "DEPLOY_FAILED", "app/D": "DEPLOY_FAILED"}, wantMsg: true},
		{name: "proxy fault leaves apps alone", delay: delay, fault: Fault{ProxyUnhealthy: true}, elapsed: delay,
			want: map[string]string{"app": "RUNNING", "app/D": "HEALTHY"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.delay)
			e.s.Cluster("ns", "rc").SetFault(tc.fault)
			e.put(oneApp)
			e.clk.Step(tc.elapsed)
			d := e.details()
			if diff := cmp.Diff(tc.want, statuses(d)); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			app := d.Applications["app"]
			if gotMsg := app.Message != "" && app.Deployments["D"].Message != ""; gotMsg != tc.wantMsg {
				t.Errorf("messages present = %v, want %v: %+v", gotMsg, tc.wantMsg, app)
			}
			if diff := cmp.Diff(map[string]string{"app": tc.want["app"]}, e.s.Cluster("ns", "rc").AppStatuses()); diff != "" {
				t.Errorf("AppStatuses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResubmitIsDeployingForAMoment: an unchanged application submitted again reports DEPLOYING
// with its deployments HEALTHY for a tenth of the deploy delay, as Ray does, then RUNNING again;
// nothing is redeployed.
func TestResubmitIsDeployingForAMoment(t *testing.T) {
	const delay = 10 * time.Second
	e := newEnv(t, delay)
	e.put(oneApp)
	e.clk.Step(delay)
	e.put(oneApp)
	if diff := cmp.Diff(map[string]string{"app": "DEPLOYING", "app/D": "HEALTHY"}, statuses(e.details())); diff != "" {
		t.Errorf("right after resubmitting (-want +got):\n%s", diff)
	}
	e.clk.Step(delay / notStartedShare)
	if diff := cmp.Diff(map[string]string{"app": "RUNNING", "app/D": "HEALTHY"}, statuses(e.details())); diff != "" {
		t.Errorf("a moment later (-want +got):\n%s", diff)
	}
}

// TestDeployFailedMessage: a DEPLOY_FAILED application's message has Ray's shape, the
// application on its first line and the exception on its last, with a traceback between.
func TestDeployFailedMessage(t *testing.T) {
	e := newEnv(t, 0)
	e.s.Cluster("ns", "rc").SetFault(Fault{DeployFailed: true})
	e.put(oneApp)
	lines := strings.Split(strings.TrimSpace(e.details().Applications["app"].Message), "\n")
	if len(lines) < 3 || lines[0] != "Deploying app 'app' failed with exception:" ||
		lines[1] != "Traceback (most recent call last):" ||
		lines[len(lines)-1] != "RuntimeError: injected DEPLOY_FAILED fault" {
		t.Errorf("message lines = %q", lines)
	}
}

// TestClearingFaultRecovers: faults are read with the status, so clearing one lets running
// applications report RUNNING again.
func TestClearingFaultRecovers(t *testing.T) {
	e := newEnv(t, 0)
	c := e.s.Cluster("ns", "rc")
	e.put(oneApp)
	for _, step := range []struct {
		fault Fault
		want  string
	}{{Fault{Unhealthy: true}, "UNHEALTHY"}, {Fault{}, "RUNNING"}, {Fault{DeployFailed: true}, "DEPLOY_FAILED"}, {Fault{}, "RUNNING"}} {
		c.SetFault(step.fault)
		if got := e.details().Applications["app"].Status; got != step.want {
			t.Errorf("with %+v: status %s, want %s", step.fault, got, step.want)
		}
	}
}

// TestResubmission: what a second PUT, at 6 s of a 10 s deploy, does to the transitions.
func TestResubmission(t *testing.T) {
	const delay = 10 * time.Second
	first := `{"target_capacity":0,"applications":[
		{"name":"a","import_path":"m:a","route_prefix":"/a","deployments":[{"name":"A","num_replicas":1}]},
		{"name":"b","import_path":"m:b","route_prefix":"/b"}]}`
	tests := []struct {
		name   string
		second string
		// want at 10 s (first config due) and at 16 s (second config due).
		wantAt10, wantAt16 map[string]string
		wantTC             *int32
	}{
		{name: "identical config keeps the transitions", second: first,
			wantAt10: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantAt16: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantTC:   ptr.To[int32](0)},
		{name: "same config written differently keeps them", second: `{"applications":[
			{"route_prefix":"/b","import_path":"m:b","name":"b"},
			{"deployments":[{"num_replicas":1.0,"name":"A"}],"name":"a","import_path":"m:a","route_prefix":"/a"}],"target_capacity":0}`,
			wantAt10: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantAt16: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantTC:   ptr.To[int32](0)},
		{name: "target capacity alone is recorded without redeploying",
			second:   strings.Replace(first, `"target_capacity":0`, `"target_capacity":62.6`, 1),
			wantAt10: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantAt16: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantTC:   ptr.To[int32](63)},
		{name: "dropping target capacity", second: strings.Replace(first, `"target_capacity":0,`, ``, 1),
			wantAt10: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantAt16: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"}},
		{name: "a changed app restarts alone", second: strings.Replace(first, `"num_replicas":1`, `"num_replicas":2`, 1),
			wantAt10: map[string]string{"a": "DEPLOYING", "a/A": "UPDATING", "b": "RUNNING", "b/b": "HEALTHY"},
			wantAt16: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "b": "RUNNING", "b/b": "HEALTHY"},
			wantTC:   ptr.To[int32](0)},
		{name: "an app left out is removed, a new one starts",
			second: `{"applications":[{"name":"a","import_path":"m:a","route_prefix":"/a","deployments":[{"name":"A","num_replicas":1}]},
				{"name":"c","import_path":"pkg.graph","route_prefix":"/c"}]}`,
			wantAt10: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "c": "DEPLOYING", "c/graph": "UPDATING"},
			wantAt16: map[string]string{"a": "RUNNING", "a/A": "HEALTHY", "c": "RUNNING", "c/graph": "HEALTHY"}},
		{name: "no applications", second: `{"applications":[]}`,
			wantAt10: map[string]string{}, wantAt16: map[string]string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, delay)
			c := e.s.Cluster("ns", "rc")
			e.put(first)
			e.clk.Step(6 * time.Second)
			e.put(tc.second)
			e.clk.Step(4 * time.Second)
			if diff := cmp.Diff(tc.wantAt10, statuses(e.details())); diff != "" {
				t.Errorf("at 10s (-want +got):\n%s", diff)
			}
			e.clk.Step(6 * time.Second)
			if diff := cmp.Diff(tc.wantAt16, statuses(e.details())); diff != "" {
				t.Errorf("at 16s (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTC, c.TargetCapacity()); diff != "" {
				t.Errorf("TargetCapacity (-want +got):\n%s", diff)
			}
			if got := c.Submissions(); got != 2 {
				t.Errorf("Submissions = %d, want 2", got)
			}
			var wantConfig map[string]any
			if err := json.Unmarshal([]byte(tc.second), &wantConfig); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantConfig, c.Config()); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDetailsDocument: the whole GET answer, before and after a config.
func TestDetailsDocument(t *testing.T) {
	e := newEnv(t, 0)
	empty := e.do(http.MethodGet, "/clusters/ns/rc/api/serve/applications/?api_type=declarative", "")
	wantEmpty := `{"deploy_mode":"MULTI_APP","target_capacity":null,"controller_info":{},"proxies":{},"applications":{}}`
	assertJSON(t, wantEmpty, empty.Body.String())

	e.put(`{"target_capacity":50,"proxy_location":"HeadOnly","applications":[
		{"name":"app","import_path":"m:app","route_prefix":"/x","deployments":[{"name":"D","num_replicas":2}]}]}`)
	got := e.do(http.MethodGet, "/clusters/ns/rc/api/serve/applications/?api_type=declarative", "")
	if ct := got.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	want := `{"target_capacity":50,"controller_info":{},"proxy_location":"HeadOnly",
		"http_options":{"host":"0.0.0.0","port":8000,"root_path":"","keep_alive_timeout_s":90},"proxies":{},
		"applications":{"app":{"name":"app","route_prefix":"/x","docs_path":null,"status":"RUNNING","message":"",
			"last_deployed_time_s":` + jsonNumber(float64(epoch.Unix())) + `,
			"deployed_app_config":{"name":"app","import_path":"m:app","route_prefix":"/x","deployments":[{"name":"D","num_replicas":2}]},
			"source":"declarative",
			"deployments":{"D":{"name":"D","status":"HEALTHY","message":"","target_num_replicas":2,"replicas":[
				{"replica_id":"D-r0","state":"RUNNING","actor_name":"SERVE_REPLICA::app#D#D-r0","start_time_s":` + jsonNumber(float64(epoch.Unix())) + `},
				{"replica_id":"D-r1","state":"RUNNING","actor_name":"SERVE_REPLICA::app#D#D-r1","start_time_s":` + jsonNumber(float64(epoch.Unix())) + `}]}}}}}`
	assertJSON(t, want, got.Body.String())

	imperative := e.do(http.MethodGet, "/clusters/ns/rc/api/serve/applications/?api_type=imperative", "")
	var d detailsView
	if err := json.Unmarshal(imperative.Body.Bytes(), &d); err != nil || len(d.Applications) != 0 || d.TargetCapacity == nil {
		t.Errorf("imperative: %s, %v; want no applications and the target capacity", imperative.Body, err)
	}
	all := e.do(http.MethodGet, "/clusters/ns/rc/api/serve/applications/", "")
	assertJSON(t, want, all.Body.String())
}

// TestFaultsOnCalls: HTTP status and proxy faults, and what is counted under them.
func TestFaultsOnCalls(t *testing.T) {
	e := newEnv(t, 0)
	c := e.s.Cluster("ns", "rc")
	healthz := func() (int, string) {
		rec := e.do(http.MethodGet, "/clusters/ns/rc/proxy/-/healthz", "")
		return rec.Code, rec.Body.String()
	}
	if code, body := healthz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "Serve is not running") {
		t.Errorf("healthz before any config = %d %q, want 503", code, body)
	}

	c.SetFault(Fault{HTTPStatus: http.StatusInternalServerError})
	rec := e.do(http.MethodPut, "/clusters/ns/rc/api/serve/applications/", oneApp)
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), "injected fault") {
		t.Errorf("PUT under a 500 fault = %d %q", rec.Code, rec.Body)
	}
	if rec := e.do(http.MethodGet, "/clusters/ns/rc/api/serve/applications/", ""); rec.Code != 500 {
		t.Errorf("GET under a 500 fault = %d", rec.Code)
	}
	if c.Submissions() != 0 || c.Config() != nil {
		t.Errorf("a faulted PUT was accepted: %d submissions, config %v", c.Submissions(), c.Config())
	}

	c.SetFault(Fault{})
	e.put(oneApp)
	if code, body := healthz(); code != http.StatusOK || body != "success" {
		t.Errorf("healthz with Serve running = %d %q, want 200 success", code, body)
	}
	c.SetFault(Fault{HTTPStatus: 500})
	if code, _ := healthz(); code != http.StatusOK {
		t.Errorf("healthz under a dashboard 500 fault = %d, want 200", code)
	}
	c.SetFault(Fault{ProxyUnhealthy: true})
	if code, _ := healthz(); code != http.StatusServiceUnavailable {
		t.Errorf("healthz under a proxy fault = %d, want 503", code)
	}
	c.SetFault(Fault{})
	c.Reset()
	if code, _ := healthz(); code != http.StatusServiceUnavailable {
		t.Errorf("healthz after Reset = %d, want 503", code)
	}

	wantRequests := map[string]int{OpUpdateDeployments: 2, OpServeDetails: 1, OpProxyHealth: 5}
	for op, want := range wantRequests {
		if got := c.Requests(op); got != want {
			t.Errorf("Requests(%s) = %d, want %d", op, got, want)
		}
	}
}

// TestReset: a head restart without GCS fault tolerance loses the config and applications;
// the counters and the fault stay.
func TestReset(t *testing.T) {
	e := newEnv(t, 0)
	c := e.s.Cluster("ns", "rc")
	e.put(`{"target_capacity":20,"applications":[{"name":"app","import_path":"m:app"}]}`)
	c.SetFault(Fault{Unhealthy: true})
	c.Reset()
	d := e.details()
	if len(d.Applications) != 0 || d.TargetCapacity != nil || c.Config() != nil || c.TargetCapacity() != nil {
		t.Errorf("after Reset: details %+v, config %v, target capacity %v", d, c.Config(), c.TargetCapacity())
	}
	if c.Submissions() != 1 || !c.State().Fault.Unhealthy {
		t.Errorf("after Reset: %d submissions, fault %+v; want both kept", c.Submissions(), c.State().Fault)
	}
	// Resubmitting the same config after a reset deploys it afresh.
	e.put(`{"target_capacity":20,"applications":[{"name":"app","import_path":"m:app"}]}`)
	if got := statuses(e.details())["app"]; got != "UNHEALTHY" {
		t.Errorf("after resubmission: %s, want UNHEALTHY (the fault stayed)", got)
	}
}

func assertJSON(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want: %v", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got %s: %v", got, err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
