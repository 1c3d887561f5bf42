package placement

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/demand"
)

// Score weights. A score is capacityPoints × (weighted share of the roomiest candidate's free
// capacity left after placement) minus preferNoSchedulePenalty per untolerated
// PreferNoSchedule taint.
const (
	capacityPoints = 100.0
	// preferNoSchedulePenalty is half the capacity range: a tainted member loses to an
	// untainted one of similar room but still wins when it has far more, which is what
	// "prefer not" means.
	preferNoSchedulePenalty = 50.0
	// acceleratorWeight makes room on GPUs and TPUs count more than room on CPU or memory:
	// accelerators are the scarce resource a RayService is usually placed for.
	acceleratorWeight = 4.0
	// otherWeight is the weight of CPU, memory and every other resource.
	otherWeight = 1.0
)

// fallbackKinds are scored when the demand asks for nothing: a RayService without requests
// still does better on a member with room to spare.
var fallbackKinds = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// score sets the score of every candidate. Room left on each resource the RayService asks for
// is normalised by the most any candidate would have left, so CPU cores, bytes of memory and
// GPUs become comparable shares in [0, 1] before they are weighted.
func score(cands []*candidate, want corev1.ResourceList, asked []corev1.ResourceName) []float64 {
	kinds := asked
	if len(kinds) == 0 {
		kinds = fallbackKinds
	}
	left := make([][]float64, len(cands))
	most := make([]float64, len(kinds))
	for i, c := range cands {
		left[i] = make([]float64, len(kinds))
		for k, name := range kinds {
			have, need := c.free[name], want[name]
			left[i][k] = max(have.AsApproximateFloat64()-need.AsApproximateFloat64(), 0)
			most[k] = max(most[k], left[i][k])
		}
	}
	var totalWeight float64
	for _, name := range kinds {
		totalWeight += weight(name)
	}
	scores := make([]float64, len(cands))
	for i, c := range cands {
		var share float64
		for k, name := range kinds {
			if most[k] > 0 {
				share += weight(name) * left[i][k] / most[k]
			}
		}
		scores[i] = capacityPoints*share/totalWeight - preferNoSchedulePenalty*float64(c.preferAvoid)
	}
	return scores
}

func weight(name corev1.ResourceName) float64 {
	if demand.IsGPUKey(name) || name == demand.TPUResource {
		return acceleratorWeight
	}
	return otherWeight
}
