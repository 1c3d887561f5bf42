package builder

import (
	"fmt"
	"maps"
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// clusterNameSuffixLength is the number of random characters after "<rs>-" in the name of a
// RayService's cluster; validation.MaxRayServiceNameLength leaves room for them.
const clusterNameSuffixLength = 5

// RayClusterName returns a new name for a cluster of rs: "<rs>-" and five random lower-case
// alphanumerics from random (k8s.io/apimachinery's rand.String when nil; tests pass their own).
func RayClusterName(rs *rayv1.RayService, random func(n int) string) string {
	if random == nil {
		random = rand.String
	}
	return rs.Name + "-" + random(clusterNameSuffixLength)
}

// RayClusterForRayService builds the RayCluster named name that rs asks for, as KubeRay does:
//
//   - the spec is rs's rayClusterConfig; when rs upgrades incrementally and name is not its
//     active cluster, worker replica counts are left out, so the new cluster starts at
//     minReplicas and the autoscaler grows it with Serve's target_capacity;
//   - labels are rs's plus ray.io/originated-from-cr-name and ray.io/originated-from-crd;
//   - annotations are rs's plus the spec hash (ray.io/hash-without-replicas-and-workers-to-delete,
//     over rayClusterConfig as given, which is how a changed spec is told from an unchanged one),
//     ray.io/num-worker-groups (to tell appended worker groups from other changes) and
//     ray.io/kuberay-version (opts.KubeRayVersion);
//   - rs is its controller, so it is garbage-collected with rs.
//
// KubeRay leaves the replica counts out whenever an active cluster exists, also when it
// rebuilds the active cluster itself to update it in place; that would drop the replica
// counts of a serving cluster, so here only a cluster other than the active one loses them.
func RayClusterForRayService(rs *rayv1.RayService, name string, opts Options) (*rayv1.RayCluster, error) {
	opts = opts.withDefaults()
	hash, err := rayspec.ClusterSpecHash(&rs.Spec.RayClusterSpec)
	if err != nil {
		return nil, fmt.Errorf("build RayCluster %s for RayService %s/%s: %w", name, rs.Namespace, rs.Name, err)
	}
	clusterLabels := maps.Clone(rs.Labels)
	if clusterLabels == nil {
		clusterLabels = map[string]string{}
	}
	clusterLabels[labels.OriginatedFromCRName] = rs.Name
	clusterLabels[labels.OriginatedFromCRD] = string(creatorRayService)

	annotations := maps.Clone(rs.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[labels.HashWithoutReplicas] = hash
	annotations[labels.NumWorkerGroups] = strconv.Itoa(len(rs.Spec.RayClusterSpec.WorkerGroupSpecs))
	annotations[labels.KubeRayVersion] = opts.KubeRayVersion

	spec := rs.Spec.RayClusterSpec.DeepCopy()
	active := rs.Status.ActiveServiceStatus.RayClusterName
	if rayspec.IncrementalUpgrade(&rs.Spec) && active != "" && active != name {
		for i := range spec.WorkerGroupSpecs {
			spec.WorkerGroupSpecs[i].Replicas = nil
		}
	}
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       rs.Namespace,
			Labels:          clusterLabels,
			Annotations:     annotations,
			OwnerReferences: controllerRefs(rs, rayServiceKind),
		},
		Spec: *spec,
	}, nil
}
