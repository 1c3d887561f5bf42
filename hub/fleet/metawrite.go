package fleet

import (
	"context"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/metapatch"
)

// The hub's writes of every reconcile read back the object's metadata only (metapatch):
// nothing after them reads more than the new resourceVersion, UID and generation.

// patchStatus merge-patches the status of the object obj names from base to next, and sets on
// obj the resourceVersion the API server stored it at. Only the two statuses are marshalled and
// compared: the whole objects' specs (a hub RayService's, read back from HubSpecs, is larger
// than its status) would be marshalled twice and diffed for nothing at every status write.
func patchStatus[S any](ctx context.Context, c client.Client, obj client.Object, base, next *S) error {
	data, err := statusMergePatch(base, next)
	if err != nil {
		return err
	}
	return metapatch.PatchStatus(ctx, c, obj, client.RawPatch(types.MergePatchType, data))
}

// statusMergePatch is the JSON merge patch from {"status": base} to {"status": next}: what
// client.MergeFrom makes of two objects that differ in their status only.
func statusMergePatch[S any](base, next *S) ([]byte, error) {
	type object struct {
		Status *S `json:"status"`
	}
	from, err := json.Marshal(object{Status: base})
	if err != nil {
		return nil, fmt.Errorf("marshal the status: %w", err)
	}
	to, err := json.Marshal(object{Status: next})
	if err != nil {
		return nil, fmt.Errorf("marshal the status: %w", err)
	}
	patch, err := jsonpatch.CreateMergePatch(from, to)
	if err != nil {
		return nil, fmt.Errorf("make the status patch: %w", err)
	}
	return patch, nil
}

// addFinalizer adds finalizer to obj by a merge patch that holds obj's resourceVersion.
func addFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	base := obj.DeepCopyObject().(client.Object)
	controllerutil.AddFinalizer(obj, finalizer)
	return metapatch.Patch(ctx, c, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// applyCopy server-side applies desired under the hub's field manager, taking over fields
// another manager changed (that is drift to revert), and returns the copy as stored: the
// answer's metadata, desired's spec (what the apply made it) and, from cached, the status the
// copy already had (an apply never changes it; none for a new copy).
func applyCopy(ctx context.Context, cl client.Client, desired, cached *rayv1.RayService) (*rayv1.RayService, error) {
	data, err := propagation.ApplyData(desired)
	if err != nil {
		return nil, err
	}
	m, err := metapatch.Apply(ctx, cl, desired, data, client.FieldOwner(labels.HubFieldManager), client.ForceOwnership)
	if err != nil {
		return nil, fmt.Errorf("apply RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	got := &rayv1.RayService{ObjectMeta: m.ObjectMeta, Spec: desired.Spec}
	if cached != nil && cached.UID == got.UID {
		got.Status = cached.Status
	}
	return got, nil
}

// asStored is v as the API server stores it, through its JSON: times to the second. v itself
// when it does not encode (no status type fails to).
func asStored[T any](v *T) *T {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	out := new(T)
	if err = json.Unmarshal(data, out); err != nil {
		return v
	}
	return out
}
