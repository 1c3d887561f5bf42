//go:build e2e

// Package install does what README.md's "Installing on real clusters" says, on a hub and a
// member that each have one real Node (kubelet, containerd, runc): the image `make image`
// writes is imported into each Node, both charts are installed with Helm into a namespace
// that enforces the restricted Pod Security Standard, and the hub and spoke run as Pods
// behind their real probes, ServiceAccount tokens and leader election.
//
// Root only (network namespaces, mounts, cgroups). The Ray Pods run on the member's kwok
// Nodes: no Node here can run a Ray image, so the Ray dashboard stand-in answers the spoke.
//
//	make build image node-tools && go test -tags e2e ./e2e/install/
package install

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/rayfleet/rayfleet/e2e/internal/realnode"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// Shared Eventually settings. A Pod's way to Ready includes unpacking the image and the
// probes' initial delays; a busy 2-core machine stretches both.
const (
	timeout = 3 * time.Minute
	poll    = 500 * time.Millisecond
)

// namespace is both charts' release namespace, as the README installs them.
const namespace = "rayfleet-system"

// Release names and the member's name, as the README uses them.
const (
	hubRelease   = "rayfleet-hub"
	spokeRelease = "rayfleet-spoke"
	memberName   = "us-east"
)

// Each cluster's Node has its own network namespace and address. The member's API server is
// also forwarded into the hub's namespace at the member's address: the route a real network
// would give the hub's Pods to the member.
var (
	hubPrefix    = netip.MustParsePrefix("10.200.1.1/24")
	memberPrefix = netip.MustParsePrefix("10.200.2.1/24")
)

// env is the test's world: two clusters with real Nodes, the binaries and the image.
type env struct {
	repo, k8sBin, rayfleetBin, dir string
	// imageRepo and imageTag name the image imported into each Node.
	imageRepo, imageTag string
	hub, member         *localcluster.Cluster
	hubNS, memberNS     *localcluster.NetNS
	// memberServer is the member's API server as the hub's Pods reach it.
	memberServer string
	// dashboardURL is the Ray dashboard stand-in as the spoke's Pod reaches it.
	dashboardURL string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	realnode.SkipUnavailable(t)
	repo, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{repo: repo, k8sBin: localcluster.DefaultBinDir(), rayfleetBin: localfleet.DefaultRayFleetBin(), dir: t.TempDir()}
	for _, bin := range []string{filepath.Join(e.k8sBin, "helm"), filepath.Join(e.k8sBin, "kubectl"), filepath.Join(e.rayfleetBin, "rayfleet")} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v: run `make tools build` (or set RAYFLEET_K8S_BIN and RAYFLEET_BIN)", err)
		}
	}
	image := realnode.RayFleet(t)
	i := strings.LastIndex(image.Name, ":")
	e.imageRepo, e.imageTag = image.Name[:i], image.Name[i+1:]

	clusters := realnode.Start(t,
		// No CRDDirs: the charts install their CRDs.
		realnode.Spec{Options: localcluster.Options{Name: "hub"}, Prefix: hubPrefix, Images: []realnode.Image{image}},
		realnode.Spec{
			Options: localcluster.Options{
				Name: "member",
				// The Ray Pods' Nodes (type=kwok), with GPUs as a GPU pool has; the spoke runs on the real one.
				Nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi", GPUs: 2}),
			},
			Prefix: memberPrefix, Images: []realnode.Image{image},
		},
	)
	e.hub, e.hubNS = clusters[0].Cluster, clusters[0].NetNS
	e.member, e.memberNS = clusters[1].Cluster, clusters[1].NetNS
	e.routeHubToMember(t)
	e.startDashboard(t)
	return e
}

// routeHubToMember makes the member's advertised address answer in the hub's namespace too,
// forwarded to the member's API server, so that the hub's Pods reach it as across a network.
func (e *env) routeHubToMember(t *testing.T) {
	t.Helper()
	u, err := url.Parse(e.member.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort(memberPrefix.Addr().String(), u.Port())
	if err := e.hubNS.AddAddress(memberPrefix.Addr()); err != nil {
		t.Fatal(err)
	}
	fwd, err := e.hubNS.Forward(listen, u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fwd.Close() })
	e.memberServer = "https://" + listen
}

// startDashboard runs the Ray dashboard stand-in on the host and forwards it into the
// member's namespace, where the spoke's Pod reaches it.
func (e *env) startDashboard(t *testing.T) {
	t.Helper()
	dash := raydashboard.New(raydashboard.Options{DeployDelay: localfleet.DefaultDashboardDeployDelay})
	hostURL, err := dash.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dash.Close() })
	u, err := url.Parse(hostURL)
	if err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort(memberPrefix.Addr().String(), u.Port())
	fwd, err := e.memberNS.Forward(listen, u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fwd.Close() })
	e.dashboardURL = "http://" + listen
}

// run runs one of the tools in bin/k8s or bin and returns its combined output.
func (e *env) run(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	// Helm keeps its cache, config and data in the test's directory, not in $HOME.
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(e.dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(e.dir, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(e.dir, "helm", "data"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// helm and kubectl run the tools from bin/k8s; kubectl's first argument is the kubeconfig.
func (e *env) helm(ctx context.Context, args ...string) (string, error) {
	return e.run(ctx, filepath.Join(e.k8sBin, "helm"), args...)
}

func (e *env) kubectl(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	return e.run(ctx, filepath.Join(e.k8sBin, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
}

// eventually polls check until it passes or the shared timeout expires.
func eventually(t *testing.T, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(check).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// step runs one stage of the test as a subtest; the stages build on each other, so the test
// stops at the first that fails.
func step(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	start := time.Now()
	ok := t.Run(name, f)
	t.Logf("step %q: %v", name, time.Since(start).Round(time.Millisecond))
	if !ok {
		t.FailNow()
	}
}
