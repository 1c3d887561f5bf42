//go:build e2e

package install

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// TestDevUpRealNodes runs `rayfleet dev up --real-nodes --detach`: every cluster gets a Ready
// real Node, tainted so that the sample's Ray Pods stay on kwok's Nodes, and `dev down` leaves
// no network namespace behind.
func TestDevUpRealNodes(t *testing.T) {
	e := &env{k8sBin: localcluster.DefaultBinDir(), dir: t.TempDir()}
	if os.Geteuid() != 0 {
		t.Skip("real Nodes need root (network namespaces, cgroups, mounts)")
	}
	cli := filepath.Join(localfleet.DefaultRayFleetBin(), "rayfleet")
	state := filepath.Join(e.dir, "state")
	before := netnsList(t)
	dev := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := e.run(ctx, cli, append(append([]string{"dev"}, args...), "--state-dir", state)...)
		if err != nil {
			t.Error(err)
		}
		return out
	}
	t.Cleanup(func() {
		dev("down")
		// Only the fleet's own: other tests on the machine may hold Pod namespaces (cni-…).
		leaked := slices.DeleteFunc(netnsList(t), func(n string) bool {
			return slices.Contains(before, n) || !strings.HasPrefix(n, "rf-fleet-")
		})
		if len(leaked) > 0 {
			t.Errorf("dev down left network namespaces %v", leaked)
		}
	})
	start := time.Now()
	out := dev("up", "--detach", "--real-nodes", "--base-port", strconv.Itoa(freeBasePort(t)),
		"--bin", localfleet.DefaultRayFleetBin(), "--k8s-bin", e.k8sBin)
	t.Logf("rayfleet dev up --real-nodes --detach (%v):\n%s", time.Since(start).Round(time.Millisecond), out)
	if t.Failed() {
		t.FailNow()
	}
	for _, name := range []string{"hub", "us", "eu"} {
		c := connect(t, filepath.Join(state, "kubeconfigs", name+".kubeconfig"))
		var node corev1.Node
		if err := c.Get(t.Context(), client.ObjectKey{Name: name + "-node"}, &node); err != nil {
			t.Errorf("%s's real Node: %v", name, err)
			continue
		}
		if !nodeReady(&node) {
			t.Errorf("Node %s not Ready: %+v", node.Name, node.Status.Conditions)
		}
		if !slices.ContainsFunc(node.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == localcluster.RealNodeTaintKey }) {
			t.Errorf("Node %s taints %+v, want %s", node.Name, node.Spec.Taints, localcluster.RealNodeTaintKey)
		}
		if name == "hub" {
			continue
		}
		var pods corev1.PodList
		if err := c.List(t.Context(), &pods, client.InNamespace("demo")); err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			t.Errorf("%s: no Ray Pods in demo", name)
		}
		for _, p := range pods.Items {
			if !strings.HasPrefix(p.Spec.NodeName, "kwok-") {
				t.Errorf("%s: Ray Pod %s on Node %q, want a kwok Node", name, p.Name, p.Spec.NodeName)
			}
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// connect is an admin client from a kubeconfig `dev up` wrote.
func connect(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: localcluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// netnsList names the network namespaces under /run/netns.
func netnsList(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var names []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

// freeBasePort finds three free ports in a row for the dev fleet's API servers.
func freeBasePort(t *testing.T) int {
	t.Helper()
	for base := 27443; base < 28443; base += 10 {
		if free(base) && free(base+1) && free(base+2) {
			return base
		}
	}
	t.Fatal("no three free ports in a row between 27443 and 28443")
	return 0
}

func free(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = ln.Close()
	return true
}
