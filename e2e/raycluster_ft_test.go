//go:build e2e

package e2e

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// KubeRay's names for GCS fault tolerance on the head Pod.
const (
	envRedisAddress    = "RAY_REDIS_ADDRESS"
	envStorageNS       = "RAY_external_storage_namespace"
	envGCSReconnect    = "RAY_gcs_rpc_server_reconnect_timeout_s"
	redisCleanupNode   = "redis-cleanup"
	redisCleanupSuffix = "-redis-cleanup"
)

// A GCS FT cluster carries a finalizer; deleting it deletes the Pods, then runs a Redis cleanup
// Job (made of the head's Ray container), and only when that Job finishes lets the cluster go.
// kwok's fast stages complete Pods owned by a Job, and the KCM's Job controller marks it Complete.
func TestRayClusterGCSFaultToleranceCleanup(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	rc := raybuilder.MakeRayCluster("ft", ns).WorkerGroup("g", 1, 0, 5).GCSFT("redis:6379").Obj()
	key := createRayCluster(t, rc)
	eventually(t, func(g gomega.Gomega) {
		g.Expect(getRayCluster(g, key).Finalizers).To(gomega.ContainElement(labels.GCSFTRedisCleanupFinalizer))
	})
	expectReady(t, key, 1)

	g := gomega.NewWithT(t)
	rc = getRayCluster(g, key)
	head := headPod(g, key)
	g.Expect(head.Annotations).To(gomega.And(
		gomega.HaveKeyWithValue(labels.FTEnabled, "true"),
		gomega.HaveKeyWithValue(labels.ExternalStorageNamespace, string(rc.UID)),
	))
	g.Expect(head.Spec.Containers[0].Env).To(gomega.ContainElements(
		corev1.EnvVar{Name: envRedisAddress, Value: "redis:6379"},
		corev1.EnvVar{Name: envStorageNS, Value: string(rc.UID)},
	))
	for _, w := range rayPods(g, key, "g") {
		g.Expect(w.Spec.Containers[0].Env).To(gomega.ContainElement(corev1.EnvVar{Name: envGCSReconnect, Value: "600"}))
	}

	g.Expect(env.k8s.Delete(t.Context(), rc)).To(gomega.Succeed())
	jobKey := types.NamespacedName{Namespace: ns, Name: "ft" + redisCleanupSuffix}
	eventually(t, func(g gomega.Gomega) {
		job := &batchv1.Job{}
		g.Expect(env.k8s.Get(t.Context(), jobKey, job)).To(gomega.Succeed())
		// The Job starts only once the head is gone, so that GCS no longer writes to Redis.
		g.Expect(rayPodsOfType(g, key, rayv1.HeadNode)).To(gomega.BeEmpty(), "head Pod gone before the cleanup Job")
		g.Expect(job.Labels).To(gomega.And(
			gomega.HaveKeyWithValue(labels.Cluster, "ft"),
			gomega.HaveKeyWithValue(labels.NodeType, redisCleanupNode),
		))
		g.Expect(job.Spec.BackoffLimit).To(gomega.HaveValue(gomega.BeEquivalentTo(0)))
		g.Expect(job.Spec.ActiveDeadlineSeconds).To(gomega.HaveValue(gomega.BeEquivalentTo(300)))
		pod := job.Spec.Template.Spec
		g.Expect(pod.RestartPolicy).To(gomega.Equal(corev1.RestartPolicyNever))
		g.Expect(pod.Containers).To(gomega.HaveLen(1))
		g.Expect(pod.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("200m"))).To(gomega.BeTrue())
		g.Expect(pod.Containers[0].Env).To(gomega.ContainElement(corev1.EnvVar{Name: envRedisAddress, Value: "redis:6379"}))
		expectControlledBy(g, job.OwnerReferences, rc)
	})
	eventually(t, func(g gomega.Gomega) {
		err := env.k8s.Get(t.Context(), key, &rayv1.RayCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "RayCluster gone once the Job completed, got %v", err)
	})
}

// rayPodsOfType lists every Pod (live or terminating) of one Ray node type.
func rayPodsOfType(g gomega.Gomega, key types.NamespacedName, t rayv1.RayNodeType) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.k8s.List(context.Background(), list, client.InNamespace(key.Namespace),
		client.MatchingLabels{labels.Cluster: key.Name, labels.NodeType: string(t)})).To(gomega.Succeed())
	return list.Items
}
