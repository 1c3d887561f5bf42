//go:build e2e

package fleet

import (
	"cmp"
	"context"
	"fmt"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// Code in a Ray head holds KubeRay's autoscaler token: with it, it may patch its own RayCluster
// and nothing else. Its worker template patched to privileged with a hostPath and more
// replicas gives no new Pod on the member, and the hub hears why; a RayService whose
// serveService is named after another application's Service leaves that Service alone and
// says so. Another RayService on the same member runs untouched throughout.
func TestMemberBoundaryAgainstTheAutoscalerTokenAndTakeovers(t *testing.T) {
	t.Parallel()
	const ns = "boundary"
	member := memberUS
	ctx := t.Context()
	createNamespace(t, ns)
	createPolicy(t, ns, "us", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](1), ClusterNames: []string{member}})
	// Another application's Service on the member, in the namespace the hub will use.
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	memberClient := fleet.Members[member].Client
	eventually(t, func(g gomega.Gomega) {
		err := memberClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest",
			labels.HubNamespace: labels.HubNamespaceAllowed}}})
		g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(gomega.BeTrue(), "namespace on %s: %v", member, err)
		err = memberClient.Create(ctx, web.DeepCopy())
		g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(gomega.BeTrue(), "Service web on %s: %v", member, err)
	})

	auto := newHubRayService(ns, "auto", "us")
	auto.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
	applyHubRayService(t, auto)
	takeover := newHubRayService(ns, "takeover", "us")
	takeover.Spec.ServeService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
	applyHubRayService(t, takeover)

	t.Log("the autoscaler's token patches its own RayCluster's workers to privileged with a hostPath")
	var cluster string
	var rb rbacv1.RoleBinding
	eventually(t, func(g gomega.Gomega) {
		c := memberRayService(g, member, ns, "auto")
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", member)
		cluster = c.Status.ActiveServiceStatus.RayClusterName
		g.Expect(cluster).NotTo(gomega.BeEmpty(), "active RayCluster of auto")
		g.Expect(memberClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rb)).To(gomega.Succeed(), "autoscaler RoleBinding")
		g.Expect(rb.Subjects).NotTo(gomega.BeEmpty())
	})
	autoscaler := impersonating(t, member, fmt.Sprintf("system:serviceaccount:%s:%s", ns, rb.Subjects[0].Name))
	workersBefore := workerPods(t, member, ns, cluster)
	eventually(t, func(g gomega.Gomega) {
		var rc rayv1.RayCluster
		g.Expect(autoscaler.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rc)).To(gomega.Succeed())
		patch := client.MergeFrom(rc.DeepCopy())
		wg := &rc.Spec.WorkerGroupSpecs[0]
		// Within the bounds, as an autoscaler scales: bounds other than the RayService's would
		// be set back by the spoke, template and all, before the guard saw a Pod.
		wg.Replicas = ptr.To(ptr.Deref(wg.MaxReplicas, 1))
		pod := &wg.Template.Spec
		pod.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: "host-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		g.Expect(autoscaler.Patch(ctx, &rc, patch)).To(gomega.Succeed(), "the autoscaler may patch its own RayCluster")
	})
	eventually(t, func(g gomega.Gomega) {
		var rc rayv1.RayCluster
		g.Expect(memberClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &rc)).To(gomega.Succeed())
		c := meta.FindStatusCondition(rc.Status.Conditions, fleetv1alpha1.ConditionPodsForbidden)
		g.Expect(c).NotTo(gomega.BeNil(), "PodsForbidden on RayCluster %s", cluster)
		g.Expect(c.Message).To(gomega.ContainSubstring("privileged"))
		cs := clusterStatus(binding(g, ns, "auto"), member)
		g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s", member)
		g.Expect(meta.FindStatusCondition(cs.Conditions, fleetv1alpha1.ConditionPodsForbidden)).NotTo(gomega.BeNil(),
			"the hub hears PodsForbidden from %s: %v", member, cs.Conditions)
	})
	g := gomega.NewWithT(t)
	for _, p := range workerPods(t, member, ns, cluster) {
		g.Expect(p.Spec.Volumes).NotTo(gomega.ContainElement(gomega.HaveField("Name", "host-root")), "worker Pod %s", p.Name)
	}
	g.Expect(len(workerPods(t, member, ns, cluster))).To(gomega.BeNumerically("<=", len(workersBefore)), "worker Pods after the patch")

	t.Log("the same token reaches no other RayCluster")
	var other string
	eventually(t, func(g gomega.Gomega) {
		c := memberRayService(g, member, ns, "takeover")
		g.Expect(c).NotTo(gomega.BeNil())
		// Its serve Service is another application's, so its cluster may never be promoted.
		other = cmp.Or(c.Status.ActiveServiceStatus.RayClusterName, c.Status.PendingServiceStatus.RayClusterName)
		g.Expect(other).NotTo(gomega.BeEmpty(), "a RayCluster of takeover")
	})
	var rc rayv1.RayCluster
	err := autoscaler.Get(ctx, client.ObjectKey{Namespace: ns, Name: other}, &rc)
	g.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "the autoscaler reading RayCluster %s: %v", other, err)

	t.Log("the serveService named after another application's Service leaves it alone")
	eventually(t, func(g gomega.Gomega) {
		c := memberRayService(g, member, ns, "takeover")
		conflict := meta.FindStatusCondition(c.Status.Conditions, fleetv1alpha1.ConditionOwnershipConflict)
		g.Expect(conflict).NotTo(gomega.BeNil(), "OwnershipConflict on the copy of takeover")
		g.Expect(conflict.Message).To(gomega.ContainSubstring("web"))
	})
	var got corev1.Service
	g.Expect(memberClient.Get(ctx, client.ObjectKeyFromObject(web), &got)).To(gomega.Succeed())
	g.Expect(got.Spec.Selector).To(gomega.Equal(web.Spec.Selector), "the selector of Service web")
	g.Expect(got.OwnerReferences).To(gomega.BeEmpty(), "the owners of Service web")
}

// impersonating is a client of member acting as user, as a token of that identity would.
func impersonating(t *testing.T, member, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(fleet.Members[member].Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: fleet.Members[member].Client.Scheme()})
	if err != nil {
		t.Fatalf("client of %s as %s: %v", member, user, err)
	}
	return c
}

// workerPods are the worker Pods of RayCluster cluster on member.
func workerPods(t *testing.T, member, ns, cluster string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := fleet.Members[member].Client.List(context.Background(), &pods, client.InNamespace(ns),
		client.MatchingLabels{"ray.io/cluster": cluster, "ray.io/node-type": string(rayv1.WorkerNode)}); err != nil {
		t.Fatalf("listing worker Pods of %s on %s: %v", cluster, member, err)
	}
	return pods.Items
}
