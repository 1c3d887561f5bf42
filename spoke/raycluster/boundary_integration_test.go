package raycluster

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// quiet is how long a test watches for something that must not happen.
const quiet = 2 * time.Second

// hubPlaced labels a RayCluster as the hub's, as propagation labels the RayService it comes from.
func hubPlaced(w *raybuilder.RayClusterWrapper) *raybuilder.RayClusterWrapper {
	return w.Label(labels.OriginNamespace, "team").Label(labels.OriginName, "svc")
}

// impersonate returns a client that acts as the ServiceAccount ns/sa, as the member's API
// server sees a token mounted into a Pod.
func impersonate(t *testing.T, e *envtest.Env, ns, sa string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// escalate rewrites the first worker group as code in the head Pod could with the autoscaler's
// token: a privileged container, the node's root filesystem, more replicas.
func escalate(rc *rayv1.RayCluster) {
	g := &rc.Spec.WorkerGroupSpecs[0]
	g.Replicas, g.MaxReplicas = ptr.To[int32](3), ptr.To[int32](3)
	spec := &g.Template.Spec
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "host-root",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
}

func condition(rc *rayv1.RayCluster, t string) *metav1.Condition {
	return meta.FindStatusCondition(rc.Status.Conditions, t)
}

// TestAutoscalerIdentityCannotEscapeTheLevel plays code in a Ray head using the autoscaler's
// token: it may patch its own RayCluster but no other, and the privileged worker template it
// writes into a hub-placed cluster gives no Pod, only an event and conditions naming the checks
// and fields. A RayCluster the hub did not place keeps KubeRay's behaviour.
func TestAutoscalerIdentityCannotEscapeTheLevel(t *testing.T) {
	e := envtest.Start(t)
	h := startHarnessOn(t, e, nil)
	ctx := context.Background()
	g := NewWithT(t)
	ns := h.namespace(t, g, "boundary")

	placed := hubPlaced(raybuilder.MakeRayCluster("placed", ns).EnableInTreeAutoscaling().WorkerGroup("g", 1, 0, 3))
	g.Expect(h.c.Create(ctx, placed.Obj())).To(Succeed())
	g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("neighbour", ns).WorkerGroup("g", 1, 0, 3).Obj())).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(h.pods(g, ns, "placed", rayv1.WorkerNode)).To(HaveLen(1))
		var rb rbacv1.RoleBinding
		g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "placed"}, &rb)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	var role rbacv1.Role
	g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "placed"}, &role)).To(Succeed())
	g.Expect(role.Rules).To(ContainElement(HaveField("ResourceNames", []string{"placed"})))

	autoscaler := impersonate(t, e, ns, builder.AutoscalerServiceAccountName(placed.Obj()))
	t.Run("the autoscaler's token reaches no other RayCluster", func(t *testing.T) {
		g := NewWithT(t)
		var other rayv1.RayCluster
		g.Expect(apierrors.IsForbidden(autoscaler.Get(ctx, client.ObjectKey{Namespace: ns, Name: "neighbour"}, &other))).To(BeTrue())
		neighbour := h.get(g, ns, "neighbour")
		patch := client.MergeFrom(neighbour.DeepCopy())
		escalate(neighbour)
		err := autoscaler.Patch(ctx, neighbour, patch)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "patch of another RayCluster: %v", err)
		g.Expect(h.get(g, ns, "neighbour").Spec.WorkerGroupSpecs[0].Template.Spec.Volumes).To(BeEmpty())
	})

	t.Run("a privileged worker template patched by the autoscaler gives no Pod", func(t *testing.T) {
		g := NewWithT(t)
		var own rayv1.RayCluster
		g.Expect(autoscaler.Get(ctx, client.ObjectKey{Namespace: ns, Name: "placed"}, &own)).To(Succeed())
		patch := client.MergeFrom(own.DeepCopy())
		escalate(&own)
		g.Expect(autoscaler.Patch(ctx, &own, patch)).To(Succeed(), "the autoscaler may patch its own RayCluster")

		g.Eventually(func(g Gomega) {
			g.Expect(warningNotes(g, h.c, ns, "placed", reasonForbiddenByPodSecurity)).To(ContainElement(And(
				ContainSubstring(`violates PodSecurity "baseline"`), ContainSubstring("securityContext.privileged=true"),
				ContainSubstring(`hostPath volumes (volume "host-root")`))))
			rc := h.get(g, ns, "placed")
			c := condition(rc, fleetv1alpha1.ConditionPodsForbidden)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonPodSecurityViolation))
			g.Expect(c.Message).To(And(ContainSubstring("worker group g"), ContainSubstring("privileged"), ContainSubstring("host-root")))
			g.Expect(conditionStatus(rc, rayv1.RayClusterReplicaFailure)).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			workers := h.pods(g, ns, "placed", rayv1.WorkerNode)
			g.Expect(workers).To(HaveLen(1))
			g.Expect(workers[0].Spec.Volumes).NotTo(ContainElement(HaveField("Name", "host-root")))
		}, quiet, interval).Should(Succeed())
	})

	t.Run("the template put back, the group grows and the condition goes", func(t *testing.T) {
		g := NewWithT(t)
		h.update(g, ns, "placed", func(rc *rayv1.RayCluster) {
			spec := &rc.Spec.WorkerGroupSpecs[0].Template.Spec
			spec.Containers[0].SecurityContext, spec.Volumes = nil, nil
		})
		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, ns, "placed", rayv1.WorkerNode)).To(HaveLen(3))
			g.Expect(condition(h.get(g, ns, "placed"), fleetv1alpha1.ConditionPodsForbidden)).To(BeNil())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("origin labels stripped by the autoscaler change nothing", func(t *testing.T) {
		g := NewWithT(t)
		// The hub's RayService names the cluster in its status, which only the spoke writes.
		rs := raybuilder.MakeRayService("svc", ns).Obj()
		rs.Labels = map[string]string{labels.OriginNamespace: "team", labels.OriginName: "svc"}
		g.Expect(h.c.Create(ctx, rs)).To(Succeed())
		rs.Status.PendingServiceStatus.RayClusterName = "stripped"
		g.Expect(h.c.Status().Update(ctx, rs)).To(Succeed())
		stripped := hubPlaced(raybuilder.MakeRayCluster("stripped", ns).EnableInTreeAutoscaling().WorkerGroup("g", 1, 0, 3))
		g.Expect(h.c.Create(ctx, stripped.Obj())).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, ns, "stripped", rayv1.WorkerNode)).To(HaveLen(1))
			var rb rbacv1.RoleBinding
			g.Expect(h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stripped"}, &rb)).To(Succeed())
		}, timeout, interval).Should(Succeed())

		own := impersonate(t, e, ns, "stripped")
		var rc rayv1.RayCluster
		g.Expect(own.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stripped"}, &rc)).To(Succeed())
		patch := client.MergeFrom(rc.DeepCopy())
		rc.Labels, rc.OwnerReferences = nil, nil
		escalate(&rc)
		g.Expect(own.Patch(ctx, &rc, patch)).To(Succeed())
		g.Expect(h.get(g, ns, "stripped").Labels).NotTo(HaveKey(labels.OriginName))

		g.Eventually(func(g Gomega) {
			g.Expect(warningNotes(g, h.c, ns, "stripped", reasonForbiddenByPodSecurity)).NotTo(BeEmpty())
			g.Expect(condition(h.get(g, ns, "stripped"), fleetv1alpha1.ConditionPodsForbidden)).NotTo(BeNil())
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(h.pods(g, ns, "stripped", rayv1.WorkerNode)).To(HaveLen(1))
		}, quiet, interval).Should(Succeed())
	})

	t.Run("a RayCluster the hub did not place is not checked", func(t *testing.T) {
		g := NewWithT(t)
		local := raybuilder.MakeRayCluster("local", ns).WorkerGroup("g", 1, 0, 3).Obj()
		escalate(local)
		g.Expect(h.c.Create(ctx, local)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, ns, "local", rayv1.WorkerNode)).To(HaveLen(3))
		}, timeout, interval).Should(Succeed())
		g.Expect(condition(h.get(g, ns, "local"), fleetv1alpha1.ConditionPodsForbidden)).To(BeNil())
	})
}

