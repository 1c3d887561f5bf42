package builder

import (
	"crypto/sha1" //nolint:gosec // a change detector, not a security boundary; must match KubeRay's
	"encoding/base32"
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
)

// RecreateHash is the ray.io/upgrade-strategy-recreate-hash value of a cluster spec. KubeRay
// computes it in the RayCluster reconciler after its defaulting (nil rayStartParams become empty
// maps, which changes the JSON); this function applies that defaulting itself, so the spec may be
// passed with or without it.
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
	return specHash(s)
}

// HashWithoutReplicas is the ray.io/hash-without-replicas-and-workers-to-delete value KubeRay's
// RayService reconciler writes on the RayClusters it creates. It is the same hash as
// RecreateHash but over the spec exactly as given (the RayService's rayClusterConfig, which
// KubeRay does not default first).
func HashWithoutReplicas(spec *rayv1.RayClusterSpec) (string, error) {
	return specHash(spec.DeepCopy())
}

// specHash hashes the spec with the fields that change without a new cluster being needed
// muted: replica counts and workersToDelete (the autoscaler edits them), tolerations and
// scheduling gates (Kueue injects them) and the upgrade strategy itself. s is modified.
func specHash(s *rayv1.RayClusterSpec) (string, error) {
	s.HeadGroupSpec.Template.Spec.Tolerations = nil
	s.HeadGroupSpec.Template.Spec.SchedulingGates = nil
	for i := range s.WorkerGroupSpecs {
		g := &s.WorkerGroupSpecs[i]
		g.Replicas = nil
		g.MinReplicas = nil
		g.MaxReplicas = nil
		g.ScaleStrategy.WorkersToDelete = nil
		g.Template.Spec.Tolerations = nil
		g.Template.Spec.SchedulingGates = nil
	}
	s.UpgradeStrategy = nil
	js, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("hash RayCluster spec: %w", err)
	}
	sum := sha1.Sum(js) //nolint:gosec // see import
	return base32.HexEncoding.EncodeToString(sum[:]), nil
}
