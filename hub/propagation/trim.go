package propagation

import (
	"encoding/json"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// TrimManagedFields is the member caches' transform. Drifted reads one thing from a copy's
// managedFields, the labels and annotations the hub's own applies own; every other entry, and
// the spec part of the hub's, is dropped before the object is stored. A copy's managedFields
// are most of its size (the spoke's status writes, the hub's spec), and the hub caches one
// copy per placement: at 10,000 RayServices that was about 150 MB.
func TrimManagedFields(obj any) (any, error) {
	o, err := meta.Accessor(obj)
	if err != nil {
		// A tombstone or another non-object passes untouched, as the stock transforms do.
		return obj, nil //nolint:nilerr // not an object: nothing to trim
	}
	var kept []metav1.ManagedFieldsEntry
	for _, mf := range o.GetManagedFields() {
		if mf.Manager != labels.HubFieldManager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		mf.FieldsV1 = metadataFields(mf.FieldsV1)
		kept = append(kept, mf)
	}
	o.SetManagedFields(kept)
	return obj, nil
}

// TrimCopy is the member caches' transform of RayServices: TrimManagedFields, and the spec
// and the RayCluster statuses dropped. The hub reads a copy's metadata (origin, revision,
// spec hash) and the rest of its status from its cache; the spec only for the drift check,
// which compares it whole once per generation and remembers the answer (Covered), reading the
// spec from the member's API server. A decoded spec is about 6 KB where the rest of a copy is
// 2 to 4: at 10,000 RayServices, 16,000 specs. The active and pending RayClusters' statuses
// (their conditions, endpoints, resources and transition times) are the spoke's detail; the
// hub reads the clusters' names, the applications and the RayService's own conditions.
func TrimCopy(obj any) (any, error) {
	obj, err := TrimManagedFields(obj)
	if rs, ok := obj.(*rayv1.RayService); ok {
		rs.Spec = rayv1.RayServiceSpec{}
		rs.Status.ActiveServiceStatus.RayClusterStatus = rayv1.RayClusterStatus{}
		rs.Status.PendingServiceStatus.RayClusterStatus = rayv1.RayClusterStatus{}
	}
	return obj, err
}

// metadataFields is the f:metadata part of a field set; a set that does not parse is kept
// whole (Drifted skips what it cannot read, as it did before the trim).
func metadataFields(fs *metav1.FieldsV1) *metav1.FieldsV1 {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(fs.GetRawBytes(), &all); err != nil {
		return fs
	}
	md, ok := all["f:metadata"]
	if !ok {
		return metav1.NewFieldsV1("{}")
	}
	raw, err := json.Marshal(map[string]json.RawMessage{"f:metadata": md})
	if err != nil {
		return fs
	}
	return metav1.NewFieldsV1(string(raw))
}
