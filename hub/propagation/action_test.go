package propagation

import (
	"errors"
	"testing"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
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
	digest, err := SpecHash(&desired.Spec)
	if err != nil {
		t.Fatal(err)
	}
	// A copy as the hub's cache keeps it: no spec.
	trimmed := desired.DeepCopy()
	if _, err := TrimCopy(trimmed); err != nil {
		t.Fatal(err)
	}
	relabelled := trimmed.DeepCopy()
	delete(relabelled.Labels, labels.OriginHub)
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
		{name: "a copy without its spec that contains this desired spec: keep",
			in: Placed{Hub: hub, HubName: testHub, Copy: trimmed, Desired: desired, Covered: digest, DesiredDigest: digest}, wantKind: Keep, wantReason: ReasonInSync},
		{name: "a copy without its spec that contains another desired spec: apply",
			in: Placed{Hub: hub, HubName: testHub, Copy: trimmed, Desired: desired, Covered: "older", DesiredDigest: digest}, wantKind: Apply, wantReason: ReasonDrifted},
		{name: "a copy without its spec, desired spec not hashed: apply",
			in: Placed{Hub: hub, HubName: testHub, Copy: trimmed, Desired: desired, Covered: digest}, wantKind: Apply, wantReason: ReasonDrifted},
		{name: "a copy without its spec still has its labels compared",
			in: Placed{Hub: hub, HubName: testHub, Copy: relabelled, Desired: desired, Covered: digest, DesiredDigest: digest}, wantKind: Apply, wantReason: ReasonDrifted},
		{name: "a copy whose spec could not be read: keep, compared next time",
			in: Placed{Hub: hub, HubName: testHub, Copy: trimmed, Desired: desired, SpecUnread: errors.New("timeout")}, wantKind: Keep, wantReason: ReasonSpecUnread},
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

func TestForLeaving(t *testing.T) {
	moved, failed := fleetv1alpha1.LeaveMoved, fleetv1alpha1.LeaveFailedOver
	notDone := []string{"eu: application fruit is DEPLOYING"}
	tests := []struct {
		name       string
		in         Leaving
		wantKind   Kind
		wantReason string
	}{
		{"moved, replacement done, member Ready: removed",
			Leaving{Reason: moved, Reachable: true, Ready: true, Placed: 1}, Remove, ReasonNotPlaced},
		{"moved, replacement not done: kept (make-before-break)",
			Leaving{Reason: moved, Reachable: true, Ready: true, NotDone: notDone, Placed: 1}, Keep, ReasonReplacementNotDone},
		{"moved, still draining traffic: kept",
			Leaving{Reason: moved, Reachable: true, Ready: true, Placed: 1, Draining: true}, Keep, ReasonDraining},
		{"retired blue, drained: removed",
			Leaving{Reason: fleetv1alpha1.LeaveRetired, Reachable: true, Ready: true, Placed: 1}, Remove, ReasonNotPlaced},
		{"rolled-back green, draining: kept",
			Leaving{Reason: fleetv1alpha1.LeaveRolledBack, Reachable: true, Ready: true, Placed: 1, Draining: true}, Keep, ReasonDraining},
		{"failed over, Immediately, still draining: kept",
			Leaving{Reason: failed, PurgeMode: fleetv1alpha1.PurgeImmediately, Reachable: true, Placed: 1, Draining: true}, Keep, ReasonDraining},
		{"moved, placed nowhere: kept serving",
			Leaving{Reason: moved, Reachable: true, Ready: true}, Keep, ReasonNoReplacement},
		{"moved, member not Ready: kept",
			Leaving{Reason: moved, Reachable: true, Placed: 1}, Keep, ReasonNotRemoved},
		{"moved, member unreachable: kept",
			Leaving{Reason: moved, Ready: true, Placed: 1}, Keep, ReasonNotRemoved},
		{"failed over, Graceful, member still down: kept",
			Leaving{Reason: failed, PurgeMode: fleetv1alpha1.PurgeGraceful, Placed: 1}, Keep, ReasonNotRemoved},
		{"failed over, Graceful, member Ready again: purged",
			Leaving{Reason: failed, PurgeMode: fleetv1alpha1.PurgeGraceful, Reachable: true, Ready: true, Placed: 1}, Remove, ReasonPurged},
		{"failed over, no mode reads as Graceful",
			Leaving{Reason: failed, Reachable: true, Placed: 1}, Keep, ReasonNotRemoved},
		{"failed over, Graceful, replacement not done: kept",
			Leaving{Reason: failed, Reachable: true, Ready: true, NotDone: notDone, Placed: 1}, Keep, ReasonReplacementNotDone},
		{"failed over, Immediately, reachable but not Ready: purged",
			Leaving{Reason: failed, PurgeMode: fleetv1alpha1.PurgeImmediately, Reachable: true, Placed: 1}, Remove, ReasonPurged},
		{"failed over, Immediately, unreachable: kept, retried",
			Leaving{Reason: failed, PurgeMode: fleetv1alpha1.PurgeImmediately, Placed: 1}, Keep, ReasonNotRemoved},
		{"failed over, Immediately, replacement not done: kept",
			Leaving{Reason: failed, PurgeMode: fleetv1alpha1.PurgeImmediately, Reachable: true, NotDone: notDone, Placed: 1}, Keep, ReasonReplacementNotDone},
		{"failed over, Never: retained even when Ready",
			Leaving{Reason: failed, PurgeMode: fleetv1alpha1.PurgeNever, Reachable: true, Ready: true, Placed: 1}, Keep, ReasonRetained},
		{"moved, Never: Never is about failover only",
			Leaving{Reason: moved, PurgeMode: fleetv1alpha1.PurgeNever, Reachable: true, Ready: true, Placed: 1}, Remove, ReasonNotPlaced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ForLeaving(tt.in)
			if got.Kind != tt.wantKind || got.Reason != tt.wantReason {
				t.Errorf("ForLeaving() = %s, want kind %d reason %q", got, tt.wantKind, tt.wantReason)
			}
		})
	}
}
