// Package metapatch sends patches and server-side applies that ask for the object's metadata
// only in the answer. The API server then encodes, and the client decodes, the metadata as
// protobuf instead of the whole object as JSON: for a RayService its spec, its status and its
// managed fields, several KB a write. For writers that read nothing of the answer but the new
// resourceVersion, UID and generation.
// A leaf: it imports no other RayFleet package.
package metapatch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Of is an empty PartialObjectMetadata naming obj, of obj's kind in c's scheme.
func Of(c client.Client, obj client.Object) (*metav1.PartialObjectMetadata, error) {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return nil, err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	m.Namespace, m.Name = obj.GetNamespace(), obj.GetName()
	return m, nil
}

// Patch patches obj with patch and sets on obj the resourceVersion the API server stored it
// at; the rest of obj is what the caller made it.
func Patch(ctx context.Context, c client.Client, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	m, err := send(c, obj, patch, func(m *metav1.PartialObjectMetadata, raw client.Patch) error {
		return c.Patch(ctx, m, raw, opts...)
	})
	if err == nil {
		obj.SetResourceVersion(m.ResourceVersion)
	}
	return err
}

// PatchStatus is Patch of obj's status subresource.
func PatchStatus(ctx context.Context, c client.Client, obj client.Object, patch client.Patch) error {
	m, err := send(c, obj, patch, func(m *metav1.PartialObjectMetadata, raw client.Patch) error {
		return c.Status().Patch(ctx, m, raw)
	})
	if err == nil {
		obj.SetResourceVersion(m.ResourceVersion)
	}
	return err
}

// Apply server-side applies data (an apply configuration of obj's kind, as JSON) to the object
// obj names and returns the stored object's metadata.
func Apply(ctx context.Context, c client.Client, obj client.Object, data []byte, opts ...client.PatchOption) (*metav1.PartialObjectMetadata, error) {
	return send(c, obj, client.RawPatch(types.ApplyPatchType, data), func(m *metav1.PartialObjectMetadata, raw client.Patch) error {
		return c.Patch(ctx, m, raw, opts...)
	})
}

// send computes patch's data from obj and hands it, raw, to write with the metadata it fills.
func send(c client.Client, obj client.Object, patch client.Patch,
	write func(*metav1.PartialObjectMetadata, client.Patch) error,
) (*metav1.PartialObjectMetadata, error) {
	data, err := patch.Data(obj)
	if err != nil {
		return nil, err
	}
	m, err := Of(c, obj)
	if err != nil {
		return nil, err
	}
	if err = write(m, client.RawPatch(patch.Type(), data)); err != nil {
		return nil, err
	}
	return m, nil
}
