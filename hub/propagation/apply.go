package propagation

import (
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplyConfiguration is desired (built by MemberRayService) as the hub sends it to server-side
// apply: no status (the hub owns none on members) and no null creationTimestamp, noise in the
// request.
func ApplyConfiguration(desired *rayv1.RayService) (*unstructured.Unstructured, error) {
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
