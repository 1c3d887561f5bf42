package fleet

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestNotCreated(t *testing.T) {
	b := &fleetv1alpha1.RayServiceBinding{}
	p := notCreated()
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{name: "create", got: p.Create(event.CreateEvent{Object: b}), want: false},
		{name: "update", got: p.Update(event.UpdateEvent{ObjectOld: b, ObjectNew: b}), want: true},
		{name: "delete", got: p.Delete(event.DeleteEvent{Object: b}), want: true},
		{name: "generic", got: p.Generic(event.GenericEvent{Object: b}), want: true},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s passes = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
