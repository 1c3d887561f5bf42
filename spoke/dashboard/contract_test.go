package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
)

// contract is the spoke's client and resolver wired to a stand-in over loopback, as the e2e
// fleet and the demo wire them.
type contract struct {
	t       *testing.T
	stand   *raydashboard.Server
	clk     *clocktesting.FakeClock
	factory dashboard.Factory
	client  dashboard.Client
	proxy   string
	reg     *prometheus.Registry
}

const deployDelay = 10 * time.Second

func newContract(t *testing.T, timeout time.Duration) *contract {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	stand := raydashboard.New(raydashboard.Options{DeployDelay: deployDelay, Clock: clk})
	url, err := stand.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stand.Close() })

	resolver, err := dashboard.NewTemplateResolver(raydashboard.DashboardTemplate(url), raydashboard.ProxyTemplate(url), "")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	factory, err := dashboard.NewFactory(dashboard.FactoryOptions{Timeout: timeout, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "svc-raycluster-abcde", Namespace: "team"}}
	headSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc-raycluster-abcde-head-svc", Namespace: "team"}}
	headPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "svc-raycluster-abcde-head-xyz", Namespace: "team"},
		Status:     corev1.PodStatus{PodIP: "fd00::5"},
	}
	return &contract{
		t: t, stand: stand, clk: clk, factory: factory, reg: reg,
		client: factory.Dashboard(resolver.DashboardURL(rc, headSvc, 8265), "tok"),
		proxy:  resolver.ProxyURL(rc, headPod, 8000),
	}
}

