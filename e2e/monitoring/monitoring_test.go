//go:build e2e

// Package monitoring runs the hub chart's dashboards and alerts against a running fleet: a
// real Prometheus (bin/k8s/prometheus, built by `make tools`) scrapes the local fleet's bin/hub
// and bin/spoke and evaluates the chart's alert rules, while the test places a RayService, has
// a member refuse another, and rolls one out. Then every metric a dashboard or an alert names
// must be among the series Prometheus scraped, every dashboard query must return samples, and
// every alert rule must evaluate without error.
// It imports only shared/ (the local fleet, the chart's expressions), never hub/, spoke/ or cmd/.
//
//	make build tools && go test -tags e2e ./e2e/monitoring/
package monitoring

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/monitoring"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

const (
	// timeout bounds each wait; the fleet and Prometheus share two loaded cores.
	timeout = 3 * time.Minute
	poll    = time.Second
	member  = "us"
	ns      = "monitoring"
)

// notProduced are the metrics this test's fleet does not produce, with why. For these the test
// checks only that the name is in bin/hub or bin/spoke (a metric's name is a string constant of
// the binary that registers it), not that it is exposed.
var notProduced = map[string]string{
	"rayfleet_failovers_total":                            "needs a member down past a failover toleration",
	"rayfleet_bluegreen_green_percent":                    "needs a BlueGreen rollout through a Gateway",
	"rayfleet_bluegreen_capacity_percent":                 "needs a BlueGreen rollout whose capacity follows the traffic",
	"rayfleet_member_token_refresh_failures_total":        "needs a member refusing the hub's TokenRequest",
	"rayfleet_orphans_swept_total":                        "needs an orphaned member copy",
	"rayfleet_serve_probe_total":                          "needs traffic routed through a Gateway",
	"rayfleet_member_credential_expiry_timestamp_seconds": "the local fleet joins without an expiring token",
}

// quietWhenHealthy are the dashboard queries (by monitoring.Expr.Source) that return samples
// only when something is wrong or rare: they must parse and run, not return samples here.
var quietWhenHealthy = map[string]bool{
	"rollouts.json: Stalled, rolling back or awaiting approval [A]": true,
	"spoke.json: RayServices not Ready [A]":                         true,
}

