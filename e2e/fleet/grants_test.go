//go:build e2e

package fleet

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// Grants keep a tenant to what the hub's admin gave its namespace. A namespace no grant selects
// is placed nowhere, and says so; a namespace granted a member and one hostname on a Gateway
// runs there, but its policy aimed at another hostname on that Gateway gets no route, and the
// RayService names the grant missing.
func TestGrantsKeepTenantsToWhatIsGranted(t *testing.T) {
	t.Parallel()
	const lone, tenant = "grants-none", "grants-tenant"
	createUngrantedNamespace(t, lone)
	createUngrantedNamespace(t, tenant)
	grant := &fleetv1alpha1.NamespaceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-" + tenant},
		Spec: fleetv1alpha1.NamespaceGrantSpec{
			Namespaces: []string{tenant},
			Members:    &fleetv1alpha1.MemberGrant{ClusterNames: []string{memberUS}},
			Traffic: []fleetv1alpha1.TrafficGrant{{
				Gateways:  []fleetv1alpha1.GatewayGrant{{Namespace: "gateways", Name: "public"}},
				Hostnames: []string{"b.example.com"},
			}},
		},
	}
	if err := fleet.Hub.Client.Create(t.Context(), grant); err != nil {
		t.Fatalf("creating NamespaceGrant %s: %v", grant.Name, err)
	}
	t.Cleanup(func() {
		if err := fleet.Hub.Client.Delete(context.Background(), grant); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting NamespaceGrant %s: %v", grant.Name, err)
		}
	})
	createPolicy(t, tenant, "web", fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: usOrEU,
		Traffic: &fleetv1alpha1.TrafficSpec{
			ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gateways", Name: "public"},
			Hostnames: []string{"a.example.com"},
		},
		Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone, SoakSeconds: ptr.To[int32](0)},
	})
	createHubRayService(t, lone, "alone", "")
	createHubRayService(t, tenant, "web", "web")

	t.Run("a namespace without a grant is not placed", func(t *testing.T) {
		eventually(t, func(g gomega.Gomega) {
			b := binding(g, lone, "alone")
			placed := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)
			g.Expect(placed).NotTo(gomega.BeNil())
			g.Expect(placed.Reason).To(gomega.Equal(fleetv1alpha1.ReasonNotGranted))
			g.Expect(placed.Message).To(gomega.ContainSubstring("namespace " + lone + " has no NamespaceGrant"))
			missing := meta.FindStatusCondition(hubRayService(g, lone, "alone").Status.Conditions, fleetv1alpha1.ConditionGrantMissing)
			g.Expect(missing).NotTo(gomega.BeNil())
			g.Expect(missing.Reason).To(gomega.Equal(fleetv1alpha1.ReasonNotGranted))
			g.Expect(b.Spec.Clusters).To(gomega.BeEmpty())
		})
		for _, member := range []string{memberUS, memberEU} {
			eventually(t, func(g gomega.Gomega) { g.Expect(memberRayService(g, member, lone, "alone")).To(gomega.BeNil()) })
		}
	})

	t.Run("a hostname not granted gets no route", func(t *testing.T) {
		eventually(t, func(g gomega.Gomega) {
			g.Expect(binding(g, tenant, "web").Spec.Clusters).To(gomega.Equal([]string{memberUS}))
			hub := hubRayService(g, tenant, "web")
			shifting := meta.FindStatusCondition(hub.Status.Conditions, fleetv1alpha1.ConditionTrafficShifting)
			g.Expect(shifting).NotTo(gomega.BeNil())
			g.Expect(shifting.Reason).To(gomega.Equal(fleetv1alpha1.ReasonNotGranted))
			g.Expect(shifting.Message).To(gomega.ContainSubstring(
				"namespace " + tenant + " has no NamespaceGrant for Gateway gateways/public hostname a.example.com"))
			missing := meta.FindStatusCondition(hub.Status.Conditions, fleetv1alpha1.ConditionGrantMissing)
			g.Expect(missing).NotTo(gomega.BeNil())
			g.Expect(missing.Reason).To(gomega.Equal(fleetv1alpha1.ReasonNotGranted))
		})
		// The eu member is selected by the policy but not granted: nothing is written there.
		eventually(t, func(g gomega.Gomega) { g.Expect(memberRayService(g, memberEU, tenant, "web")).To(gomega.BeNil()) })
		var events corev1.EventList
		eventually(t, func(g gomega.Gomega) {
			g.Expect(fleet.Hub.Client.List(context.Background(), &events, client.InNamespace(tenant))).To(gomega.Succeed())
			g.Expect(events.Items).To(gomega.ContainElement(gomega.HaveField("Reason", fleetv1alpha1.ReasonNotGranted)))
		})
	})
}

// createUngrantedNamespace creates a hub namespace the local fleet's grant leaves out.
func createUngrantedNamespace(t *testing.T, ns string) {
	t.Helper()
	err := fleet.Hub.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{localfleet.UngrantedNamespaceLabel: "true"}}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
}
