package floor

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// fromUnstructured is the applied copy as the apply's answer left it in u.
func fromUnstructured(u *unstructured.Unstructured) (*rayv1.RayService, error) {
	var got rayv1.RayService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
		return nil, fmt.Errorf("decode applied RayService %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &got, nil
}
