//go:build e2e

package fleetray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/internal/realnode"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// shared is the fleet the tests share, started by the first one that asks and stopped by
// TestMain: the real Nodes' start and image import are a large part of a test's time.
var shared struct {
	once   sync.Once
	fleet  *localfleet.Fleet
	err    error
	failed atomic.Bool
}

// sharedFleet is the shared fleet, started on the first call (see startFleet); a failed test
// has the fleet's logs dumped when it stops.
func sharedFleet(t *testing.T) *localfleet.Fleet {
	t.Helper()
	shared.once.Do(func() {
		shared.err = errors.New("the fleet did not start")
		shared.fleet = startFleet(t)
		shared.err = nil
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			shared.failed.Store(true)
		}
	})
	return shared.fleet
}

// stopFleet stops the shared fleet if it was started, dumping its logs if a test failed.
func stopFleet() {
	f := shared.fleet
	if f == nil {
		return
	}
	if shared.failed.Load() {
		f.DumpLogs(os.Stderr, 80)
	}
	stop := time.Now()
	f.Stop()
	fmt.Printf("fleet stopped in %s (state in %s)\n", time.Since(stop).Round(time.Millisecond), f.Dir)
}

// Every member has fake GPU Nodes beside its real Node, for worker groups that only need to be
// counted (TestCapacityFollowsTraffic): kwok makes their Pods Running and Ready at once, with
// no Ray in them. The Nodes are labelled and tainted gpuNodeKey=true, so that only Pods
// selecting and tolerating that land there; the heads stay on the real Node.
const (
	gpuNodeKey  = "e2e.rayfleet.io/fake-gpu"
	gpuNodes    = 2
	gpusPerNode = 4
)

// gpuNodeSpecs are a member's fake GPU Nodes.
func gpuNodeSpecs() []localcluster.NodeSpec {
	return localcluster.FakeNodes(gpuNodes, localcluster.NodeSpec{
		CPU: "8", Memory: "32Gi", GPUs: gpusPerNode,
		Labels: map[string]string{gpuNodeKey: "true"},
		Taints: []corev1.Taint{{Key: gpuNodeKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
	})
}

// startFleet starts the hub (with Traefik and the Gateway) and the two members, each with a
// real Node holding the pause and Ray images and the fake GPU Nodes, and waits until the hub
// finds both Ready. The fleet outlives t: stopFleet stops it.
func startFleet(t *testing.T) *localfleet.Fleet {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]localfleet.MemberSpec, 0, len(members))
	for _, m := range members {
		specs = append(specs, localfleet.MemberSpec{Name: m, Labels: map[string]string{regionKey: m}, Nodes: gpuNodeSpecs()})
	}
	pause, ray := realnode.Pause(t), realnode.Ray(t)
	start := time.Now()
	f, err := localfleet.Start(context.Background(), localfleet.Options{
		Members:   specs,
		KeepState: os.Getenv("RAYFLEET_E2E_KEEP") != "",
		Traffic:   &localfleet.TrafficOptions{ServeIPs: serveIPs},
		RealNodes: &localfleet.RealNodes{
			Images:       []string{pause.Archive, ray.Archive},
			SandboxImage: pause.Name,
			Runc:         runc,
			Ray:          true,
		},
	})
	if err != nil {
		t.Fatalf("starting the fleet: %v", err)
	}
	shared.fleet = f
	eventuallyFor(t, f, 2*time.Minute, func(g gomega.Gomega) {
		for _, m := range members {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(f.Hub.Client.Get(t.Context(), client.ObjectKey{Name: m}, &mc)).To(gomega.Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeTrue(), "%s Ready", m)
		}
	})
	t.Logf("hub, Traefik and %d members with real Nodes (and %d fake GPU Nodes each) up and Ready in %s (gateway %s)",
		len(f.Members), gpuNodes, time.Since(start).Round(time.Second), f.GatewayURL)
	return f
}

// setUp skips t where real Nodes cannot run, and otherwise creates ns (prepareNamespace), a
// PlacementPolicy with policy and a hub RayService ns/name under it running the test app at v1
// (with serveService, if any), deleted when t ends. It returns the shared fleet and when the
// RayService was created.
func setUp(t *testing.T, ns, name string, policy fleetv1alpha1.PlacementPolicySpec, serveService *corev1.Service) (*localfleet.Fleet, time.Time) {
	t.Helper()
	return setUpSpec(t, ns, name, policy, func(image string) rayv1.RayServiceSpec {
		return rayv1.RayServiceSpec{
			ServeConfigV2:  rayapp.ServeConfig("v1"),
			RayClusterSpec: rayapp.ClusterSpec(image),
			ServeService:   serveService,
		}
	})
}

