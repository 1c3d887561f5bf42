//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// The spoke reports the member to the hub through the ClusterReport "local": a heartbeat that
// keeps moving, the four fake Nodes, and their allocatable capacity including GPUs.
func TestClusterReportHeartbeatAndCapacity(t *testing.T) {
	t.Parallel()
	g := gomega.NewWithT(t)
	key := client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}
	var first time.Time
	g.Eventually(func(g gomega.Gomega) {
		var rep fleetv1alpha1.ClusterReport
		g.Expect(env.k8s.Get(t.Context(), key, &rep)).To(gomega.Succeed())
		st := rep.Status
		g.Expect(st.Nodes.Total).To(gomega.BeNumerically("==", 4))
		g.Expect(st.Nodes.Ready).To(gomega.BeNumerically("==", 4))
		gpus := st.Capacity.Allocatable[corev1.ResourceName("nvidia.com/gpu")]
		g.Expect(gpus.Cmp(resource.MustParse("32"))).To(gomega.Equal(0), "allocatable GPUs %s", gpus.String())
		free := st.Capacity.Free[corev1.ResourceCPU]
		g.Expect(free.Sign()).To(gomega.Equal(1), "free CPU %s", free.String())
		g.Expect(meta.IsStatusConditionTrue(st.Conditions, fleetv1alpha1.ConditionAgentReady)).To(gomega.BeTrue())
		g.Expect(st.AgentVersion).NotTo(gomega.BeEmpty())
		g.Expect(st.KubernetesVersion).NotTo(gomega.BeEmpty())
		first = st.HeartbeatTime.Time
	}, timeout, poll).Should(gomega.Succeed())

	g.Eventually(func(g gomega.Gomega) {
		var rep fleetv1alpha1.ClusterReport
		g.Expect(env.k8s.Get(t.Context(), key, &rep)).To(gomega.Succeed())
		g.Expect(rep.Status.HeartbeatTime.Time).To(gomega.BeTemporally(">", first))
	}, timeout, poll).Should(gomega.Succeed())
}
