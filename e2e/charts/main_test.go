//go:build e2e

// Package charts installs the Helm charts into local control planes and proves their RBAC: the
// real bin/hub and bin/spoke run with tokens of the charts' ServiceAccounts (not admin) through
// a full place-and-aggregate cycle, `rayfleet join` uses the hub identity the spoke chart made,
// and `kubectl auth can-i` shows that identity cannot read Secrets or Pods on the member.
// It imports only shared/ (the local fleet, hubaccess and test helpers), never hub/, spoke/ or
// cmd/.
//
//	make build && go test -tags e2e ./e2e/charts/   # binaries from bin/ and bin/k8s
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …          # keep the state dirs (logs) afterwards
package charts

import (
	"context"
	"errors"
	"fmt"
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

// Shared Eventually settings: generous for a small shared machine; a healthy run needs a few
// seconds per step.
const (
	timeout = 90 * time.Second
	poll    = 250 * time.Millisecond
)

// namespace is both charts' release namespace: the hub namespace on the hub, the spoke's and
// the hub identity's namespace on the member.
const namespace = "rayfleet-system"

// Release names, as the charts' docs use them.
const (
	hubRelease   = "rayfleet-hub"
	spokeRelease = "rayfleet-spoke"
)

// memberName is the member's name on the hub.
const memberName = "m1"

// env is the test's world: the binaries, a hub and a member control plane, and what runs
// against them.
type env struct {
	// repo is the repository root (the charts' parent).
	repo string
	// k8sBin holds helm and kubectl (and the control-plane binaries).
	k8sBin string
	// rayfleetBin holds bin/hub, bin/spoke and bin/rayfleet.
	rayfleetBin string
	// dir holds the test's own files: kubeconfigs and Helm's home.
	dir string
	// hub and member are the control planes.
	hub, member *localcluster.Cluster
	// agents are bin/hub and bin/spoke once started.
	agents []*localcluster.Manager
	// dashboard is the member's Ray dashboard stand-in.
	dashboard *raydashboard.Server
	// hubSA and spokeSA are kubeconfigs with tokens of the charts' ServiceAccounts: the hub's
	// on the hub, the spoke's on the member.
	hubSA, spokeSA string
}

// newEnv finds the binaries and starts the hub's and the member's control planes at once.
func newEnv(t *testing.T) *env {
	t.Helper()
	repo, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{repo: repo, k8sBin: localcluster.DefaultBinDir(), rayfleetBin: localfleet.DefaultRayFleetBin(), dir: t.TempDir()}
	for _, bin := range []string{
		filepath.Join(e.k8sBin, "helm"), filepath.Join(e.k8sBin, "kubectl"),
		filepath.Join(e.rayfleetBin, "hub"), filepath.Join(e.rayfleetBin, "spoke"), filepath.Join(e.rayfleetBin, "rayfleet"),
	} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v: run `make tools build` (or set RAYFLEET_K8S_BIN and RAYFLEET_BIN)", err)
		}
	}
	keep := os.Getenv("RAYFLEET_E2E_KEEP") != ""
	start := time.Now()
	opts := []localcluster.Options{
		// No CRDDirs: the charts install their CRDs.
		{Name: "hub", KeepState: keep},
		{
			Name: "member", KeepState: keep, Scheduler: true,
			// Its token controller fills the chart's hub token Secret `rayfleet join` waits for.
			ControllerManager: true,
			Nodes:             localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"}),
		},
	}
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
		t.Fatalf("starting the control planes: %v", err)
	}
	e.hub, e.member = clusters[0], clusters[1]
	// Steps are subtests, whose cleanups run when the step ends: what outlives a step is
	// stopped here, after the test.
	t.Cleanup(func() {
		if e.dashboard != nil {
			_ = e.dashboard.Close()
		}
	})
	t.Logf("hub and member control planes up in %v (state in %s and %s)", time.Since(start).Round(time.Millisecond), e.hub.Dir, e.member.Dir)
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range clusters {
				fmt.Fprintf(os.Stderr, "######## cluster %s ########\n", c.Name)
				c.DumpLogs(os.Stderr, 150)
			}
		}
	})
	return e
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

// exited fails when bin/hub or bin/spoke has exited: waiting any longer is pointless.
func (e *env) exited() error {
	for _, m := range e.agents {
		if done, err := m.Exited(); done {
			if err == nil {
				err = errors.New("exit status 0")
			}
			return fmt.Errorf("%s exited; its log is %s: %w", m.Name, m.LogPath, err)
		}
	}
	return nil
}

// eventually polls check until it passes, the shared timeout expires or an agent dies.
func (e *env) eventually(t *testing.T, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := e.exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// step runs one stage of the test as a subtest; the stages build on each other, so the test
// stops at the first that fails.
func step(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, f) {
		t.FailNow()
	}
}
