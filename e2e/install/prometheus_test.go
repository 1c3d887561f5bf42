//go:build e2e

package install

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/monitoring"
)

// The namespace and ServiceAccount of the hub chart README's Prometheus.
const (
	promNamespace = "monitoring"
	promAccount   = "prometheus"
	// promPort is where each Prometheus listens in its Node's network namespace.
	promPort = "9090"
)

// scrapeSection is the hub chart README's section with the scrape job and the Role for it.
const scrapeSection = "### Scraping without the Prometheus Operator"

// notScrapedHere are the metrics the dashboards or alerts name that this install does not
// produce, with why: each needs an event the install does not cause.
var notScrapedHere = map[string]string{
	"rayfleet_failovers_total":                            "needs a member down past a failover toleration",
	"rayfleet_bluegreen_green_percent":                    "needs a BlueGreen rollout through a Gateway",
	"rayfleet_bluegreen_capacity_percent":                 "needs a BlueGreen rollout whose capacity follows the traffic",
	"rayfleet_member_token_refresh_failures_total":        "needs a member refusing the hub's TokenRequest",
	"rayfleet_orphans_swept_total":                        "needs an orphaned member copy",
	"rayfleet_serve_probe_total":                          "needs traffic routed through a Gateway",
	"rayfleet_member_refusals_total":                      "needs a member refusing a copy",
	"rayfleet_rollout_duration_seconds_bucket":            "needs a fleet rollout of a changed spec",
	"rayfleet_member_credential_expiry_timestamp_seconds": "the test joins without an expiring token",
}

// quietHere are the dashboard queries (by monitoring.Expr.Source) that return samples only
// when something is wrong or rare: they must run, not return samples.
var quietHere = map[string]bool{
	"rollouts.json: Stalled, rolling back or awaiting approval [A]": true,
	"spoke.json: RayServices not Ready [A]":                         true,
}

// scrapedBy is a Prometheus running in a cluster's Node namespace, as the README configures it.
type scrapedBy struct {
	cluster *localcluster.Cluster
	prom    *monitoring.Prometheus
}

// scrape runs a real Prometheus on each cluster's Node with the README's job, rules and Role,
// and checks that it discovers the charts' Pods through their metrics Services, that every
// metric a dashboard or an alert names is scraped from them, that every dashboard query runs
// (and returns samples unless it shows only trouble or names a metric not produced here), and
// that every alert rule evaluates.
func (e *env) scrape(t *testing.T) {
	job, rbac := e.readmeScrapeConfig(t)
	chart := e.chart(hubRelease)
	hub := e.startPrometheus(t, e.hub, e.hubNS, hubPrefix, job, rbac, filepath.Join(chart, monitoring.RulesFile))
	member := e.startPrometheus(t, e.member, e.memberNS, memberPrefix, job, rbac, "")
	proms := []scrapedBy{hub, member}

	// Discovery finds each release's Pods behind its metrics Service, and no other target.
	for _, s := range proms {
		release := hubRelease
		if s.cluster == e.member {
			release = spokeRelease
		}
		eventually(t, func(g gomega.Gomega) {
			var want []string
			for _, p := range e.releasePods(t.Context(), g, s.cluster, release) {
				if podReady(&p) {
					want = append(want, p.Name)
				}
			}
			var got []string
			for _, tg := range s.prom.Targets(g) {
				g.Expect(tg.Health).To(gomega.Equal("up"), "%s: target %s: %s", s.cluster.Name, tg.ScrapeURL, tg.LastError)
				got = append(got, tg.Labels["pod"])
			}
			slices.Sort(want)
			slices.Sort(got)
			g.Expect(got).To(gomega.Equal(want), "%s: the Pods scraped", s.cluster.Name)
		})
	}

	dashboards, err := monitoring.Dashboards(chart)
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := monitoring.AlertExprs(chart)
	if err != nil {
		t.Fatal(err)
	}
	exprs := append(dashboards, alerts...)
	names, err := monitoring.MetricNames(filepath.Join(e.k8sBin, "promql-names"), exprs)
	if err != nil {
		t.Fatal(err)
	}
	notProduced := func(ns []string) bool {
		return slices.ContainsFunc(ns, func(n string) bool { _, ok := notScrapedHere[n]; return ok })
	}

	// Every metric named is scraped from the hub's or the spoke's Pods.
	eventually(t, func(g gomega.Gomega) {
		scraped := map[string]bool{}
		for _, s := range proms {
			for n := range s.prom.Names(g) {
				scraped[n] = true
			}
		}
		var missing []string
		for i, ex := range exprs {
			for _, n := range names[i] {
				if _, ok := notScrapedHere[n]; !ok && !scraped[n] {
					missing = append(missing, ex.Source+": "+n)
				}
			}
		}
		g.Expect(missing).To(gomega.BeEmpty(), "metrics named but not scraped from the Pods")
	})

	// The metrics keep their own namespace label: the RayService's, not the Pod's.
	eventually(t, func(g gomega.Gomega) {
		v := hub.prom.Query(g, fmt.Sprintf(`rayfleet_rayservice_clusters{namespace=%q,name=%q}`, teamNS, rayService))
		g.Expect(v.Result).To(gomega.HaveLen(1), "the RayService's series, by its namespace")
	})

	// Every dashboard query runs on both and returns samples on one, unless it shows only
	// trouble or names a metric not produced here.
	eventually(t, func(g gomega.Gomega) {
		var empty []string
		for i, ex := range exprs {
			n := 0
			for _, s := range proms {
				n += s.prom.Count(g, ex.Expr)
			}
			if n == 0 && !ex.Alert && !quietHere[ex.Source] && !notProduced(names[i]) {
				empty = append(empty, ex.Source+": "+ex.Expr)
			}
		}
		g.Expect(empty).To(gomega.BeEmpty(), "dashboard queries without samples")
	})

	// The hub's Prometheus evaluates every alert rule of the chart without an error.
	eventually(t, func(g gomega.Gomega) {
		rules := hub.prom.Rules(g)
		g.Expect(rules).To(gomega.HaveLen(len(alerts)))
		for _, r := range rules {
			g.Expect(r.Health).To(gomega.Equal("ok"), "rule %s: %s", r.Name, r.LastError)
		}
	})
}

