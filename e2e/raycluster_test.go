//go:build e2e

package e2e

import (
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// KubeRay's default head Service ports when the head container declares none.
var defaultHeadServicePorts = map[string]string{
	"client": "10001", "dashboard": "8265", "gcs-server": "6379", "metrics": "8080", "serve": "8000",
}

func TestRayClusterBecomesReady(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("ready", ns).WorkerGroup("small", 2, 0, 5).Obj())
	expectReady(t, key, 2)

	g := gomega.NewWithT(t)
	rc := getRayCluster(g, key)
	head := headPod(g, key)
	t.Run("pods", func(t *testing.T) {
		g := gomega.NewWithT(t)
		g.Expect(head.Name).To(gomega.HavePrefix("ready-head-"))
		g.Expect(head.Labels).To(gomega.And(
			gomega.HaveKeyWithValue(labels.Cluster, "ready"),
			gomega.HaveKeyWithValue(labels.NodeType, string(rayv1.HeadNode)),
			gomega.HaveKeyWithValue(labels.Group, labels.HeadGroupValue),
			gomega.HaveKeyWithValue(labels.IsRayNode, "yes"),
			gomega.HaveKeyWithValue(labels.Identifier, "ready-head"),
			gomega.HaveKeyWithValue(labels.AppName, labels.ApplicationNameValue),
			gomega.HaveKeyWithValue(labels.CreatedBy, labels.CreatedByValue),
		))
		g.Expect(head.Annotations).To(gomega.HaveKeyWithValue(labels.KubeRayVersion, labels.KubeRayVersionValue))
		g.Expect(head.Annotations).To(gomega.HaveKey(labels.UpgradeStrategyRecreateHash))
		expectControlledBy(g, head.OwnerReferences, rc)
		workers := rayPods(g, key, "small")
		g.Expect(workers).To(gomega.HaveLen(2))
		for _, w := range workers {
			g.Expect(w.Name).To(gomega.HavePrefix("ready-small-worker-"))
			g.Expect(w.Labels).To(gomega.And(
				gomega.HaveKeyWithValue(labels.NodeType, string(rayv1.WorkerNode)),
				gomega.HaveKeyWithValue(labels.Identifier, "ready-worker"),
			))
			g.Expect(w.Spec.NodeName).NotTo(gomega.BeEmpty(), "scheduled")
			expectControlledBy(g, w.OwnerReferences, rc)
		}
	})
	t.Run("head service", func(t *testing.T) {
		g := gomega.NewWithT(t)
		svc := &corev1.Service{}
		g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "ready-head-svc"}, svc)).To(gomega.Succeed())
		// Headless by default: a RayCluster has at most one head.
		g.Expect(svc.Spec.ClusterIP).To(gomega.Equal(corev1.ClusterIPNone))
		g.Expect(svc.Spec.Selector).To(gomega.Equal(map[string]string{
			labels.Cluster: "ready", labels.NodeType: string(rayv1.HeadNode), labels.Identifier: "ready-head",
			labels.AppName: labels.ApplicationNameValue, labels.CreatedBy: labels.CreatedByValue,
		}))
		ports := map[string]string{}
		for _, p := range svc.Spec.Ports {
			ports[p.Name] = p.TargetPort.String()
		}
		g.Expect(ports).To(gomega.Equal(defaultHeadServicePorts))
		expectControlledBy(g, svc.OwnerReferences, rc)
	})
	t.Run("status", func(t *testing.T) {
		g := gomega.NewWithT(t)
		st := rc.Status
		g.Expect(st.DesiredWorkerReplicas).To(gomega.Equal(int32(2)))
		g.Expect(st.AvailableWorkerReplicas).To(gomega.Equal(int32(2)))
		g.Expect(st.MinWorkerReplicas).To(gomega.Equal(int32(0)))
		g.Expect(st.MaxWorkerReplicas).To(gomega.Equal(int32(5)))
		g.Expect(st.DesiredCPU.Equal(resource.MustParse("3"))).To(gomega.BeTrue(), "desiredCPU %s", st.DesiredCPU.String())
		g.Expect(st.DesiredMemory.Equal(resource.MustParse("4Gi"))).To(gomega.BeTrue(), "desiredMemory %s", st.DesiredMemory.String())
		g.Expect(st.Head.PodName).To(gomega.Equal(head.Name))
		g.Expect(st.Head.PodIP).To(gomega.Equal(head.Status.PodIP))
		g.Expect(st.Head.ServiceName).To(gomega.Equal("ready-head-svc"))
		g.Expect(st.Head.ServiceIP).To(gomega.Equal(head.Status.PodIP), "a headless head Service reports the head Pod's IP")
		g.Expect(st.Endpoints).To(gomega.Equal(defaultHeadServicePorts))
		g.Expect(st.StateTransitionTimes).To(gomega.HaveKey(rayv1.Ready))
		cond := func(t rayv1.RayClusterConditionType) metav1.Condition {
			for _, c := range st.Conditions {
				if c.Type == string(t) {
					return c
				}
			}
			return metav1.Condition{}
		}
		g.Expect(cond(rayv1.HeadPodReady).Reason).To(gomega.Equal(rayv1.HeadPodRunningAndReady))
		g.Expect(cond(rayv1.RayClusterProvisioned).Reason).To(gomega.Equal(rayv1.AllPodRunningAndReadyFirstTime))
		g.Expect(cond(rayv1.RayClusterSuspended).Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(cond(rayv1.RayClusterSuspending).Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(cond(rayv1.RayClusterReplicaFailure).Type).To(gomega.BeEmpty(), "no ReplicaFailure condition")
	})
}

func expectControlledBy(g gomega.Gomega, refs []metav1.OwnerReference, rc *rayv1.RayCluster) {
	g.Expect(refs).To(gomega.ContainElement(gomega.And(
		gomega.HaveField("Kind", "RayCluster"),
		gomega.HaveField("Name", rc.Name),
		gomega.HaveField("UID", rc.UID),
		gomega.HaveField("Controller", gomega.HaveValue(gomega.BeTrue())),
	)))
}

func TestRayClusterScalesUpAndDown(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("scale", ns).WorkerGroup("g", 1, 0, 5).Obj())
	expectReady(t, key, 1)

	setReplicas := func(n int32) {
		updateRayCluster(t, key, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(n) })
	}
	setReplicas(3)
	expectReady(t, key, 3)
	setReplicas(1)
	expectReady(t, key, 1)
	// replicas above maxReplicas are clamped to it.
	setReplicas(8)
	expectReady(t, key, 5)
	eventually(t, func(g gomega.Gomega) {
		g.Expect(getRayCluster(g, key).Status.DesiredWorkerReplicas).To(gomega.Equal(int32(5)))
	})
}

