package propagation

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestForPlaced(t *testing.T) {
	hub := raybuilder.MakeRayService("svc", "ns").Obj()
	desired, err := MemberRayService(testHub, hub, "m1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	drifted := desired.DeepCopy()
	raybuilder.SetImage(&drifted.Spec.RayClusterSpec, "someone/else:1")
	foreign := raybuilder.MakeRayService("svc", "ns").Obj()
	tests := []struct {
		name       string
		in         Placed
		wantKind   Kind
		wantReason string
		wantErr    bool
	}{
		{name: "no copy: apply", in: Placed{Hub: hub, HubName: testHub, Desired: desired}, wantKind: Apply, wantReason: ReasonMissing},
		{name: "a copy as applied: keep", in: Placed{Hub: hub, HubName: testHub, Copy: desired.DeepCopy(), Desired: desired}, wantKind: Keep, wantReason: ReasonInSync},
		{name: "drift is reverted", in: Placed{Hub: hub, HubName: testHub, Copy: drifted, Desired: desired}, wantKind: Apply, wantReason: ReasonDrifted},
		{name: "unreachable: nothing is decided from a copy not read",
			in: Placed{Hub: hub, HubName: testHub, Unreachable: errors.New("timeout"), Desired: desired}, wantKind: Keep, wantReason: ReasonUnreachable},
		{name: "someone else's RayService is left alone", in: Placed{Hub: hub, HubName: testHub, Copy: foreign, Desired: desired}, wantKind: Keep, wantReason: ReasonForeign},
		{name: "refused: a copy it runs stays", in: Placed{Hub: hub, HubName: testHub, Copy: drifted, Desired: desired, Refused: true}, wantKind: Keep, wantReason: ReasonRefused},
		{name: "no copy can be built", in: Placed{Hub: hub, HubName: testHub, DesiredErr: errors.New("override 0: bad")}, wantKind: Keep, wantReason: ReasonNoCopy, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ForPlaced(tt.in)
			if got.Kind != tt.wantKind || got.Reason != tt.wantReason || (got.Err != nil) != tt.wantErr {
				t.Errorf("ForPlaced() = %s, want kind %d reason %q err %v", got, tt.wantKind, tt.wantReason, tt.wantErr)
			}
			if got.Kind == Apply && got.Desired != desired {
				t.Error("an Apply carries the desired copy")
			}
		})
	}
}

func TestForHolding(t *testing.T) {
	got := ForHolding([]string{"a"}, []string{"a", "b", "c", "d"}, map[string]bool{"a": true, "b": true, "c": false})
	kinds := map[string]Kind{}
	for name, a := range got {
		kinds[name] = a.Kind
	}
	want := map[string]Kind{"b": Remove, "c": Keep, "d": Keep}
	if !maps.Equal(kinds, want) {
		t.Errorf("ForHolding() = %v, want %v (a still placed: no entry; c not Ready and d unknown: kept)", kinds, want)
	}
	if names := slices.Sorted(maps.Keys(got)); slices.Contains(names, "a") {
		t.Error("a placed cluster gets no removal decision")
	}
}
