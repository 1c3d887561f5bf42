package propagation

import (
	"encoding/json"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ApplyConfiguration is desired (built by MemberRayService) as the hub sends it to server-side
// apply: no status (the hub owns none on members), and no null field (dropNulls).
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
	dropNulls(u.Object)
	return u, nil
}

// dropNulls removes every null field from obj, in nested objects and lists too. Go encodes a
// nil map or slice of a field without omitempty as null (a worker group's rayStartParams); a
// create drops such a null, but an apply hands it to validation, and the member's CRD refuses
// it ("must be of type object"). Left out, the field is simply not the hub's.
func dropNulls(obj map[string]any) {
	for k, v := range obj {
		if v == nil {
			delete(obj, k)
			continue
		}
		dropNullsIn(v)
	}
}

func dropNullsIn(v any) {
	switch t := v.(type) {
	case map[string]any:
		dropNulls(t)
	case []any:
		for _, item := range t {
			dropNullsIn(item)
		}
	}
}

// ApplyData is ApplyConfiguration encoded, the body of the hub's server-side apply.
func ApplyData(desired *rayv1.RayService) ([]byte, error) {
	u, err := ApplyConfiguration(desired)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return data, nil
}
