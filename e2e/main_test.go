//go:build e2e

// Package e2e runs the spoke agent against a real member control plane on loopback (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager, kwok playing four fake Nodes, the
// Gateway API CRDs) and a Ray dashboard stand-in in the test process, and checks that
// RayClusters and RayServices behave as they do under KubeRay v1.6.2.
// Like all of e2e/, it runs the binaries as processes and imports only shared/ (the local fleet
// and test helpers), never hub/, spoke/ or cmd/; no production code imports e2e/.
//
//	go test -tags e2e ./e2e/...              # binaries from bin/k8s and bin/spoke
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …  # keep the state dir (logs, audit) afterwards
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// Shared Eventually settings. The machine running this is small and shared, so the timeout is
// generous; a healthy run takes a few seconds per step.
const (
	timeout = 2 * time.Minute
	poll    = 200 * time.Millisecond
)

// spokeUser is the identity the spoke authenticates as, so that its requests can be told apart
// from the test's own in the audit log.
const spokeUser = "rayfleet-spoke"

// dashboardDeployDelay is how long the stand-in takes to bring a submitted Serve config from
// NOT_STARTED to RUNNING: long enough that the spoke sees the intermediate states, short enough
// for a quick suite.
const dashboardDeployDelay = time.Second

// suite is what TestMain starts for all tests.
type suite struct {
	cluster *localcluster.Cluster
	k8s     client.Client
	// dashboard stands in for the Ray dashboard and Serve proxy of every RayCluster; the spoke
	// reaches it through its address-template flags.
	dashboard *raydashboard.Server

	// spokeKubeconfig and spokeArgs start the spoke again (restartSpoke).
	spokeKubeconfig string
	spokeArgs       []string
	spokeMu         sync.Mutex
	spoke           *localcluster.Manager
	spokeStarts     int
}

var env = &suite{}

// defaultParallel replaces go test's default -parallel (GOMAXPROCS, 2 on a small machine):
// the tests mostly wait on the control plane, so running them all at once is what makes the
// suite quick.
const defaultParallel = "32"

func TestMain(m *testing.M) {
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", defaultParallel)
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	ctx := context.Background()
	start := time.Now()
	binDir := localcluster.DefaultBinDir()
	dirs, err := crdDirs(binDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: CRDs:", err)
		return 1
	}
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		BinDir:            binDir,
		Scheduler:         true,
		ControllerManager: true,
		Nodes:             localcluster.FakeNodes(4, localcluster.NodeSpec{CPU: "64", Memory: "256Gi", GPUs: 8}),
		CRDDirs:           dirs,
		KeepState:         os.Getenv("RAYFLEET_E2E_KEEP") != "",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the member control plane:", err)
		return 1
	}
	defer func() {
		begin := time.Now()
		cluster.Stop()
		fmt.Fprintf(os.Stderr, "e2e: stopped in %v\n", time.Since(begin).Round(time.Millisecond))
	}()
	dash := raydashboard.New(raydashboard.Options{DeployDelay: dashboardDeployDelay})
	dashURL, err := dash.Start("127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the Ray dashboard stand-in:", err)
		return 1
	}
	defer func() { _ = dash.Close() }()
	kubeconfig, _, err := cluster.UserKubeconfig(spokeUser)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.cluster, env.k8s, env.dashboard = cluster, cluster.Client, dash
	env.spokeKubeconfig = kubeconfig
	env.spokeArgs = []string{
		"--zap-devel",
		"--dashboard-address-template=" + raydashboard.DashboardTemplate(dashURL),
		"--serve-proxy-address-template=" + raydashboard.ProxyTemplate(dashURL),
		"--report-interval=2s", // the ClusterReport test waits for a second heartbeat
	}
	if _, err = env.startSpoke(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the spoke:", err)
		cluster.DumpLogs(os.Stderr, 100)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: member control plane, dashboard stand-in and spoke up in %v (state in %s)\n",
		time.Since(start).Round(time.Millisecond), cluster.Dir)

	code := m.Run()
	if exited, exitErr := env.currentSpoke().Exited(); exited {
		fmt.Fprintln(os.Stderr, "e2e: the spoke exited during the tests:", exitErr)
		code = 1
	}
	if code != 0 {
		cluster.DumpLogs(os.Stderr, 150)
	}
	return code
}

// crdDirs are the CRDs the member gets: ray.io and, so that the spoke sees Gateway API and
// incremental upgrades can run, gateway.networking.k8s.io.
func crdDirs(binDir string) ([]string, error) {
	ray, err := localcluster.SpokeCRDDir(binDir)
	if err != nil {
		return nil, err
	}
	gateway, err := localcluster.GatewayAPICRDDir()
	if err != nil {
		return nil, err
	}
	return []string{ray, gateway}, nil
}

// startSpoke starts bin/spoke with the suite's arguments and makes it the current one; each
// start logs to a file of its own (spoke.log, spoke-2.log, …).
func (s *suite) startSpoke(ctx context.Context) (*localcluster.Manager, error) {
	s.spokeMu.Lock()
	defer s.spokeMu.Unlock()
	s.spokeStarts++
	name := "spoke"
	if s.spokeStarts > 1 {
		name = fmt.Sprintf("spoke-%d", s.spokeStarts)
	}
	m, err := s.cluster.StartManager(ctx, name, spokeBinary(), s.spokeKubeconfig, s.spokeArgs, nil)
	if err != nil {
		return nil, err
	}
	s.spoke = m
	return m, nil
}

// currentSpoke is the spoke running now.
func (s *suite) currentSpoke() *localcluster.Manager {
	s.spokeMu.Lock()
	defer s.spokeMu.Unlock()
	return s.spoke
}

// restartSpoke stops the current spoke (SIGTERM, as a rolling update would) and starts a new
// one. Only a test that runs alone may call it: see TestRayServiceSurvivesSpokeRestart.
func (s *suite) restartSpoke(t *testing.T) {
	t.Helper()
	old := s.currentSpoke()
	old.Stop()
	if _, err := s.startSpoke(t.Context()); err != nil {
		t.Fatalf("restarting the spoke: %v", err)
	}
}

// spokeBinary is $RAYFLEET_BIN/spoke, default bin/spoke in the repository.
func spokeBinary() string {
	dir := os.Getenv("RAYFLEET_BIN")
	if dir == "" {
		if root, err := localcluster.RepoRoot(); err == nil {
			dir = filepath.Join(root, "bin")
		}
	}
	return filepath.Join(dir, "spoke")
}

// eventually polls check until it passes, the shared timeout expires or the spoke dies.
func eventually(t *testing.T, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if exited, err := env.currentSpoke().Exited(); exited {
			gomega.StopTrying(fmt.Sprintf("the spoke exited: %v", err)).Now()
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// newNamespace creates a namespace of its own for one test and deletes it afterwards.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	name = strings.NewReplacer("/", "-", "_", "-").Replace(name)
	if len(name) > 40 {
		name = name[:40]
	}
	name = "e2e-" + name + "-" + utilrand.String(5)
	if err := env.cluster.CreateNamespace(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns := namespaceObject(name)
		if err := env.k8s.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Logf("deleting namespace %s: %v", name, err)
		}
	})
	return name
}
