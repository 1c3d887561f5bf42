package raydashboard

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// The tests decode answers into their own views: this package may not import the spoke's
// client (shared code never imports the spoke); the contract test in spoke/dashboard does.
type (
	detailsView struct {
		DeployMode     string             `json:"deploy_mode"`
		TargetCapacity *float64           `json:"target_capacity"`
		Applications   map[string]appView `json:"applications"`
	}
	appView struct {
		Name        string                    `json:"name"`
		Status      string                    `json:"status"`
		Message     string                    `json:"message"`
		RoutePrefix *string                   `json:"route_prefix"`
		Deployments map[string]deploymentView `json:"deployments"`
	}
	deploymentView struct {
		Name    string `json:"name"`
		Status  string `json:"status"`
		Message string `json:"message"`
	}
)

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// testEnv is a stand-in on a fake clock, called in-process through ServeHTTP.
type testEnv struct {
	t   *testing.T
	s   *Server
	clk *clocktesting.FakeClock
}

func newEnv(t *testing.T, delay time.Duration) *testEnv {
	clk := clocktesting.NewFakeClock(epoch)
	return &testEnv{t: t, s: New(Options{DeployDelay: delay, Clock: clk}), clk: clk}
}

// do serves one request and returns the recorder.
func (e *testEnv) do(method, path, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	rec := httptest.NewRecorder()
	e.s.ServeHTTP(rec, req)
	return rec
}

// put submits a config to cluster ns/rc and fails the test unless it is accepted.
func (e *testEnv) put(body string) {
	e.t.Helper()
	if rec := e.do(http.MethodPut, "/clusters/ns/rc/api/serve/applications/", body); rec.Code != http.StatusOK {
		e.t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
}

// details reads the Serve details of cluster ns/rc.
func (e *testEnv) details() detailsView {
	e.t.Helper()
	rec := e.do(http.MethodGet, "/clusters/ns/rc/api/serve/applications/?api_type=declarative", "")
	if rec.Code != http.StatusOK {
		e.t.Fatalf("GET: %d %s", rec.Code, rec.Body)
	}
	var d detailsView
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		e.t.Fatalf("decode %s: %v", rec.Body, err)
	}
	return d
}

// statuses summarises details: "app" → status and "app/deployment" → status.
func statuses(d detailsView) map[string]string {
	out := map[string]string{}
	for name, a := range d.Applications {
		out[name] = a.Status
		for dn, dep := range a.Deployments {
			out[name+"/"+dn] = dep.Status
		}
	}
	return out
}

// Configs used across the tests.
const (
	oneApp  = `{"applications":[{"name":"app","import_path":"m:app","deployments":[{"name":"D"}]}]}`
	twoApps = `{"applications":[
		{"name":"a","import_path":"m:a","route_prefix":"/a","deployments":[{"name":"A"}]},
		{"name":"b","import_path":"m:b","route_prefix":"/b"}]}`
)
