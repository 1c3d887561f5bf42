//go:build e2e

// Package e2e runs the spoke agent against a real member control plane on loopback (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager, kwok playing four fake Nodes) and
// checks that RayClusters behave as they do under KubeRay v1.6.2.
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
	"testing"
	"time"

	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/localcluster"
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

// suite is what TestMain starts for all tests.
type suite struct {
	cluster *localcluster.Cluster
	k8s     client.Client
	spoke   *localcluster.Manager
}

var env suite

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
	crdDir, err := localcluster.SpokeCRDDir(binDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: CRDs:", err)
		return 1
	}
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		BinDir:            binDir,
		Scheduler:         true,
		ControllerManager: true,
		Nodes:             localcluster.FakeNodes(4, localcluster.NodeSpec{CPU: "64", Memory: "256Gi", GPUs: 8}),
		CRDDirs:           []string{crdDir},
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
	kubeconfig, _, err := cluster.UserKubeconfig(spokeUser)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	spoke, err := cluster.StartManager(ctx, "spoke", spokeBinary(), kubeconfig, []string{"--zap-devel"}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the spoke:", err)
		cluster.DumpLogs(os.Stderr, 100)
		return 1
	}
	env = suite{cluster: cluster, k8s: cluster.Client, spoke: spoke}
	fmt.Fprintf(os.Stderr, "e2e: member control plane and spoke up in %v (state in %s)\n",
		time.Since(start).Round(time.Millisecond), cluster.Dir)

	code := m.Run()
	if exited, exitErr := spoke.Exited(); exited {
		fmt.Fprintln(os.Stderr, "e2e: the spoke exited during the tests:", exitErr)
		code = 1
	}
	if code != 0 {
		cluster.DumpLogs(os.Stderr, 150)
	}
	return code
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
		if exited, err := env.spoke.Exited(); exited {
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
