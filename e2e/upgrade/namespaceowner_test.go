//go:build e2e

package upgrade

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// checkAdopted checks that the upgrade's join labelled allowed the namespaces the previous
// hub created (which hold its copies), so that the new guard keeps taking the hub's writes.
func checkAdopted(t *testing.T, f *localfleet.Fleet, namespaces ...string) {
	t.Helper()
	g := gomega.NewWithT(t)
	for _, m := range members {
		for _, ns := range namespaces {
			var n corev1.Namespace
			g.Expect(f.Members[m].Client.Get(t.Context(), client.ObjectKey{Name: ns}, &n)).To(gomega.Succeed())
			g.Expect(n.Labels).To(gomega.HaveKeyWithValue(labels.HubNamespace, labels.HubNamespaceAllowed), "namespace %s on %s", ns, m)
		}
	}
}