// TestOwnedObjectsOnly: an Ingress, a serve Service or a Role of the name the spoke would use
// that the RayCluster does not control is left as it is and reported; a Role the RayCluster
// controls but made before its rule named the cluster is repaired.
func TestOwnedObjectsOnly(t *testing.T) {
	h := startHarness(t, nil)
	ctx := context.Background()
	g := NewWithT(t)
	ns := h.namespace(t, g, "owned")

	rc := hubPlaced(raybuilder.MakeRayCluster("web", ns).EnableIngress().WorkerGroup("g", 0, 0, 1)).Obj()
	foreign := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: builder.IngressName(rc), Namespace: ns,
			Annotations: map[string]string{"team": "web"}},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
	}
	g.Expect(h.c.Create(ctx, foreign)).To(Succeed())
	g.Expect(h.c.Create(ctx, rc)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(warningNotes(g, h.c, ns, "web", reasonOwnershipConflict)).To(ContainElement(
			ContainSubstring("Ingress " + ns + "/" + foreign.Name + " has no controller, not by RayCluster web")))
		c := condition(h.get(g, ns, "web"), fleetv1alpha1.ConditionOwnershipConflict)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonNotControlled))
		g.Expect(c.Message).To(ContainSubstring("Ingress " + ns + "/" + foreign.Name))
	}, timeout, interval).Should(Succeed())
	var got networkingv1.Ingress
	g.Expect(h.c.Get(ctx, client.ObjectKeyFromObject(foreign), &got)).To(Succeed())
	g.Expect(got.OwnerReferences).To(BeEmpty())
	g.Expect(got.Annotations).To(Equal(foreign.Annotations))
	g.Expect(got.Spec).To(Equal(foreign.Spec))

	t.Run("an autoscaler Role made before resourceNames is repaired", func(t *testing.T) {
		g := NewWithT(t)
		auto := raybuilder.MakeRayCluster("auto", ns).EnableInTreeAutoscaling().Obj()
		g.Expect(h.c.Create(ctx, auto)).To(Succeed())
		key := client.ObjectKey{Namespace: ns, Name: "auto"}
		var role rbacv1.Role
		g.Eventually(func() error { return h.c.Get(ctx, key, &role) }, timeout, interval).Should(Succeed())
		// What KubeRay and earlier spokes wrote: every RayCluster of the namespace.
		for i := range role.Rules {
			role.Rules[i].ResourceNames = nil
		}
		g.Expect(h.c.Update(ctx, &role)).To(Succeed())
		h.update(g, ns, "auto", func(rc *rayv1.RayCluster) { rc.Annotations = map[string]string{"touch": "1"} })
		g.Eventually(func(g Gomega) {
			g.Expect(h.c.Get(ctx, key, &role)).To(Succeed())
			g.Expect(role.Rules).To(ContainElement(HaveField("ResourceNames", []string{"auto"})))
		}, timeout, interval).Should(Succeed())
	})
}
