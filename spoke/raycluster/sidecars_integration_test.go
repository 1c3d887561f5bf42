package raycluster

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// The operator's sidecars (KubeRay's headSidecarContainers and workerSidecarContainers, the
// spoke's --config) reach the Pods the API server stores: the fluentbit log shipper KubeRay's
// suite expects on every head, and the worker's own sidecar on every worker.
func TestSidecarsFromTheOperatorConfiguration(t *testing.T) {
	fluentbit := corev1.Container{Name: "fluentbit", Image: "fluent/fluent-bit:1.9.6"}
	shipper := corev1.Container{Name: "shipper", Image: "busybox"}
	h := startHarnessOn(t, envtest.Start(t), nil, func(o *Options) {
		o.Build.HeadSidecars = []corev1.Container{fluentbit}
		o.Build.WorkerSidecars = []corev1.Container{shipper}
	})
	ctx := context.Background()
	g := NewWithT(t)
	ns := h.namespace(t, g, "sidecars")
	g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("rc", ns).WorkerGroup("small", 2, 0, 5).Obj())).To(Succeed())

	g.Eventually(func(g Gomega) {
		heads, workers := h.pods(g, ns, "rc", rayv1.HeadNode), h.pods(g, ns, "rc", rayv1.WorkerNode)
		g.Expect(heads).To(HaveLen(1))
		g.Expect(workers).To(HaveLen(2))
		g.Expect(containerNames(heads[0])).To(Equal([]string{raybuilder.HeadContainerName, "fluentbit"}))
		g.Expect(heads[0].Spec.Containers[1].Image).To(Equal(fluentbit.Image))
		for _, w := range workers {
			g.Expect(containerNames(w)).To(Equal([]string{raybuilder.WorkerContainerName, "shipper"}))
		}
	}, timeout, interval).Should(Succeed())

	// A sidecar named like the template's Ray container cannot be added: the cluster says so
	// in ReplicaFailure instead of every Pod create failing on a duplicate name.
	clash := startHarnessOn(t, envtest.Start(t), nil, func(o *Options) {
		o.Build.HeadSidecars = []corev1.Container{{Name: raybuilder.HeadContainerName, Image: "busybox"}}
	})
	ns = clash.namespace(t, g, "clash")
	g.Expect(clash.c.Create(ctx, raybuilder.MakeRayCluster("rc", ns).Obj())).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(clash.get(g, ns, "rc").Status.Conditions, string(rayv1.RayClusterReplicaFailure))
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Message).To(ContainSubstring(`sidecar "` + raybuilder.HeadContainerName + `" from the spoke's configuration`))
	}, timeout, interval).Should(Succeed())
	g.Expect(clash.pods(g, ns, "rc", rayv1.HeadNode)).To(BeEmpty())
}

func containerNames(p corev1.Pod) []string {
	out := make([]string, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}
