//go:build e2e

package fleet

import (
	"fmt"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// A namespace that exists on the members before the hub places there is the members' admins':
// the guard refuses the hub's copy there, and the hub RayService's MemberRefused names each
// member and the rule. One its admin labelled allowed takes the copies, and a namespace the hub
// creates itself is labelled created.
func TestHubWritesOnlyIntoNamespacesItOwns(t *testing.T) {
	t.Parallel()
	const foreign, allowed, fresh = "owner-foreign", "owner-allowed", "owner-fresh"
	baseline := map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest"}
	for _, member := range []string{memberUS, memberEU} {
		for ns, owner := range map[string]string{foreign: "", allowed: labels.HubNamespaceAllowed} {
			lbls := map[string]string{labels.HubNamespace: owner}
			if owner == "" {
				lbls = map[string]string{}
			}
			for k, v := range baseline {
				lbls[k] = v
			}
			err := fleet.Members[member].Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: lbls}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("namespace %s on %s: %v", ns, member, err)
			}
		}
	}
	// rayfleet join returned only once each member's API server enforced the guard.
	for _, ns := range []string{foreign, allowed, fresh} {
		createNamespace(t, ns)
		createPolicy(t, ns, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), ClusterSelector: usOrEU})
		createHubRayService(t, ns, "svc", "both")
	}

	eventually(t, func(g gomega.Gomega) {
		refused := meta.FindStatusCondition(hubRayService(g, foreign, "svc").Status.Conditions, fleetv1alpha1.ConditionMemberRefused)
		g.Expect(refused).NotTo(gomega.BeNil(), "MemberRefused on %s/svc", foreign)
		for _, member := range []string{memberUS, memberEU} {
			g.Expect(refused.Message).To(gomega.ContainSubstring(fmt.Sprintf(`%s: hubPolicy/namespaceOwner: RayService "svc" in namespace "%s"`, member, foreign)))
		}
		for _, ns := range []string{allowed, fresh} {
			g.Expect(hubReady(hubRayService(g, ns, "svc"))).To(gomega.BeTrue(), "%s/svc Ready", ns)
		}
	})
	g := gomega.NewWithT(t)
	for _, member := range []string{memberUS, memberEU} {
		g.Expect(memberRayService(g, member, foreign, "svc")).To(gomega.BeNil(), "copy in %s on %s", foreign, member)
		var ns corev1.Namespace
		g.Expect(fleet.Members[member].Client.Get(t.Context(), client.ObjectKey{Name: fresh}, &ns)).To(gomega.Succeed())
		g.Expect(ns.Labels).To(gomega.HaveKeyWithValue(labels.HubNamespace, labels.HubNamespaceCreated), "namespace %s on %s", fresh, member)
	}
}
