package raydashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

// TestControlClient drives a stand-in over the network, as a test or the demo does from
// another process.
func TestControlClient(t *testing.T) {
	e := newEnv(t, 10*time.Second)
	url, err := e.s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.s.Close() })
	cc := NewControlClient(url + "/")
	ctx := context.Background()

	// A cluster nobody called yet is created by the control call.
	st, err := cc.State(ctx, "ns", "rc")
	if err != nil {
		t.Fatal(err)
	}
	want := &ClusterState{Namespace: "ns", Name: "rc", Requests: map[string]int{}, Applications: map[string]string{}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("initial state (-want +got):\n%s", diff)
	}

	req, _ := http.NewRequest(http.MethodPut, url+"/clusters/ns/rc/api/serve/applications/",
		strings.NewReader(`{"target_capacity":40,"applications":[{"name":"app","import_path":"m:app"}]}`))
	req.Header.Set("x-ray-authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	e.clk.Step(5 * time.Second)

	fault := Fault{Unhealthy: true, HTTPStatus: 503, Latency: 250 * time.Millisecond, ProxyUnhealthy: true, DeployFailed: true}
	if err = cc.SetFault(ctx, "ns", "rc", fault); err != nil {
		t.Fatal(err)
	}
	st, err = cc.State(ctx, "ns", "rc")
	if err != nil {
		t.Fatal(err)
	}
	want = &ClusterState{
		Namespace: "ns", Name: "rc",
		Config:         map[string]any{"target_capacity": 40.0, "applications": []any{map[string]any{"name": "app", "import_path": "m:app"}}},
		TargetCapacity: ptr.To[int32](40), Submissions: 1,
		Requests:          map[string]int{OpUpdateDeployments: 1},
		Applications:      map[string]string{"app": "DEPLOYING"},
		Fault:             fault,
		LastAuthorization: "Bearer t",
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(*want, e.s.Cluster("ns", "rc").State()); diff != "" {
		t.Errorf("in-process State differs from the control API's (-want +got):\n%s", diff)
	}

	if err = cc.Reset(ctx, "ns", "rc"); err != nil {
		t.Fatal(err)
	}
	if c := e.s.Cluster("ns", "rc"); c.Config() != nil || len(c.AppStatuses()) != 0 {
		t.Errorf("after Reset: config %v, apps %v", c.Config(), c.AppStatuses())
	}
	if err = cc.SetFault(ctx, "ns", "rc", Fault{}); err != nil {
		t.Fatal(err)
	}
	if got := e.s.Cluster("ns", "rc").State().Fault; got != (Fault{}) {
		t.Errorf("fault after clearing = %+v", got)
	}

	totals, err := cc.TotalRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{OpUpdateDeployments: 1}, totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}

	if err := NewControlClient("http://127.0.0.1:1").Reset(ctx, "ns", "rc"); err == nil {
		t.Error("Reset against nothing: no error")
	}
}

func TestControlErrors(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantBody                 string
	}{
		{name: "unknown fault field", method: "PUT", path: "/_control/clusters/ns/rc/fault", body: `{"sick":true}`,
			wantCode: 400, wantBody: `unknown field "sick"`},
		{name: "bad latency", method: "PUT", path: "/_control/clusters/ns/rc/fault", body: `{"latency":"soon"}`,
			wantCode: 400, wantBody: "latency"},
		{name: "negative latency", method: "PUT", path: "/_control/clusters/ns/rc/fault", body: `{"latency":"-1s"}`,
			wantCode: 400, wantBody: "must not be negative"},
		{name: "bad status", method: "PUT", path: "/_control/clusters/ns/rc/fault", body: `{"httpStatus":42}`,
			wantCode: 400, wantBody: "httpStatus"},
		{name: "not JSON", method: "PUT", path: "/_control/clusters/ns/rc/fault", body: `x`, wantCode: 400},
		{name: "GET fault", method: "GET", path: "/_control/clusters/ns/rc/fault", wantCode: 405},
		{name: "GET reset", method: "GET", path: "/_control/clusters/ns/rc/reset", wantCode: 405},
		{name: "DELETE cluster", method: "DELETE", path: "/_control/clusters/ns/rc", wantCode: 405},
		{name: "POST totals", method: "POST", path: "/_control/totals", wantCode: 405},
		{name: "unknown action", method: "POST", path: "/_control/clusters/ns/rc/explode", wantCode: 404},
		{name: "too deep", method: "GET", path: "/_control/clusters/ns/rc/fault/x", wantCode: 404},
		{name: "no name", method: "GET", path: "/_control/clusters/ns", wantCode: 404},
		{name: "trailing slash accepted", method: "GET", path: "/_control/clusters/ns/rc/", wantCode: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newEnv(t, 0).do(tc.method, tc.path, tc.body)
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("%s %s = %d %q, want %d with %q", tc.method, tc.path, rec.Code, rec.Body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestFaultJSON(t *testing.T) {
	tests := []struct {
		fault Fault
		json  string
	}{
		{Fault{}, `{}`},
		{Fault{Latency: 1500 * time.Millisecond}, `{"latency":"1.5s"}`},
		{Fault{DeployFailed: true, Unhealthy: true, HTTPStatus: 500, ProxyUnhealthy: true},
			`{"deployFailed":true,"unhealthy":true,"httpStatus":500,"proxyUnhealthy":true}`},
	}
	for _, tc := range tests {
		t.Run(tc.json, func(t *testing.T) {
			b, err := json.Marshal(tc.fault)
			if err != nil || string(b) != tc.json {
				t.Errorf("Marshal = %s, %v; want %s", b, err, tc.json)
			}
			var back Fault
			if err := json.Unmarshal([]byte(tc.json), &back); err != nil || back != tc.fault {
				t.Errorf("Unmarshal = %+v, %v; want %+v", back, err, tc.fault)
			}
		})
	}
}