// setUpSpec is setUp with the hub RayService's spec made by spec from the Ray image's name
// (asked for once the test is known to run: without the image it fails).
func setUpSpec(t *testing.T, ns, name string, policy fleetv1alpha1.PlacementPolicySpec, spec func(image string) rayv1.RayServiceSpec) (*localfleet.Fleet, time.Time) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	f := sharedFleet(t)
	g := gomega.NewWithT(t)
	prepareNamespace(t, f, ns)
	deleteOnExit(t, f, ns, name)
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: policy}
	g.Expect(f.Hub.Client.Create(t.Context(), pp)).To(gomega.Succeed())
	rs := &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{labels.PlacementPolicy: pp.Name}},
		Spec:       spec(realnode.Ray(t).Name),
	}
	created := time.Now()
	g.Expect(f.Hub.Client.Create(t.Context(), rs)).To(gomega.Succeed())
	return f, created
}

// prepareNamespace creates ns on the hub and the members. The test app's code is mounted from
// a ConfigMap the hub does not copy: each member has its own, in a namespace the member's
// admin made, lets the hub into and holds to Pod Security baseline (the member's guard wants
// at least that where it places).
func prepareNamespace(t *testing.T, f *localfleet.Fleet, ns string) {
	t.Helper()
	g := gomega.NewWithT(t)
	ctx := t.Context()
	for _, c := range append([]*localcluster.Cluster{f.Hub}, memberClusters(f)...) {
		g.Expect(c.CreateNamespace(ctx, ns)).To(gomega.Succeed())
	}
	for _, c := range memberClusters(f) {
		nsObj := &corev1.Namespace{}
		g.Expect(c.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(gomega.Succeed())
		nsObj.Labels = map[string]string{
			labels.HubNamespace:                  labels.HubNamespaceAllowed,
			"pod-security.kubernetes.io/enforce": "baseline",
		}
		g.Expect(c.Client.Update(ctx, nsObj)).To(gomega.Succeed())
		g.Expect(c.Client.Create(ctx, rayapp.ConfigMap(ns))).To(gomega.Succeed())
	}
}

// deleteOnExit deletes the hub RayService ns/name when t ends, so that its heads do not weigh
// on the next test's.
func deleteOnExit(t *testing.T, f *localfleet.Fleet, ns, name string) {
	t.Cleanup(func() {
		rs := &rayv1.RayService{}
		rs.Namespace, rs.Name = ns, name
		if err := f.Hub.Client.Delete(context.Background(), rs); client.IgnoreNotFound(err) != nil {
			t.Logf("deleting RayService %s/%s on the hub: %v", ns, name, err)
		}
	})
}

// setServeConfig sets the hub RayService's serveConfigV2, a new revision, retrying on
// conflicts with the hub's own writes.
func setServeConfig(t *testing.T, f *localfleet.Fleet, ns, name, config string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs rayv1.RayService
		if err := f.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return err
		}
		rs.Spec.ServeConfigV2 = config
		return f.Hub.Client.Update(t.Context(), &rs)
	})
	if err != nil {
		t.Fatalf("setting the serveConfigV2 of RayService %s/%s on the hub: %v", ns, name, err)
	}
}

// eventuallyFor polls check until it passes, timeout expires or an agent dies.
func eventuallyFor(t *testing.T, f *localfleet.Fleet, timeout time.Duration, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := f.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// binding is the RayServiceBinding of ns/name.
func binding(g gomega.Gomega, f *localfleet.Fleet, ns, name string) *fleetv1alpha1.RayServiceBinding {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(f.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(gomega.Succeed())
	return &b
}

// holders are the members holding a copy of ns/name not being deleted.
func holders(g gomega.Gomega, f *localfleet.Fleet, ns, name string) []string {
	var out []string
	for _, m := range members {
		var rs rayv1.RayService
		err := f.Members[m].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)
		if client.IgnoreNotFound(err) != nil {
			g.Expect(err).NotTo(gomega.HaveOccurred())
		}
		if err == nil && rs.DeletionTimestamp == nil {
			out = append(out, m)
		}
	}
	return out
}

// memberClusters are the members' control planes, in members' order.
func memberClusters(f *localfleet.Fleet) []*localcluster.Cluster {
	out := make([]*localcluster.Cluster, 0, len(members))
	for _, m := range members {
		out = append(out, f.Members[m])
	}
	return out
}