func TestRayClusterWorkersToDelete(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("wtd", ns).WorkerGroup("g", 3, 0, 5).Obj())
	expectReady(t, key, 3)

	g := gomega.NewWithT(t)
	workers := rayPods(g, key, "g")
	victim := workers[1]
	survivors := uids(append([]corev1.Pod{workers[0]}, workers[2:]...))
	// What the Ray autoscaler does: lower replicas and name the Pod to remove.
	updateRayCluster(t, key, func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(int32(2))
		rc.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{victim.Name}
	})
	eventually(t, func(g gomega.Gomega) {
		err := env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: victim.Name}, &corev1.Pod{})
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "Pod %s should be deleted, got %v", victim.Name, err)
	})
	expectReady(t, key, 2)
	g.Expect(uids(rayPods(g, key, "g"))).To(gomega.Equal(survivors), "only the named Pod is removed")
	// The spoke empties the list once the Pods are gone. (KubeRay v1.6.2 itself never writes the
	// spec and leaves that to the autoscaler; clearing it is a deliberate RayFleet choice.)
	eventually(t, func(g gomega.Gomega) {
		g.Expect(getRayCluster(g, key).Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete).To(gomega.BeEmpty())
	})
}

func TestRayClusterSuspendAndResume(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("susp", ns).WorkerGroup("g", 2, 0, 5).Obj())
	expectReady(t, key, 2)

	updateRayCluster(t, key, func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(true) })
	eventually(t, func(g gomega.Gomega) {
		g.Expect(allRayPods(g, key)).To(gomega.BeZero(), "all Pods deleted")
		rc := getRayCluster(g, key)
		g.Expect(rc.Status.State).To(gomega.Equal(rayv1.Suspended))
		expectConditionStatus(g, rc, rayv1.RayClusterSuspended, metav1.ConditionTrue)
		expectConditionStatus(g, rc, rayv1.RayClusterSuspending, metav1.ConditionFalse)
		expectConditionStatus(g, rc, rayv1.RayClusterProvisioned, metav1.ConditionFalse)
		expectConditionStatus(g, rc, rayv1.HeadPodReady, metav1.ConditionFalse)
	})

	updateRayCluster(t, key, func(rc *rayv1.RayCluster) { rc.Spec.Suspend = ptr.To(false) })
	expectReady(t, key, 2)
	eventually(t, func(g gomega.Gomega) {
		expectConditionStatus(g, getRayCluster(g, key), rayv1.RayClusterSuspended, metav1.ConditionFalse)
	})
}

func TestRayClusterRecreateUpgrade(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("recreate", ns).WorkerGroup("g", 2, 0, 5).
		UpgradeStrategy(rayv1.RayClusterRecreate).Obj())
	expectReady(t, key, 2)

	g := gomega.NewWithT(t)
	before := uids(rayPods(g, key, ""))
	oldHash := headPod(g, key).Annotations[labels.UpgradeStrategyRecreateHash]
	g.Expect(oldHash).NotTo(gomega.BeEmpty())

	updateRayCluster(t, key, func(rc *rayv1.RayCluster) {
		c := &rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "E2E_TEMPLATE_VERSION", Value: "2"})
	})
	expectReady(t, key, 2)
	eventually(t, func(g gomega.Gomega) {
		pods := rayPods(g, key, "")
		for uid, name := range uids(pods) {
			g.Expect(before).NotTo(gomega.HaveKey(uid), "Pod %s from before the upgrade survived", name)
		}
		g.Expect(headPod(g, key).Annotations[labels.UpgradeStrategyRecreateHash]).NotTo(gomega.Equal(oldHash))
		for _, w := range rayPods(g, key, "g") {
			g.Expect(w.Spec.Containers[0].Env).To(gomega.ContainElement(corev1.EnvVar{Name: "E2E_TEMPLATE_VERSION", Value: "2"}))
		}
	})
	expectReady(t, key, 2)
}

