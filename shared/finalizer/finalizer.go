// Package finalizer adds and removes the finalizers the hub and the spoke own.
package finalizer

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Patch adds (add) or removes finalizer on obj with a merge patch that carries obj's
// resourceVersion: a finalizer another controller wrote meanwhile makes it a conflict instead
// of being lost, as a plain merge patch of the list would lose it. obj is updated with what the
// server returns. opts are passed to the patch (a field owner).
func Patch(ctx context.Context, c client.Client, obj client.Object, finalizer string, add bool, opts ...client.PatchOption) error {
	base := obj.DeepCopyObject().(client.Object)
	if add {
		controllerutil.AddFinalizer(obj, finalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, finalizer)
	}
	return c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), opts...)
}
