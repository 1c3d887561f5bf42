//go:build e2e

package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// A RayService whose policy selects region=eu is copied to the eu member only; the eu spoke
// deploys it on its dashboard stand-in and the hub RayService turns Ready with its endpoints.
func TestRayServiceLandsOnSelectedRegion(t *testing.T) {
	t.Parallel()
	const ns, name = "placement-eu", "svc"
	createNamespace(t, ns)
	createPolicy(t, ns, "eu-only", fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{regionKey: memberEU}},
	})
	createHubRayService(t, ns, name, "eu-only")

	eventually(t, func(g gomega.Gomega) {
		hub := hubRayService(g, ns, name)
		ready := meta.FindStatusCondition(hub.Status.Conditions, string(rayv1.RayServiceReady))
		g.Expect(ready).NotTo(gomega.BeNil(), "hub Ready condition")
		g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionTrue), "hub Ready: %s: %s", ready.Reason, ready.Message)
		g.Expect(hub.Status.NumServeEndpoints).To(gomega.BeNumerically(">", 0), "hub numServeEndpoints")
		m := memberRayService(g, memberEU, ns, name)
		g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", memberEU)
		g.Expect(m.Labels).To(gomega.HaveKeyWithValue(labels.OriginName, name))
		g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue(), "member Ready")
	})
	g := gomega.NewWithT(t)
	g.Expect(memberRayService(g, memberUS, ns, name)).To(gomega.BeNil(), "copy on %s", memberUS)
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(fleet.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(gomega.Succeed())
	g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{memberEU}))
}

// With clusters: 2 the RayService is copied to both members, and the hub shows Ready only
// once both copies are: the us copy is held back by failing its deploy on the us stand-in.
func TestTwoClustersReadyOnlyWhenBoth(t *testing.T) {
	t.Parallel()
	const ns, name = "placement-two", "svc"
	createNamespace(t, ns)
	createPolicy(t, ns, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), ClusterSelector: usOrEU})
	createHubRayService(t, ns, name, "both")

	// Hold the us copy back as soon as the us spoke names its cluster.
	var held *raydashboard.Cluster
	eventually(t, func(g gomega.Gomega) {
		m := memberRayService(g, memberUS, ns, name)
		g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", memberUS)
		rc := m.Status.PendingServiceStatus.RayClusterName
		if rc == "" {
			rc = m.Status.ActiveServiceStatus.RayClusterName
		}
		g.Expect(rc).NotTo(gomega.BeEmpty(), "us RayCluster name")
		held = fleet.Dashboards[memberUS].Cluster(ns, rc)
		held.SetFault(raydashboard.Fault{DeployFailed: true})
	})
	t.Cleanup(func() { held.SetFault(raydashboard.Fault{}) })

	g := gomega.NewWithT(t)
	if m := memberRayService(g, memberUS, ns, name); meta.IsStatusConditionTrue(m.Status.Conditions, string(rayv1.RayServiceReady)) {
		t.Log("the us copy turned Ready before it could be held back; checking the invariant only")
	} else {
		eventually(t, func(g gomega.Gomega) {
			m := memberRayService(g, memberEU, ns, name)
			g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", memberEU)
			g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue(), "eu copy Ready")
			ready := meta.FindStatusCondition(hubRayService(g, ns, name).Status.Conditions, string(rayv1.RayServiceReady))
			g.Expect(ready).NotTo(gomega.BeNil(), "hub Ready condition")
			g.Expect(ready.Status).NotTo(gomega.Equal(metav1.ConditionTrue))
			g.Expect(ready.Message).To(gomega.HavePrefix("1/2 clusters ready"))
		})
		g.Consistently(func(g gomega.Gomega) {
			g.Expect(hubReady(hubRayService(g, ns, name))).To(gomega.BeFalse(), "hub Ready while us is held back")
		}).WithTimeout(3 * settle).WithPolling(poll).Should(gomega.Succeed())
	}
	held.SetFault(raydashboard.Fault{})

	eventually(t, func(g gomega.Gomega) {
		hub := hubRayService(g, ns, name)
		// Read after the hub: a member that was Ready when the hub was written still is.
		for _, member := range []string{memberUS, memberEU} {
			m := memberRayService(g, member, ns, name)
			g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", member)
			if hubReady(hub) {
				g.Expect(meta.IsStatusConditionTrue(m.Status.Conditions, string(rayv1.RayServiceReady))).
					To(gomega.BeTrue(), "hub Ready while %s is not", member)
			}
		}
		g.Expect(hubReady(hub)).To(gomega.BeTrue(), "hub Ready")
		g.Expect(hub.Status.NumServeEndpoints).To(gomega.BeNumerically(">=", 2), "endpoints of both copies")
	})
}

// usOrEU selects the us and eu members: the ap member's API server is stopped and started by
// the outage tests while the other tests run.
var usOrEU = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
	Key: regionKey, Operator: metav1.LabelSelectorOpIn, Values: []string{memberUS, memberEU},
}}}

// settle is how long a state that must not change is watched.
const settle = 1 * time.Second

func createNamespace(t *testing.T, ns string) {
	t.Helper()
	err := fleet.Hub.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
}

func createPolicy(t *testing.T, ns, name string, spec fleetv1alpha1.PlacementPolicySpec) {
	t.Helper()
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := fleet.Hub.Client.Create(t.Context(), pp); err != nil {
		t.Fatalf("creating PlacementPolicy %s/%s: %v", ns, name, err)
	}
}

// createHubRayService applies a small RayService to the hub, placed by policy, and deletes it
// at the end so that its member copies go too.
func createHubRayService(t *testing.T, ns, name, policy string) *rayv1.RayService {
	t.Helper()
	return applyHubRayService(t, newHubRayService(ns, name, policy))
}

// newHubRayService is the small RayService of createHubRayService, for tests to change first.
func newHubRayService(ns, name, policy string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).Annotation(labels.PlacementPolicy, policy).Obj()
	rs.UID, rs.Generation = "", 0
	return rs
}

// applyHubRayService creates rs on the hub and deletes it at the end of the test.
func applyHubRayService(t *testing.T, rs *rayv1.RayService) *rayv1.RayService {
	t.Helper()
	ns, name := rs.Namespace, rs.Name
	if err := fleet.Hub.Client.Create(t.Context(), rs); err != nil {
		t.Fatalf("creating RayService %s/%s on the hub: %v", ns, name, err)
	}
	t.Cleanup(func() {
		if err := fleet.Hub.Client.Delete(context.Background(), rs); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting RayService %s/%s on the hub: %v", ns, name, err)
		}
	})
	logStateOnFailure(t, ns, name)
	return rs
}

func hubRayService(g gomega.Gomega, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)).To(gomega.Succeed())
	return &rs
}

// memberRayService returns the member's RayService, nil when it has none.
func memberRayService(g gomega.Gomega, member, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	err := fleet.Members[member].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(gomega.HaveOccurred())
	return &rs
}

func hubReady(rs *rayv1.RayService) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))
}