// Without an upgrade strategy KubeRay leaves running Pods alone when the template changes; only
// new Pods get the new template.
func TestRayClusterTemplateChangeWithoutUpgradeStrategy(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("noupgrade", ns).WorkerGroup("g", 1, 0, 5).Obj())
	expectReady(t, key, 1)

	g := gomega.NewWithT(t)
	before := uids(rayPods(g, key, ""))
	updateRayCluster(t, key, func(rc *rayv1.RayCluster) {
		wg := &rc.Spec.WorkerGroupSpecs[0]
		wg.Template.Spec.Containers[0].Env = append(wg.Template.Spec.Containers[0].Env,
			corev1.EnvVar{Name: "E2E_TEMPLATE_VERSION", Value: "2"})
		wg.Replicas = ptr.To(int32(2))
	})
	expectReady(t, key, 2)
	after := uids(rayPods(g, key, ""))
	for uid, name := range before {
		g.Expect(after).To(gomega.HaveKey(uid), "Pod %s was replaced", name)
	}
}

func TestRayClusterRecreatesDeletedHeadPod(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("headdel", ns).WorkerGroup("g", 2, 0, 5).Obj())
	expectReady(t, key, 2)

	g := gomega.NewWithT(t)
	old := headPod(g, key)
	workers := uids(rayPods(g, key, "g"))
	g.Expect(env.k8s.Delete(t.Context(), &old)).To(gomega.Succeed())
	eventually(t, func(g gomega.Gomega) {
		g.Expect(headPod(g, key).UID).NotTo(gomega.Equal(old.UID), "a new head Pod")
	})
	expectReady(t, key, 2)
	g.Expect(uids(rayPods(g, key, "g"))).To(gomega.Equal(workers), "workers are not touched")
	rc := getRayCluster(g, key)
	g.Expect(rc.Status.Head.PodName).To(gomega.Equal(headPod(g, key).Name))
}

func TestRayClusterDeletionRemovesOwnedObjects(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	rc := raybuilder.MakeRayCluster("gone", ns).WorkerGroup("g", 2, 0, 5).Obj()
	key := createRayCluster(t, rc)
	expectReady(t, key, 2)

	g := gomega.NewWithT(t)
	g.Expect(env.k8s.Delete(t.Context(), rc)).To(gomega.Succeed())
	eventually(t, func(g gomega.Gomega) {
		err := env.k8s.Get(t.Context(), key, &rayv1.RayCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "RayCluster deleted, got %v", err)
		g.Expect(allRayPods(g, key)).To(gomega.BeZero(), "Pods garbage-collected")
		err = env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "gone-head-svc"}, &corev1.Service{})
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "head Service garbage-collected, got %v", err)
	})
}

func TestRayClusterInvalidSpecIsReportedNotBuilt(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// minReplicas above maxReplicas passes the CRD schema but not KubeRay's validation.
	key := createRayCluster(t, raybuilder.MakeRayCluster("invalid", ns).WorkerGroup("g", 1, 3, 2).Obj())
	eventually(t, func(g gomega.Gomega) {
		g.Expect(eventReasons(g, ns, key.Name)).To(gomega.ContainElement("InvalidRayClusterSpec"))
	})
	g := gomega.NewWithT(t)
	g.Expect(allRayPods(g, key)).To(gomega.BeZero(), "no Pods for an invalid spec")
}

func TestRayClusterManagedByAnotherControllerIsLeftAlone(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	foreign := createRayCluster(t, raybuilder.MakeRayCluster("foreign", ns).WorkerGroup("g", 1, 0, 5).
		ManagedBy("kueue.x-k8s.io/multikueue").Obj())
	// A cluster created afterwards reaching ready shows the spoke has long seen the first one.
	sentinel := createRayCluster(t, raybuilder.MakeRayCluster("sentinel", ns).WorkerGroup("g", 1, 0, 5).Obj())
	expectReady(t, sentinel, 1)

	g := gomega.NewWithT(t)
	g.Expect(allRayPods(g, foreign)).To(gomega.BeZero())
	rc := getRayCluster(g, foreign)
	g.Expect(rc.Status.State).To(gomega.BeEmpty(), "status untouched")
	g.Expect(rc.Finalizers).To(gomega.BeEmpty())
	svc := &corev1.Service{}
	err := env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "foreign-head-svc"}, svc)
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "no head Service, got %v", err)
}
