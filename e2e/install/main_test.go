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
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"

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
	if os.Geteuid() != 0 {
		t.Skip("real Nodes need root (network namespaces, cgroups, mounts)")
	}
	repo, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{repo: repo, k8sBin: localcluster.DefaultBinDir(), rayfleetBin: localfleet.DefaultRayFleetBin(), dir: t.TempDir()}
	if missing := localcluster.MissingNodeTools(e.k8sBin); len(missing) > 0 {
		t.Fatalf("node tools %v missing from %s (make node-tools)", missing, e.k8sBin)
	}
	for _, bin := range []string{filepath.Join(e.k8sBin, "helm"), filepath.Join(e.k8sBin, "kubectl"), filepath.Join(e.rayfleetBin, "rayfleet")} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v: run `make tools build` (or set RAYFLEET_K8S_BIN and RAYFLEET_BIN)", err)
		}
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("runc not on PATH (Debian's runc package): %v", err)
	}
	images := filepath.Join(e.rayfleetBin, "images")
	rayfleetTar, pauseTar := filepath.Join(images, "rayfleet.tar"), filepath.Join(images, "pause.tar")
	image := imageName(t, rayfleetTar)
	i := strings.LastIndex(image, ":")
	e.imageRepo, e.imageTag = image[:i], image[i+1:]

	if e.hubNS, err = createNetNS(t, "rf-install-hub", hubPrefix); err != nil {
		t.Fatal(err)
	}
	if e.memberNS, err = createNetNS(t, "rf-install-m1", memberPrefix); err != nil {
		t.Fatal(err)
	}
	keep := os.Getenv("RAYFLEET_E2E_KEEP") != ""
	node := func(ns *localcluster.NetNS) *localcluster.RealNode {
		return &localcluster.RealNode{NetNS: ns, Images: []string{pauseTar, rayfleetTar}, SandboxImage: imageName(t, pauseTar), Runc: runc}
	}
	opts := []localcluster.Options{
		// No CRDDirs: the charts install their CRDs.
		{Name: "hub", KeepState: keep, Scheduler: true, ControllerManager: true, RealNode: node(e.hubNS)},
		{
			Name: "member", KeepState: keep, Scheduler: true, ControllerManager: true, RealNode: node(e.memberNS),
			// The Ray Pods' Nodes (type=kwok); the spoke runs on the real one.
			Nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"}),
		},
	}
	start := time.Now()
	clusters := make([]*localcluster.Cluster, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() { clusters[i], errs[i] = localcluster.Start(context.Background(), o) })
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			t.Cleanup(c.Stop)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("starting the clusters: %v", err)
	}
	e.hub, e.member = clusters[0], clusters[1]
	t.Logf("hub and member, each with a Ready real Node, up in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range clusters {
				fmt.Fprintf(os.Stderr, "######## cluster %s ########\n", c.Name)
				c.DumpLogs(os.Stderr, 100)
			}
		}
	})
	e.routeHubToMember(t)
	e.startDashboard(t)
	return e
}

// createNetNS makes a namespace named for this process, deleted after the test.
func createNetNS(t *testing.T, name string, prefix netip.Prefix) (*localcluster.NetNS, error) {
	ns, err := localcluster.CreateNetNS(fmt.Sprintf("%s-%d", name, os.Getpid()), prefix)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	return ns, nil
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

// imageName is the image an archive of make image holds.
func imageName(t *testing.T, archive string) string {
	t.Helper()
	name, err := localcluster.ArchiveImageName(archive)
	if err != nil {
		t.Fatalf("%v (make image)", err)
	}
	return name
}
