package rayspec

import (
	"crypto/sha1" //nolint:gosec // a change detector, not a security boundary; must match KubeRay's
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
)

// serveConfigHashBytes is how many bytes of the SHA-256 digest ServeConfigHash keeps: 128 bits
// tell configs apart as well as the whole digest would, in half the annotation.
const serveConfigHashBytes = 16

// ClusterSpecHash is the ray.io/hash-without-replicas-and-workers-to-delete value KubeRay's
// RayService reconciler writes on the RayClusters it creates, over the spec exactly as given
// (a RayService's rayClusterConfig, which KubeRay does not default first). The hub compares it
// with what a member's active cluster was built from; the spoke tells a changed spec from an
// unchanged one with it.
//
// Fields that change without a new cluster being needed are muted: replica counts and
// workersToDelete (the autoscaler edits them), tolerations and scheduling gates (Kueue
// injects them) and the upgrade strategy itself. spec is not modified.
func ClusterSpecHash(spec *rayv1.RayClusterSpec) (string, error) {
	s := spec.DeepCopy()
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

// ServeConfigHash is a stable hash of a serveConfigV2 text: the lowercase hex of the first 16
// bytes of its SHA-256 digest (32 characters). The text is hashed byte for byte, so a
// reformatted config hashes differently; the hub and the spoke hash the same member spec text,
// which is all the comparison needs.
func ServeConfigHash(serveConfigV2 string) string {
	sum := sha256.Sum256([]byte(serveConfigV2))
	return hex.EncodeToString(sum[:serveConfigHashBytes])
}
