//go:build e2e

package e2e

import (
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// With in-tree autoscaling the cluster gets a ServiceAccount, Role and RoleBinding named after
// it and an autoscaler sidecar on the head; lowering replicas alone deletes nothing, because
// the autoscaler (through workersToDelete) is the only one that picks Pods to remove.
func TestRayClusterAutoscalerSupport(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("auto", ns).WorkerGroup("g", 2, 0, 5).EnableInTreeAutoscaling().Obj())
	expectReady(t, key, 2)

	g := gomega.NewWithT(t)
	rc := getRayCluster(g, key)
	named := types.NamespacedName{Namespace: ns, Name: "auto"}
	sa := &corev1.ServiceAccount{}
	g.Expect(env.k8s.Get(t.Context(), named, sa)).To(gomega.Succeed())
	expectControlledBy(g, sa.OwnerReferences, rc)
	role := &rbacv1.Role{}
	g.Expect(env.k8s.Get(t.Context(), named, role)).To(gomega.Succeed())
	g.Expect(role.Rules).To(gomega.ContainElement(gomega.And(
		gomega.HaveField("Resources", gomega.ConsistOf("rayclusters")),
		gomega.HaveField("Verbs", gomega.ConsistOf("get", "patch")),
	)))
	g.Expect(role.Rules).To(gomega.ContainElement(gomega.And(
		gomega.HaveField("Resources", gomega.ConsistOf("pods")),
		gomega.HaveField("Verbs", gomega.ConsistOf("get", "list", "watch", "patch")),
	)))
	rb := &rbacv1.RoleBinding{}
	g.Expect(env.k8s.Get(t.Context(), named, rb)).To(gomega.Succeed())
	g.Expect(rb.RoleRef.Name).To(gomega.Equal("auto"))
	g.Expect(rb.Subjects).To(gomega.ContainElement(gomega.And(
		gomega.HaveField("Kind", "ServiceAccount"), gomega.HaveField("Name", "auto"))))
	head := headPod(g, key)
	g.Expect(head.Spec.ServiceAccountName).To(gomega.Equal("auto"))
	g.Expect(head.Spec.Containers).To(gomega.ContainElement(gomega.HaveField("Name", "autoscaler")))

	workers := uids(rayPods(g, key, "g"))
	updateRayCluster(t, key, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(int32(1)) })
	eventually(t, func(g gomega.Gomega) {
		rc := getRayCluster(g, key)
		g.Expect(rc.Status.ObservedGeneration).To(gomega.Equal(rc.Generation))
		g.Expect(rc.Status.DesiredWorkerReplicas).To(gomega.Equal(int32(1)))
	})
	g.Expect(uids(rayPods(g, key, "g"))).To(gomega.Equal(workers), "no worker deleted without workersToDelete")
}

func TestRayClusterAuthTokenSecret(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("auth", ns).WorkerGroup("g", 1, 0, 5).AuthToken().Obj())
	expectReady(t, key, 1)

	g := gomega.NewWithT(t)
	secret := &corev1.Secret{}
	g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "auth"}, secret)).To(gomega.Succeed())
	g.Expect(secret.Data).To(gomega.HaveKeyWithValue("auth_token", gomega.Not(gomega.BeEmpty())))
	g.Expect(secret.Labels).To(gomega.HaveKeyWithValue(labels.Cluster, "auth"))
	expectControlledBy(g, secret.OwnerReferences, getRayCluster(g, key))
}

func TestRayClusterHeadIngress(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("ing", ns).WorkerGroup("g", 1, 0, 5).EnableIngress().Obj())
	expectReady(t, key, 1)

	g := gomega.NewWithT(t)
	ing := &networkingv1.Ingress{}
	g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "ing-head-ingress"}, ing)).To(gomega.Succeed())
	g.Expect(ing.Spec.Rules).To(gomega.HaveLen(1))
	paths := ing.Spec.Rules[0].HTTP.Paths
	g.Expect(paths).To(gomega.HaveLen(1))
	g.Expect(paths[0].Path).To(gomega.Equal("/ing/(.*)"))
	g.Expect(paths[0].Backend.Service.Name).To(gomega.Equal("ing-head-svc"))
	g.Expect(paths[0].Backend.Service.Port.Number).To(gomega.Equal(int32(8265)))
	expectControlledBy(g, ing.OwnerReferences, getRayCluster(g, key))
}

