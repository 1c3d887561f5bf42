package finalizer

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestPatch(t *testing.T) {
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", Finalizers: []string{"other/keep"}}}
	c := fake.NewClientBuilder().WithObjects(cm).Build()

	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if err := Patch(ctx, c, &got, "ours/cleanup", true); err != nil {
		t.Fatalf("adding: %v", err)
	}
	var stored corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &stored); err != nil {
		t.Fatal(err)
	}
	if want := []string{"other/keep", "ours/cleanup"}; !slices.Equal(stored.Finalizers, want) || !slices.Equal(got.Finalizers, want) {
		t.Errorf("after adding: stored %v, returned %v, want %v", stored.Finalizers, got.Finalizers, want)
	}

	// Someone else changes the finalizers after our read: our removal must not overwrite them.
	stale := got.DeepCopy()
	stored.Finalizers = append(stored.Finalizers, "third/new")
	if err := c.Update(ctx, &stored); err != nil {
		t.Fatal(err)
	}
	if err := Patch(ctx, c, stale, "ours/cleanup", false); !apierrors.IsConflict(err) {
		t.Errorf("removing from a stale read: %v, want a conflict", err)
	}

	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
		t.Fatal(err)
	}
	if err := Patch(ctx, c, &got, "ours/cleanup", false); err != nil {
		t.Fatalf("removing: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &stored); err != nil {
		t.Fatal(err)
	}
	if want := []string{"other/keep", "third/new"}; !slices.Equal(stored.Finalizers, want) {
		t.Errorf("after removing: %v, want %v", stored.Finalizers, want)
	}
}
