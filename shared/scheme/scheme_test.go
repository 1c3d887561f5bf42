package scheme

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestNewKnowsBuiltInsAndRay(t *testing.T) {
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, gvk := range []string{"Pod", "Service"} {
		if !s.Recognizes(corev1.SchemeGroupVersion.WithKind(gvk)) {
			t.Errorf("the scheme does not know %s", gvk)
		}
	}
	for _, gvk := range []string{"RayCluster", "RayService"} {
		if !s.Recognizes(rayv1.GroupVersion.WithKind(gvk)) {
			t.Errorf("the scheme does not know %s", gvk)
		}
	}
}
