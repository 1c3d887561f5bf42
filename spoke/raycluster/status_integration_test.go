package raycluster

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// KubeRay's RayClusters carry every desired* quantity, "0" included (`kubectl get rayclusters`
// shows desiredGPU as GPUS); ours must too, from the first status write and without extra ones.
func TestRayClusterStatusStoresEveryDesiredQuantity(t *testing.T) {
	h := startHarness(t, nil)
	ctx := context.Background()
	g := NewWithT(t)
	ns := h.namespace(t, g, "desired")
	// Head 1 CPU/2Gi plus one worker of 1 CPU/1Gi, no GPU or TPU.
	g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("rc", ns).WorkerGroup("g", 1, 0, 5).Obj())).To(Succeed())
	want := map[string]string{"desiredCPU": "2", "desiredMemory": "3Gi", "desiredGPU": "0", "desiredTPU": "0"}

	// The first status write carries them all: they need no write of their own.
	g.Eventually(func() []byte { return h.writes.firstPatch("rc") }, timeout, interval).ShouldNot(BeNil())
	var first struct {
		Status map[string]any `json:"status"`
	}
	g.Expect(json.Unmarshal(h.writes.firstPatch("rc"), &first)).To(Succeed())
	for field, value := range want {
		g.Expect(first.Status).To(HaveKeyWithValue(field, value), "first status patch")
	}

	// The API server stores them: read raw, since a typed read shows an absent quantity as 0 too.
	g.Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(rayv1.GroupVersion.WithKind("RayCluster"))
		g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rc"}, u)).To(Succeed())
		for field, value := range want {
			got, found, err := unstructured.NestedString(u.Object, "status", field)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue(), "status.%s is missing", field)
			g.Expect(got).To(Equal(value), "status.%s", field)
		}
	}, timeout, interval).Should(Succeed())

	// Writing them every time does not make a settled cluster look changed: once ready, a
	// reconcile (an annotation change) writes nothing.
	h.makeReady(g, ns, "rc")
	g.Eventually(func(g Gomega) {
		g.Expect(h.get(g, ns, "rc").Status.State).To(Equal(rayv1.Ready))
	}, timeout, interval).Should(Succeed())
	before := h.writes.get("rc")
	h.update(g, ns, "rc", func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{"touch": "1"} })
	g.Consistently(func() int { return h.writes.get("rc") }, "1s", interval).Should(Equal(before))
}
