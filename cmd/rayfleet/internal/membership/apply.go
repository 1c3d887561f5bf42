package membership

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// apply server-side applies obj's spec and metadata under FieldManager. Typed objects are
// turned into unstructured apply configurations because the fleet API has no generated apply
// configurations, and one path for every kind keeps join uniform.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return fmt.Errorf("applying %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	// An applied status is ignored by the main resource, and a null creationTimestamp would be
	// a field this manager claims; neither belongs in the configuration.
	delete(content, "status")
	unstructured.RemoveNestedField(content, "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// deleteIfPresent deletes obj, treating an object already gone as deleted.
func deleteIfPresent(ctx context.Context, c client.Client, obj client.Object) error {
	if err := client.IgnoreNotFound(c.Delete(ctx, obj)); err != nil {
		kind := fmt.Sprintf("%T", obj)
		if gvk, gvkErr := apiutil.GVKForObject(obj, c.Scheme()); gvkErr == nil {
			kind = gvk.Kind
		}
		return fmt.Errorf("deleting %s %s: %w", kind, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