// readmeScrapeConfig returns the two YAML blocks of the hub chart README's scrapeSection:
// the Prometheus configuration and the Role (with its binding) its discovery needs.
func (e *env) readmeScrapeConfig(t *testing.T) (config, rbac string) {
	t.Helper()
	f, err := os.Open(filepath.Join(e.chart(hubRelease), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var block *strings.Builder
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.HasPrefix(line, scrapeSection):
			in = true
		case in && strings.HasPrefix(line, "#"):
			in = false
		case in && block == nil && line == "```yaml":
			block = &strings.Builder{}
		case in && block != nil && line == "```":
			blocks = append(blocks, block.String())
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("%q in charts/%s/README.md has %d YAML blocks, want 2 (the scrape job, the Role)", scrapeSection, hubRelease, len(blocks))
	}
	return blocks[0], blocks[1]
}

// startPrometheus runs bin/k8s/prometheus in cluster c's Node namespace with the README's
// configuration: discovery through a kubeconfig of the README's ServiceAccount and Role (the
// README's Prometheus runs in the cluster; this one runs beside the Node), the scrape and
// evaluation intervals shortened for the test, and rules when set. It is reached from the
// host through a forwarded loopback port.
func (e *env) startPrometheus(t *testing.T, c *localcluster.Cluster, ns *localcluster.NetNS, prefix netip.Prefix, config, rbac, rules string) scrapedBy {
	t.Helper()
	ctx := t.Context()
	if _, err := e.kubectl(ctx, c.Kubeconfig, "create", "namespace", promNamespace); err != nil {
		t.Fatal(err)
	}
	if _, err := e.kubectl(ctx, c.Kubeconfig, "create", "serviceaccount", promAccount, "-n", promNamespace); err != nil {
		t.Fatal(err)
	}
	e.apply(t, c.Kubeconfig, rbac)
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := e.tokenKubeconfig(ctx, c, promNamespace, promAccount,
		"https://"+net.JoinHostPort(prefix.Addr().String(), u.Port()))
	if err != nil {
		t.Fatal(err)
	}

	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(config), &cfg); err != nil {
		t.Fatalf("the README's scrape configuration: %v", err)
	}
	cfg["global"] = map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"}
	delete(cfg, "rule_files")
	if rules != "" {
		cfg["rule_files"] = []string{rules}
	}
	jobs, _ := cfg["scrape_configs"].([]any)
	if len(jobs) == 0 {
		t.Fatal("the README's scrape configuration has no scrape_configs")
	}
	for _, j := range jobs {
		sds, _ := j.(map[string]any)["kubernetes_sd_configs"].([]any)
		if len(sds) == 0 {
			t.Fatal("a scrape job of the README discovers nothing through Kubernetes")
		}
		for _, sd := range sds {
			sd.(map[string]any)["kubeconfig_file"] = kubeconfig
		}
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "prometheus-"+c.Name)
	path := filepath.Join(dir, "prometheus.yaml")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort(prefix.Addr().String(), promPort)
	if _, err := c.StartProcessIn(ns, "prometheus", filepath.Join(e.k8sBin, "prometheus"), []string{
		"--config.file=" + path, "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + listen,
	}, nil); err != nil {
		t.Fatalf("starting prometheus on %s: %v", c.Name, err)
	}
	exposed, err := ns.Expose("127.0.0.1:0", listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exposed.Close() })
	addr := exposed.(net.Listener).Addr().String()
	return scrapedBy{cluster: c, prom: &monitoring.Prometheus{Base: "http://" + addr}}
}
