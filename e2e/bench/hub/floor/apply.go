package floor

import (
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// applyConfiguration is desired as the hub sends it to server-side apply: no status (the hub
// owns none on members) and no null creationTimestamp.
func applyConfiguration(desired *rayv1.RayService) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("encode RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, fmt.Errorf("decode RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// fromUnstructured is the applied copy as the apply's answer left it in u.
func fromUnstructured(u *unstructured.Unstructured) (*rayv1.RayService, error) {
	var got rayv1.RayService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
		return nil, fmt.Errorf("decode applied RayService %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &got, nil
}
