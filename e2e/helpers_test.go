//go:build e2e

package e2e

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// createRayCluster creates rc and returns its key.
func createRayCluster(t *testing.T, rc *rayv1.RayCluster) types.NamespacedName {
	t.Helper()
	if err := env.k8s.Create(t.Context(), rc); err != nil {
		t.Fatalf("creating RayCluster %s/%s: %v", rc.Namespace, rc.Name, err)
	}
	return client.ObjectKeyFromObject(rc)
}

// getRayCluster reads the RayCluster inside an eventually check.
func getRayCluster(g gomega.Gomega, key types.NamespacedName) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{}
	g.Expect(env.k8s.Get(context.Background(), key, rc)).To(gomega.Succeed())
	return rc
}

// updateRayCluster applies mutate to the latest version of the RayCluster, retrying conflicts
// with the spoke's own writes.
func updateRayCluster(t *testing.T, key types.NamespacedName, mutate func(*rayv1.RayCluster)) *rayv1.RayCluster {
	t.Helper()
	rc := &rayv1.RayCluster{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.k8s.Get(t.Context(), key, rc); err != nil {
			return err
		}
		mutate(rc)
		return env.k8s.Update(t.Context(), rc)
	})
	if err != nil {
		t.Fatalf("updating RayCluster %s: %v", key, err)
	}
	return rc
}

// rayPods lists the Pods of a RayCluster, optionally only one group ("headgroup" for the
// head). Pods already being deleted are left out: kwok removes them a moment later.
func rayPods(g gomega.Gomega, key types.NamespacedName, group string) []corev1.Pod {
	sel := client.MatchingLabels{labels.Cluster: key.Name}
	if group != "" {
		sel[labels.Group] = group
	}
	list := &corev1.PodList{}
	g.Expect(env.k8s.List(context.Background(), list, client.InNamespace(key.Namespace), sel)).To(gomega.Succeed())
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// allRayPods counts every Pod of the cluster, including those being deleted.
func allRayPods(g gomega.Gomega, key types.NamespacedName) int {
	list := &corev1.PodList{}
	g.Expect(env.k8s.List(context.Background(), list, client.InNamespace(key.Namespace),
		client.MatchingLabels{labels.Cluster: key.Name})).To(gomega.Succeed())
	return len(list.Items)
}

// headPod returns the single live head Pod.
func headPod(g gomega.Gomega, key types.NamespacedName) corev1.Pod {
	heads := rayPods(g, key, labels.HeadGroupValue)
	g.Expect(heads).To(gomega.HaveLen(1), "head Pods of %s", key)
	return heads[0]
}

// podReady is what kwok makes of a scheduled Pod: Running with the Ready condition True.
func podReady(p corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// uids indexes Pods by UID.
func uids(pods []corev1.Pod) map[types.UID]string {
	m := make(map[types.UID]string, len(pods))
	for _, p := range pods {
		m[p.UID] = p.Name
	}
	return m
}

// expectConditionStatus asserts a status condition of the RayCluster (absent counts as a failure).
func expectConditionStatus(g gomega.Gomega, rc *rayv1.RayCluster, t rayv1.RayClusterConditionType, want metav1.ConditionStatus) {
	c := meta.FindStatusCondition(rc.Status.Conditions, string(t))
	g.Expect(c).NotTo(gomega.BeNil(), "condition %s of %s/%s; conditions: %+v", t, rc.Namespace, rc.Name, rc.Status.Conditions)
	g.Expect(c.Status).To(gomega.Equal(want), "condition %s of %s/%s: %+v", t, rc.Namespace, rc.Name, c)
}

// expectReady waits until the cluster is ready the way KubeRay reports it: state ready for the
// current generation, head and workers Running and Ready, HeadPodReady and
// RayClusterProvisioned True, and readyWorkerReplicas equal to workers.
func expectReady(t *testing.T, key types.NamespacedName, workers int) {
	t.Helper()
	eventually(t, func(g gomega.Gomega) {
		rc := getRayCluster(g, key)
		g.Expect(rc.Status.ObservedGeneration).To(gomega.Equal(rc.Generation), "observedGeneration")
		g.Expect(rc.Status.State).To(gomega.Equal(rayv1.Ready), "status.state")
		g.Expect(rc.Status.ReadyWorkerReplicas).To(gomega.Equal(int32(workers)), "readyWorkerReplicas")
		expectConditionStatus(g, rc, rayv1.HeadPodReady, metav1.ConditionTrue)
		expectConditionStatus(g, rc, rayv1.RayClusterProvisioned, metav1.ConditionTrue)
		pods := rayPods(g, key, "")
		g.Expect(pods).To(gomega.HaveLen(workers+1), "live Pods")
		for _, p := range pods {
			g.Expect(podReady(p)).To(gomega.BeTrue(), "Pod %s ready", p.Name)
		}
	})
}

// events returns the reasons of the Events about the named object in ns.
func eventReasons(g gomega.Gomega, ns, name string) []string {
	list := &corev1.EventList{}
	g.Expect(env.k8s.List(context.Background(), list, client.InNamespace(ns))).To(gomega.Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
