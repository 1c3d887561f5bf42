//go:build e2e

package fleet

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// rotationWatch is how long after a re-join the test watches the member's conditions: a
// re-engagement stops the member's caches at once and its probe notices within a second.
const rotationWatch = 10 * time.Second

// A re-run `rayfleet join` rotates the hub's bootstrap token for a member, and the hub takes it
// without re-engaging: the member stays Joined, Reachable and Ready, none of the three
// conditions moves, and the kubeconfig holds a new bound token of the same ServiceAccount.
func TestRejoinRotatesTheHubTokenInPlace(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub.Client
	key := client.ObjectKey{Namespace: labels.DefaultHubNamespace, Name: memberUS}
	token := func(g gomega.Gomega) string {
		var s corev1.Secret
		g.Expect(hub.Get(ctx, key, &s)).To(gomega.Succeed())
		cfg, err := hubaccess.RESTConfig(s.Data[fleetv1alpha1.DefaultKubeconfigKey])
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return cfg.BearerToken
	}
	conditions := func(g gomega.Gomega) map[string]metav1.Time {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: memberUS}, &mc)).To(gomega.Succeed())
		out := map[string]metav1.Time{}
		for _, t := range []string{fleetv1alpha1.ConditionJoined, fleetv1alpha1.ConditionReachable, fleetv1alpha1.ConditionReady} {
			c := meta.FindStatusCondition(mc.Status.Conditions, t)
			g.Expect(c).NotTo(gomega.BeNil(), "condition %s", t)
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue), "condition %s: %s", t, c.Message)
			out[t] = c.LastTransitionTime
		}
		return out
	}
	var before map[string]metav1.Time
	eventually(t, func(g gomega.Gomega) { before = conditions(g) })
	old := token(gomega.NewWithT(t))

	if err := fleet.Rejoin(ctx, memberUS); err != nil {
		t.Fatal(err)
	}
	if token(gomega.NewWithT(t)) == old {
		t.Fatal("the re-run join kept the bootstrap token")
	}
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		g.Expect(conditions(g)).To(gomega.Equal(before), "a condition of %s moved after the re-join", memberUS)
	}).WithTimeout(rotationWatch).WithPolling(poll).Should(gomega.Succeed())
}
