package raycluster

import (
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusPatch is the merge patch of a RayCluster status write: the difference from the object
// read, plus every desired* quantity. KubeRay replaces the whole status on each write, where a
// zero resource.Quantity marshals as "0" despite omitempty, so its RayClusters always carry
// desiredCPU, desiredMemory, desiredGPU and desiredTPU ("0" for none; `kubectl get
// rayclusters` shows desiredGPU as its GPUS column). A difference alone never carries a zero:
// the typed object read cannot tell a stored "0" from an absent field, and both marshal alike.
// The quantities ride along with a write that happens anyway, so they cost no write of their
// own.
type statusPatch struct {
	diff client.Patch
}

// newStatusPatch returns the status patch from original, the RayCluster as read.
func newStatusPatch(original *rayv1.RayCluster) client.Patch {
	return statusPatch{diff: client.MergeFrom(original)}
}

// Type is a JSON merge patch.
func (p statusPatch) Type() types.PatchType {
	return p.diff.Type()
}

// Data is the merge patch from the original to obj with obj's desired* quantities added.
func (p statusPatch) Data(obj client.Object) ([]byte, error) {
	rc, ok := obj.(*rayv1.RayCluster)
	if !ok {
		return nil, fmt.Errorf("RayCluster status patch of a %T", obj)
	}
	data, err := p.diff.Data(obj)
	if err != nil {
		return nil, fmt.Errorf("status patch of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	patch := map[string]any{}
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("status patch of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	st, _ := patch["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		patch["status"] = st
	}
	for field, q := range desiredQuantities(&rc.Status) {
		st[field] = q
	}
	return json.Marshal(patch)
}

// desiredQuantities are the status's desired* quantities by JSON field name.
func desiredQuantities(st *rayv1.RayClusterStatus) map[string]resource.Quantity {
	return map[string]resource.Quantity{
		"desiredCPU":    st.DesiredCPU,
		"desiredMemory": st.DesiredMemory,
		"desiredGPU":    st.DesiredGPU,
		"desiredTPU":    st.DesiredTPU,
	}
}
