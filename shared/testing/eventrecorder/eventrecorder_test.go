package eventrecorder

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

func TestRecorder(t *testing.T) {
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner"}}
	a := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	b := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}}
	r := New(t, sch)
	r.Eventf(owner, b, corev1.EventTypeNormal, "CreatedService", "Create", "created b")
	r.Eventf(owner, a, corev1.EventTypeNormal, "CreatedService", "Create", "created a")
	r.Eventf(owner, nil, corev1.EventTypeWarning, "Invalid", "Validate", "bad")
	if got, want := r.RelatedOf("CreatedService"), []string{"Service ns/a", "Service ns/b"}; !slices.Equal(got, want) {
		t.Errorf("RelatedOf = %q, want %q", got, want)
	}
	if got := r.RelatedOf("Invalid"); !slices.Equal(got, []string{""}) {
		t.Errorf("RelatedOf(Invalid) = %q, want one event without a related object", got)
	}
	if got := r.SharedSeries(); got != nil {
		t.Errorf("SharedSeries = %q, want none", got)
	}

	// Two events about the same objects with one reason share a series.
	r.Eventf(owner, a, corev1.EventTypeNormal, "CreatedService", "Create", "created a again")
	if got, want := r.SharedSeries(), [][2]string{{"created a", "created a again"}}; !slices.Equal(got, want) {
		t.Errorf("SharedSeries = %q, want %q", got, want)
	}
}