func (c *contract) details() *dashboard.ServeDetails {
	c.t.Helper()
	d, err := c.client.ServeDetails(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

// appStatuses summarises details: "app" → status and "app/deployment" → status.
func appStatuses(d *dashboard.ServeDetails) map[string]string {
	out := map[string]string{}
	for name, app := range d.Applications {
		out[name] = app.Status
		for dn, dep := range app.Deployments {
			out[name+"/"+dn] = dep.Status
		}
	}
	return out
}

// TestContractDeploy: a config goes through every status the reconciler reads, with the
// reconciler's own client, resolver and request shapes.
func TestContractDeploy(t *testing.T) {
	c := newContract(t, 0)
	ctx := context.Background()
	cluster := c.stand.Cluster("team", "svc-raycluster-abcde")

	if err := c.factory.CheckProxyHealth(ctx, c.proxy); err == nil {
		t.Error("proxy healthy before Serve started")
	}
	if d := c.details(); d.DeployMode != dashboard.DeployModeMultiApp || len(d.Applications) != 0 || d.TargetCapacity != nil {
		t.Errorf("details before any config = %+v", d)
	}

	// KubeRay's serveConfigV2 sample, as JSON, with the target capacity an incremental upgrade adds.
	config := `{"target_capacity":30,"applications":[
		{"name":"fruit_app","import_path":"fruit.deployment_graph","route_prefix":"/fruit",
		 "deployments":[{"name":"MangoStand","num_replicas":1},{"name":"FruitMarket","num_replicas":1}]},
		{"name":"math_app","import_path":"conditional_dag.serve_dag","route_prefix":"/calc"}]}`
	if err := c.client.UpdateDeployments(ctx, []byte(config)); err != nil {
		t.Fatal(err)
	}
	if got := cluster.LastAuthorization(); got != "Bearer tok" {
		t.Errorf("authorization seen by the dashboard = %q", got)
	}
	if got := cluster.TargetCapacity(); got == nil || *got != 30 {
		t.Errorf("target capacity = %v, want 30", got)
	}

	steps := []struct {
		after time.Duration
		want  map[string]string
	}{
		{0, map[string]string{"fruit_app": dashboard.AppStatusNotStarted, "math_app": dashboard.AppStatusNotStarted}},
		{deployDelay / 2, map[string]string{
			"fruit_app": dashboard.AppStatusDeploying, "math_app": dashboard.AppStatusDeploying,
			"fruit_app/MangoStand": dashboard.DeploymentStatusUpdating, "fruit_app/FruitMarket": dashboard.DeploymentStatusUpdating,
			"math_app/serve_dag": dashboard.DeploymentStatusUpdating,
		}},
		{deployDelay / 2, map[string]string{
			"fruit_app": dashboard.AppStatusRunning, "math_app": dashboard.AppStatusRunning,
			"fruit_app/MangoStand": dashboard.DeploymentStatusHealthy, "fruit_app/FruitMarket": dashboard.DeploymentStatusHealthy,
			"math_app/serve_dag": dashboard.DeploymentStatusHealthy,
		}},
	}
	for i, step := range steps {
		c.clk.Step(step.after)
		d := c.details()
		if diff := cmp.Diff(step.want, appStatuses(d)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
		if d.TargetCapacity == nil || *d.TargetCapacity != 30 {
			t.Errorf("step %d: target capacity %v, want 30", i, d.TargetCapacity)
		}
	}
	d := c.details()
	if app := d.Applications["fruit_app"]; app.Name != "fruit_app" || app.RoutePrefix != "/fruit" {
		t.Errorf("fruit_app = %+v", app)
	}
	if err := c.factory.CheckProxyHealth(ctx, c.proxy); err != nil {
		t.Errorf("proxy with Serve running: %v", err)
	}

	// The same config again (after a spoke restart) redeploys nothing, but Ray reports the
	// applications DEPLOYING, their deployments HEALTHY, until its next control loop.
	if err := c.client.UpdateDeployments(ctx, []byte(config)); err != nil {
		t.Fatal(err)
	}
	if got := appStatuses(c.details()); got["fruit_app"] != dashboard.AppStatusDeploying ||
		got["fruit_app/MangoStand"] != dashboard.DeploymentStatusHealthy {
		t.Errorf("right after resubmitting the same config: %v", got)
	}
	c.clk.Step(deployDelay / 10)
	if got := appStatuses(c.details())["fruit_app"]; got != dashboard.AppStatusRunning {
		t.Errorf("a moment after resubmitting the same config: %s", got)
	}

	// A head restart without GCS FT: the dashboard reports no applications, which is what makes
	// the reconciler resubmit.
	cluster.Reset()
	if d := c.details(); len(d.Applications) != 0 {
		t.Errorf("after Reset: %v", appStatuses(d))
	}

	if got := requestCount(t, c.reg, "serve_details", "success"); got != 8 {
		t.Errorf("serve_details successes = %v, want 8", got)
	}
}

// TestContractReplicas: a deployment's replicas are reported in Ray's shape, STARTING while it
// is UPDATING and, once HEALTHY, as many RUNNING as its num_replicas (initial_replicas for an
// autoscaling one), with target_num_replicas saying the same. The stand-in does not model
// target_capacity's scaling of replicas, so the config sets none.
func TestContractReplicas(t *testing.T) {
	c := newContract(t, 0)
	config := `{"applications":[{"name":"llm","import_path":"serve_llm:app","route_prefix":"/llm",
		"deployments":[{"name":"Model","num_replicas":3},{"name":"Router"},
			{"name":"Scaled","num_replicas":"auto","autoscaling_config":{"min_replicas":1,"initial_replicas":2,"max_replicas":4}}]}]}`
	if err := c.client.UpdateDeployments(context.Background(), []byte(config)); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		after time.Duration
		want  map[string]string
	}{
		{deployDelay / 2, map[string]string{"llm/Model": "3 STARTING:3", "llm/Router": "1 STARTING:1", "llm/Scaled": "2 STARTING:2"}},
		{deployDelay / 2, map[string]string{"llm/Model": "3 RUNNING:3", "llm/Router": "1 RUNNING:1", "llm/Scaled": "2 RUNNING:2"}},
	}
	for i, step := range steps {
		c.clk.Step(step.after)
		if diff := cmp.Diff(step.want, replicaStates(c.details())); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}

// replicaStates summarises details: "app/deployment" → "<target_num_replicas> <STATE>:<count>".
func replicaStates(d *dashboard.ServeDetails) map[string]string {
	out := map[string]string{}
	for name, app := range d.Applications {
		for dn, dep := range app.Deployments {
			count := map[string]int{}
			for _, r := range dep.Replicas {
				count[r.State]++
			}
			summary := fmt.Sprint(dep.TargetNumReplicas)
			for _, state := range slices.Sorted(maps.Keys(count)) {
				summary += fmt.Sprintf(" %s:%d", state, count[state])
			}
			out[name+"/"+dn] = summary
		}
	}
	return out
}

// TestContractFaults: every fault of the stand-in reaches the client as the reconciler needs
// to see it.
func TestContractFaults(t *testing.T) {
	tests := []struct {
		name  string
		fault raydashboard.Fault
		check func(t *testing.T, c *contract)
	}{
		{name: "HTTP 500", fault: raydashboard.Fault{HTTPStatus: 500}, check: func(t *testing.T, c *contract) {
			err := c.client.UpdateDeployments(context.Background(), []byte(`{"applications":[]}`))
			se, ok := errors.AsType[*dashboard.StatusError](err)
			if !ok || se.StatusCode != 500 || !strings.Contains(se.Body, "injected fault") {
				t.Errorf("UpdateDeployments: %v, want a 500 StatusError with the body", err)
			}
			if _, err := c.client.ServeDetails(context.Background()); err == nil {
				t.Error("ServeDetails: no error")
			}
		}},
		{name: "invalid config is a 400 with Ray's reason", check: func(t *testing.T, c *contract) {
			err := c.client.UpdateDeployments(context.Background(), []byte(`{"applications":[{"name":"a"}]}`))
			se, ok := errors.AsType[*dashboard.StatusError](err)
			if !ok || se.StatusCode != 400 || !strings.Contains(se.Body, "import_path: field required") {
				t.Errorf("UpdateDeployments: %v, want a 400 naming the missing field", err)
			}
		}},
		{name: "latency past the client's timeout", fault: raydashboard.Fault{Latency: time.Minute}, check: func(t *testing.T, c *contract) {
			if _, err := c.client.ServeDetails(context.Background()); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("ServeDetails: %v, want a deadline", err)
			}
			if err := c.factory.CheckProxyHealth(context.Background(), c.proxy); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("CheckProxyHealth: %v, want a deadline", err)
			}
		}},
		{name: "deploy failed", fault: raydashboard.Fault{DeployFailed: true}, check: func(t *testing.T, c *contract) {
			c.submit()
			c.clk.Step(deployDelay)
			app := c.details().Applications["app"]
			if app.Status != dashboard.AppStatusDeployFailed || app.Message == "" ||
				app.Deployments["app"].Status != dashboard.DeploymentStatusDeployFailed {
				t.Errorf("app = %+v, want DEPLOY_FAILED with a message", app)
			}
		}},
		{name: "unhealthy", fault: raydashboard.Fault{Unhealthy: true}, check: func(t *testing.T, c *contract) {
			c.submit()
			c.clk.Step(deployDelay)
			if app := c.details().Applications["app"]; app.Status != dashboard.AppStatusUnhealthy {
				t.Errorf("app = %+v, want UNHEALTHY", app)
			}
		}},
		{name: "proxy unhealthy", fault: raydashboard.Fault{ProxyUnhealthy: true}, check: func(t *testing.T, c *contract) {
			c.submit()
			err := c.factory.CheckProxyHealth(context.Background(), c.proxy)
			if se, ok := errors.AsType[*dashboard.StatusError](err); !ok || se.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("CheckProxyHealth: %v, want a 503", err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newContract(t, 200*time.Millisecond)
			c.stand.Cluster("team", "svc-raycluster-abcde").SetFault(tc.fault)
			tc.check(t, c)
		})
	}
}

// submit puts a one-application config whose deployment is named after its import path.
func (c *contract) submit() {
	c.t.Helper()
	if err := c.client.UpdateDeployments(context.Background(), []byte(`{"applications":[{"name":"app","import_path":"m:app"}]}`)); err != nil {
		c.t.Fatal(err)
	}
}

// requestCount is the value of requests_total{operation=op,result=result}.
func requestCount(t *testing.T, reg *prometheus.Registry, op, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "rayfleet_spoke_dashboard_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["operation"] == op && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series requests_total{operation=%q,result=%q}", op, result)
	return 0
}
