//go:build e2e

package fleet

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// A RayService whose workers ask for GPUs, placed by a policy that selects every member, lands
// on the only member with free GPUs (eu) and turns Ready there; the CPU-only members get nothing.
func TestGPURayServiceLandsWhereGPUsAreFree(t *testing.T) {
	t.Parallel()
	const ns, name = "placement-gpu", "svc"
	createNamespace(t, ns)
	createPolicy(t, ns, "anywhere", fleetv1alpha1.PlacementPolicySpec{})
	rs := newHubRayService(ns, name, "anywhere")
	worker := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources
	gpu := resource.MustParse("1")
	if worker.Requests == nil {
		worker.Requests = corev1.ResourceList{}
	}
	worker.Requests[localcluster.GPUResource] = gpu
	if worker.Limits == nil {
		worker.Limits = corev1.ResourceList{}
	}
	worker.Limits[localcluster.GPUResource] = gpu
	applyHubRayService(t, rs)

	eventually(t, func(g gomega.Gomega) {
		g.Expect(hubReady(hubRayService(g, ns, name))).To(gomega.BeTrue(), "hub Ready")
		m := memberRayService(g, memberEU, ns, name)
		g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", memberEU)
		g.Expect(hubReady(m)).To(gomega.BeTrue(), "member Ready")
	})
	// ap is not read directly: an outage test may have stopped its API server by now;
	// the binding says where the hub placed the RayService.
	g := gomega.NewWithT(t)
	g.Expect(binding(g, ns, name).Spec.Clusters).To(gomega.Equal([]string{memberEU}))
	g.Expect(memberRayService(g, memberUS, ns, name)).To(gomega.BeNil(), "copy on CPU-only %s", memberUS)
}

// A member copy deleted by hand comes back: a new object with the same spec and spec hash.
func TestMemberCopyDeletedIsRestored(t *testing.T) {
	t.Parallel()
	const ns, name = "copy-restored", "svc"
	createNamespace(t, ns)
	createPolicy(t, ns, "us-only", fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{regionKey: memberUS}},
	})
	createHubRayService(t, ns, name, "us-only")

	var before *rayv1.RayService
	eventually(t, func(g gomega.Gomega) {
		before = memberRayService(g, memberUS, ns, name)
		g.Expect(before).NotTo(gomega.BeNil(), "copy on %s", memberUS)
		g.Expect(before.Annotations).To(gomega.HaveKey(labels.SpecHash))
	})
	if err := fleet.Members[memberUS].Client.Delete(t.Context(), before); err != nil {
		t.Fatalf("deleting the copy on %s: %v", memberUS, err)
	}

	eventually(t, func(g gomega.Gomega) {
		after := memberRayService(g, memberUS, ns, name)
		g.Expect(after).NotTo(gomega.BeNil(), "copy on %s", memberUS)
		g.Expect(after.UID).NotTo(gomega.Equal(before.UID), "copy not recreated yet")
		g.Expect(after.DeletionTimestamp).To(gomega.BeNil())
		g.Expect(after.Annotations[labels.SpecHash]).To(gomega.Equal(before.Annotations[labels.SpecHash]))
		g.Expect(after.Labels).To(gomega.HaveKeyWithValue(labels.OriginName, name))
		g.Expect(equality.Semantic.DeepEqual(after.Spec, before.Spec)).To(gomega.BeTrue(), "restored spec differs")
	})
}

// A change of the hub spec (a pod template label and the Serve config) reaches both copies of
// a RayService placed on two members, with a new spec hash that both agree on.
func TestSpecChangeReachesEveryMember(t *testing.T) {
	t.Parallel()
	const ns, name = "spec-change", "svc"
	members := []string{memberUS, memberEU}
	createNamespace(t, ns)
	createPolicy(t, ns, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), ClusterSelector: usOrEU})
	createHubRayService(t, ns, name, "both")

	oldHash := map[string]string{}
	eventually(t, func(g gomega.Gomega) {
		for _, member := range members {
			m := memberRayService(g, member, ns, name)
			g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", member)
			g.Expect(m.Annotations).To(gomega.HaveKey(labels.SpecHash))
			oldHash[member] = m.Annotations[labels.SpecHash]
		}
	})

	const labelKey, labelValue = "rayfleet.io/e2e-change", "two"
	newServe := strings.Replace(hubRayServiceOrFail(t, ns, name).Spec.ServeConfigV2, "num_replicas: 1", "num_replicas: 2", 1)
	patch := map[string]any{"spec": map[string]any{
		"serveConfigV2": newServe,
		"rayClusterConfig": map[string]any{"headGroupSpec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]string{labelKey: labelValue}},
		}}},
	}}
	mergePatchHub(t, &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch)

	eventually(t, func(g gomega.Gomega) {
		var hash string
		for _, member := range members {
			m := memberRayService(g, member, ns, name)
			g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", member)
			got := m.Annotations[labels.SpecHash]
			g.Expect(got).NotTo(gomega.Equal(oldHash[member]), "spec hash on %s unchanged", member)
			if hash == "" {
				hash = got
			}
			g.Expect(got).To(gomega.Equal(hash), "spec hash on %s differs from the other member's", member)
			g.Expect(m.Spec.ServeConfigV2).To(gomega.Equal(newServe), "serveConfigV2 on %s", member)
			g.Expect(m.Spec.RayClusterSpec.HeadGroupSpec.Template.Labels).
				To(gomega.HaveKeyWithValue(labelKey, labelValue), "head template label on %s", member)
		}
	})
}

// Deleting the hub RayService deletes its copies on every member, then the hub object itself
// (the hub's finalizer is removed once the copies are gone).
func TestHubDeleteRemovesMemberCopies(t *testing.T) {
	t.Parallel()
	const ns, name = "hub-delete", "svc"
	members := []string{memberUS, memberEU}
	createNamespace(t, ns)
	createPolicy(t, ns, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), ClusterSelector: usOrEU})
	rs := createHubRayService(t, ns, name, "both")

	eventually(t, func(g gomega.Gomega) {
		for _, member := range members {
			g.Expect(memberRayService(g, member, ns, name)).NotTo(gomega.BeNil(), "copy on %s", member)
		}
	})
	if err := fleet.Hub.Client.Delete(t.Context(), rs); err != nil {
		t.Fatalf("deleting RayService %s/%s on the hub: %v", ns, name, err)
	}

	eventually(t, func(g gomega.Gomega) {
		for _, member := range members {
			g.Expect(memberRayService(g, member, ns, name)).To(gomega.BeNil(), "copy on %s", member)
		}
		var hub rayv1.RayService
		err := fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &hub)
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "hub RayService still there (finalizers %v): %v", hub.Finalizers, err)
	})
}

func binding(g gomega.Gomega, ns, name string) *fleetv1alpha1.RayServiceBinding {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(gomega.Succeed())
	return &b
}

func hubRayServiceOrFail(t *testing.T, ns, name string) *rayv1.RayService {
	t.Helper()
	return hubRayService(gomega.NewWithT(t), ns, name)
}

// mergePatchHub applies a JSON merge patch to obj on the hub.
func mergePatchHub(t *testing.T, obj client.Object, patch map[string]any) {
	t.Helper()
	data, err := json.Marshal(patch)
	if err != nil {
		t.Fatalf("encoding patch: %v", err)
	}
	if err := fleet.Hub.Client.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, data)); err != nil {
		t.Fatalf("patching %s on the hub: %v", client.ObjectKeyFromObject(obj), err)
	}
}
