package builder

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// RecreateHash is the ray.io/upgrade-strategy-recreate-hash value of a cluster spec. KubeRay
// computes it in the RayCluster reconciler after its defaulting (nil rayStartParams become empty
// maps, which changes the JSON); this function applies that defaulting itself, so the spec may be
// passed with or without it. Otherwise it is rayspec.ClusterSpecHash.
func RecreateHash(spec *rayv1.RayClusterSpec) (string, error) {
	s := spec.DeepCopy()
	if s.HeadGroupSpec.RayStartParams == nil {
		s.HeadGroupSpec.RayStartParams = map[string]string{}
	}
	for i := range s.WorkerGroupSpecs {
		if s.WorkerGroupSpecs[i].RayStartParams == nil {
			s.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
		}
	}
	return rayspec.ClusterSpecHash(s)
}