// Suspending one worker group deletes its Pods only; the cluster stays ready without them.
func TestRayClusterSuspendedWorkerGroup(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("gsusp", ns).WorkerGroup("a", 1, 0, 5).WorkerGroup("b", 2, 0, 5).Obj())
	expectReady(t, key, 3)

	g := gomega.NewWithT(t)
	kept := uids(append(rayPods(g, key, "a"), rayPods(g, key, labels.HeadGroupValue)...))
	updateRayCluster(t, key, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[1].Suspend = ptr.To(true) })
	expectReady(t, key, 1)
	eventually(t, func(g gomega.Gomega) {
		g.Expect(rayPods(g, key, "b")).To(gomega.BeEmpty())
		g.Expect(getRayCluster(g, key).Status.DesiredWorkerReplicas).To(gomega.Equal(int32(1)))
	})
	g.Expect(uids(append(rayPods(g, key, "a"), rayPods(g, key, labels.HeadGroupValue)...))).To(gomega.Equal(kept))

	updateRayCluster(t, key, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[1].Suspend = ptr.To(false) })
	expectReady(t, key, 3)
}

// A Pod the API server refuses (here: over a ResourceQuota) shows up as the ReplicaFailure
// condition with KubeRay's reason, and the condition goes away once Pods can be created.
func TestRayClusterReplicaFailureCondition(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
	}
	g := gomega.NewWithT(t)
	g.Expect(env.k8s.Create(t.Context(), quota)).To(gomega.Succeed())
	// Quota admission refuses everything until the KCM has computed the quota's usage.
	eventually(t, func(g gomega.Gomega) {
		g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "pods"}, quota)).To(gomega.Succeed())
		g.Expect(quota.Status.Hard).NotTo(gomega.BeEmpty())
	})

	key := createRayCluster(t, raybuilder.MakeRayCluster("quota", ns).WorkerGroup("g", 3, 0, 5).Obj())
	eventually(t, func(g gomega.Gomega) {
		rc := getRayCluster(g, key)
		c := meta.FindStatusCondition(rc.Status.Conditions, string(rayv1.RayClusterReplicaFailure))
		g.Expect(c).NotTo(gomega.BeNil(), "ReplicaFailure condition; conditions %+v", rc.Status.Conditions)
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(gomega.Equal("FailedCreateWorkerPod"))
		g.Expect(rc.Status.State).NotTo(gomega.Equal(rayv1.Ready))
		g.Expect(eventReasons(g, ns, key.Name)).To(gomega.ContainElement("FailedToCreateWorkerPod"))
	})

	g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "pods"}, quota)).To(gomega.Succeed())
	quota.Spec.Hard[corev1.ResourcePods] = resource.MustParse("10")
	g.Expect(env.k8s.Update(t.Context(), quota)).To(gomega.Succeed())
	expectReady(t, key, 3)
	eventually(t, func(g gomega.Gomega) {
		rc := getRayCluster(g, key)
		g.Expect(meta.FindStatusCondition(rc.Status.Conditions, string(rayv1.RayClusterReplicaFailure))).To(gomega.BeNil())
	})
}

// The ray.io/enable-serve-service annotation asks for a Serve Service on a standalone cluster:
// <name>-serve-svc over every Pod of the cluster, with the serve port only.
func TestRayClusterServeService(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("serve", ns).WorkerGroup("g", 1, 0, 5).
		Annotation(labels.EnableServeService, labels.True).Obj())
	expectReady(t, key, 1)

	g := gomega.NewWithT(t)
	svc := &corev1.Service{}
	g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "serve-serve-svc"}, svc)).To(gomega.Succeed())
	g.Expect(svc.Spec.Selector).To(gomega.Equal(map[string]string{labels.Cluster: "serve"}))
	g.Expect(svc.Spec.Ports).To(gomega.HaveLen(1))
	g.Expect(svc.Spec.Ports[0].Name).To(gomega.Equal("serve"))
	g.Expect(svc.Spec.Ports[0].Port).To(gomega.Equal(int32(8000)))
	g.Expect(svc.Labels).To(gomega.And(
		gomega.HaveKeyWithValue(labels.OriginatedFromCRName, "serve"),
		gomega.HaveKeyWithValue(labels.OriginatedFromCRD, "RayCluster"),
		gomega.HaveKeyWithValue(labels.Serve, "serve-serve"),
	))
	expectControlledBy(g, svc.OwnerReferences, getRayCluster(g, key))
}