func TestDashboardsAndAlertsOnARunningFleet(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := t.Context()
	fleet, err := localfleet.Start(ctx, localfleet.Options{
		Members: []localfleet.MemberSpec{{
			Name:   member,
			Labels: map[string]string{"region": member},
			Nodes:  localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi", GPUs: 2}),
		}},
		KeepState: os.Getenv("RAYFLEET_E2E_KEEP") != "",
	})
	if err != nil {
		t.Fatalf("starting the local fleet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			fleet.DumpLogs(os.Stderr, 100)
		}
		fleet.Stop()
	})
	chart := filepath.Join(repoRoot(t), "charts", "rayfleet-hub")
	prom := startPrometheus(t, fleet, chart)

	hub := fleet.Hub.Client
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(gomega.Succeed())
	g.Expect(hub.Create(ctx, &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"},
		Spec: fleetv1alpha1.PlacementPolicySpec{}})).To(gomega.Succeed())
	served := hubRayService("served")
	g.Expect(hub.Create(ctx, served)).To(gomega.Succeed())
	// The member's hub policy guard refuses a RayService running as another ServiceAccount:
	// a refusal for rayfleet_member_refusals_total.
	refused := hubRayService("refused")
	refused.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.ServiceAccountName = "cluster-admin-sa"
	g.Expect(hub.Create(ctx, refused)).To(gomega.Succeed())

	g.Eventually(func(g gomega.Gomega) {
		var rs rayv1.RayService
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(served), &rs)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue(), "served Ready")
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())

	// A spec change rolls out to the member: rollout phase, clusters updated, duration.
	var rs rayv1.RayService
	g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(served), &rs)).To(gomega.Succeed())
	rs.Spec.ServeConfigV2 = strings.Replace(rs.Spec.ServeConfigV2, "num_replicas: 1", "num_replicas: 2", 1)
	g.Expect(hub.Update(ctx, &rs)).To(gomega.Succeed())
	g.Eventually(func(g gomega.Gomega) {
		var b fleetv1alpha1.RayServiceBinding
		g.Expect(hub.Get(ctx, client.ObjectKeyFromObject(served), &b)).To(gomega.Succeed())
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil())
		g.Expect(b.Status.Rollout.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", b.Status.Rollout.Message)
		g.Expect(prom.Value(g, "sum(rayfleet_rollout_duration_seconds_count)")).To(gomega.BeNumerically(">=", 1))
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())

	dashboards, err := monitoring.Dashboards(chart)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	alerts, err := monitoring.AlertExprs(chart)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	exprs := append(dashboards, alerts...)
	names, err := monitoring.MetricNames(filepath.Join(localcluster.DefaultBinDir(), "promql-names"), exprs)
	g.Expect(err).NotTo(gomega.HaveOccurred())

	// Every metric named is scraped from the hub or the spoke: a query naming a metric that
	// does not exist is a broken panel or an alert that can never fire.
	var missing []string
	g.Eventually(func(g gomega.Gomega) {
		scraped := prom.Names(g)
		missing = nil
		for i, e := range exprs {
			for _, n := range names[i] {
				if _, ok := notProduced[n]; ok {
					continue
				}
				if !scraped[n] {
					missing = append(missing, fmt.Sprintf("%s: %s", e.Source, n))
				}
			}
		}
		g.Expect(missing).To(gomega.BeEmpty(), "metrics named but not scraped")
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
	var binaries [][]byte
	for _, b := range []string{"hub", "spoke"} {
		data, err := os.ReadFile(filepath.Join(localfleet.DefaultRayFleetBin(), b))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		binaries = append(binaries, data)
	}
	for n, why := range notProduced {
		g.Expect(slices.ContainsFunc(binaries, func(b []byte) bool { return bytes.Contains(b, []byte(n)) })).
			To(gomega.BeTrue(), "%s is in neither bin/hub nor bin/spoke", n)
		t.Logf("not produced here (%s), but in the binaries: %s", why, n)
	}

	// Every dashboard query runs and, unless it names a metric not produced here or shows only
	// trouble, returns samples; every alert query runs.
	g.Eventually(func(g gomega.Gomega) {
		var empty []string
		for i, e := range exprs {
			n := prom.Count(g, e.Expr)
			skip := e.Alert || quietWhenHealthy[e.Source] || slices.ContainsFunc(names[i], func(n string) bool { _, ok := notProduced[n]; return ok })
			if n == 0 && !skip {
				empty = append(empty, e.Source+": "+e.Expr)
			}
		}
		g.Expect(empty).To(gomega.BeEmpty(), "dashboard queries without samples")
	}).WithTimeout(timeout).WithPolling(5 * poll).Should(gomega.Succeed())

	// Prometheus evaluated every alert rule against the fleet's series without an error, and
	// the refusal fired RayFleetMemberRefusals.
	g.Eventually(func(g gomega.Gomega) {
		rules := prom.Rules(g)
		g.Expect(rules).To(gomega.HaveLen(len(alerts)))
		for _, r := range rules {
			g.Expect(r.Health).To(gomega.Equal("ok"), "rule %s: %s", r.Name, r.LastError)
		}
		g.Expect(prom.Value(g, `count(ALERTS{alertname="RayFleetMemberRefusals",cluster="us",rule="hubPolicy/serviceAccount"})`)).
			To(gomega.BeNumerically("==", 1))
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// hubRayService is a small RayService for the hub, placed by the policy "one".
func hubRayService(name string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).Annotation(labels.PlacementPolicy, "one").Obj()
	rs.UID, rs.Generation = "", 0
	return rs
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// startPrometheus runs bin/k8s/prometheus on the hub's control plane (stopped with the fleet)
// scraping bin/hub and the spoke every second and evaluating the chart's alert rules as often.
func startPrometheus(t *testing.T, fleet *localfleet.Fleet, chart string) *monitoring.Prometheus {
	t.Helper()
	hostOf := func(metricsURL string) string {
		u, err := url.Parse(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		return u.Host
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: rayfleet-hub
    static_configs:
      - targets: [%q]
  - job_name: rayfleet-spoke
    static_configs:
      - targets: [%q]
`, filepath.Join(chart, monitoring.RulesFile), hostOf(fleet.HubProcess.MetricsURL), hostOf(fleet.Spokes[member].MetricsURL))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	_, err = fleet.Hub.StartProcess("prometheus", filepath.Join(localcluster.DefaultBinDir(), "prometheus"), []string{
		"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr,
	}, nil)
	if err != nil {
		t.Fatalf("starting prometheus: %v", err)
	}
	p := &monitoring.Prometheus{Base: "http://" + addr}
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		g.Expect(p.Value(g, `count(up == 1)`)).To(gomega.BeNumerically("==", 2), "hub and spoke up")
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
	return p
}
