package validation

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestSpecMemo(t *testing.T) {
	valid := raybuilder.MakeRayService("svc", "ns").Obj()
	valid.UID, valid.Generation = "uid-1", 1
	m := NewSpecMemo()
	if err := m.Check(valid); err != nil {
		t.Fatalf("valid spec: %v", err)
	}

	// The same generation is not validated again: a spec made invalid behind the memo's
	// back (impossible through the API server) still passes.
	tampered := valid.DeepCopy()
	tampered.Spec.ServeConfigV2 = "applications: [unclosed"
	if err := m.Check(tampered); err != nil {
		t.Fatalf("same generation re-validated: %v", err)
	}
	tampered.Generation = 2
	if err := m.Check(tampered); err == nil {
		t.Fatal("a new generation must be validated")
	}
	// Annotations take part too (they are validated with the cluster spec), and the UID: a
	// RayService deleted and created again under its name is validated anew.
	recreated := tampered.DeepCopy()
	recreated.UID, recreated.Generation = "uid-2", 1
	if err := m.Check(recreated); err == nil {
		t.Fatal("a new object of the same name must be validated")
	}
	annotated := valid.DeepCopy()
	annotated.Spec.ServeConfigV2 = "applications: [unclosed"
	annotated.Annotations = map[string]string{"x": "y"}
	if err := m.Check(annotated); err == nil {
		t.Fatal("changed annotations must be validated")
	}
	m.Forget(types.NamespacedName{Namespace: valid.Namespace, Name: valid.Name})
	if len(m.valid) != 0 {
		t.Fatalf("forget left %d entries", len(m.valid))
	}
}
