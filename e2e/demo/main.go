// Command demo is `make demo`: a local fleet — a hub and two members (us: CPU Nodes, eu: GPU
// Nodes) as real kube-apiserver/etcd pairs on loopback, kwok playing the Nodes, a Ray dashboard
// stand-in per member, bin/hub and one bin/spoke per member, joined with `rayfleet join` — then
// a sample RayService placed on both members through a PlacementPolicy with clusters: 2. It
// waits until the hub reports the RayService Ready, prints `rayfleet status` and the
// kubeconfigs, and keeps the fleet running until Ctrl-C (or exits at once with -exit).
//
// It lives under e2e/ because it runs the test harness's local fleet; `rayfleet dev` (the
// product's own command for this) comes with the charts/demo issue.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/internal/localcluster"
	"github.com/rayfleet/rayfleet/internal/localfleet"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

const (
	demoNamespace = "demo"
	demoName      = "fruit"
	readyTimeout  = 5 * time.Minute
)

func main() {
	exit := flag.Bool("exit", false, "stop the fleet once the RayService is Ready instead of waiting for Ctrl-C")
	keep := flag.Bool("keep", false, "keep the fleet's state directory (logs, kubeconfigs) after it stops")
	flag.Parse()
	benchutil.Main(func(ctx context.Context) error { return run(ctx, *exit, *keep) })
}

func run(ctx context.Context, exit, keep bool) error {
	begin := time.Now()
	fmt.Println("Starting a hub and two members (us, eu) on loopback...")
	f, err := localfleet.Start(ctx, localfleet.Options{
		KeepState: keep,
		Members: []localfleet.MemberSpec{
			{Name: "us", Labels: map[string]string{"region": "us"},
				Nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"})},
			{Name: "eu", Labels: map[string]string{"region": "eu"},
				Nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "32", Memory: "128Gi", GPUs: 4})},
		},
	})
	if err != nil {
		return fmt.Errorf("starting the local fleet: %w", err)
	}
	defer f.Stop()
	fmt.Printf("Fleet up and joined in %s.\n", time.Since(begin).Round(100*time.Millisecond))

	if err := f.Hub.CreateNamespace(ctx, demoNamespace); err != nil {
		return err
	}
	if err := applySample(ctx, f.Hub.Client); err != nil {
		return err
	}
	fmt.Printf("Applied PlacementPolicy %s/two-regions (clusters: 2) and RayService %s/%s; waiting for Ready...\n",
		demoNamespace, demoNamespace, demoName)
	if err := waitReady(ctx, f.Hub.Client); err != nil {
		f.DumpLogs(os.Stderr, 30)
		return err
	}
	fmt.Printf("RayService %s/%s is Ready on the hub (%s after start).\n\n", demoNamespace, demoName,
		time.Since(begin).Round(100*time.Millisecond))
	printStatus(ctx, f)
	if exit {
		return nil
	}
	fmt.Println("\nThe fleet keeps running; Ctrl-C stops it and removes its state.")
	<-ctx.Done()
	return nil
}

// applySample creates a PlacementPolicy placing on two clusters and a small
// RayService that uses it.
func applySample(ctx context.Context, hub client.Client) error {
	pp := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "two-regions"},
		Spec:       fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), SpreadBy: "region"},
	}
	if err := hub.Create(ctx, pp); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating PlacementPolicy: %w", err)
	}
	rs := raybuilder.MakeRayService(demoName, demoNamespace).ReplicaBounds(0, 1, 2).
		Annotation(labels.PlacementPolicy, pp.Name).Obj()
	rs.UID, rs.Generation = "", 0
	if err := hub.Create(ctx, rs); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating RayService: %w", err)
	}
	return nil
}

// waitReady waits until the hub RayService's Ready condition is True.
func waitReady(ctx context.Context, hub client.Client) error {
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		var rs rayv1.RayService
		if err := hub.Get(ctx, client.ObjectKey{Namespace: demoNamespace, Name: demoName}, &rs); err != nil {
			return false, nil //nolint:nilerr // not there yet; keep polling
		}
		return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady)), nil
	})
	if err != nil {
		return fmt.Errorf("RayService %s/%s did not become Ready within %s: %w", demoNamespace, demoName, readyTimeout, err)
	}
	return nil
}

// printStatus runs `rayfleet status -A` against the hub and lists the kubeconfigs.
func printStatus(ctx context.Context, f *localfleet.Fleet) {
	bin := filepath.Join(localfleet.DefaultRayFleetBin(), "rayfleet")
	cmd := exec.CommandContext(ctx, bin, "status", "--hub-kubeconfig", f.Hub.Kubeconfig, "-A")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "rayfleet status:", err)
	}
	fmt.Println("\nKubeconfigs:")
	fmt.Printf("  hub: kubectl --kubeconfig %s get rayservices -A\n", f.Hub.Kubeconfig)
	for _, name := range []string{"us", "eu"} {
		fmt.Printf("  %s:  kubectl --kubeconfig %s get rayservices,rayclusters,pods -A\n", name, f.Members[name].Kubeconfig)
	}
	fmt.Printf("Logs: %s\n", f.Dir)
}
