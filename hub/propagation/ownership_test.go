package propagation

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestOwnershipOf(t *testing.T) {
	hub := raybuilder.MakeRayService("svc", "ns").Obj() // UID "svc-uid"
	fromHub := func(ns, name, uid, hubName string) *rayv1.RayService {
		rs := raybuilder.MakeRayService("svc", "ns").Obj()
		rs.UID = "member-object-uid"
		rs.Labels = map[string]string{"app": "fruit"}
		for k, v := range map[string]string{labels.OriginNamespace: ns, labels.OriginName: name, labels.OriginUID: uid, labels.OriginHub: hubName} {
			if v != "" {
				rs.Labels[k] = v
			}
		}
		return rs
	}
	withOrigin := func(ns, name, uid string) *rayv1.RayService { return fromHub(ns, name, uid, "") }
	tests := []struct {
		name   string
		hub    *rayv1.RayService
		member *rayv1.RayService
		want   Ownership
	}{
		{"no member copy", hub, nil, NotFound},
		{"our copy", hub, withOrigin("ns", "svc", "svc-uid"), Ours},
		{"created on the member by someone else", hub, withOrigin("", "", ""), Foreign},
		{"origin names another hub object", hub, withOrigin("ns", "other", "svc-uid"), Foreign},
		{"origin in another namespace", hub, withOrigin("team-b", "svc", "svc-uid"), Foreign},
		{"origin name only", hub, withOrigin("", "svc", "svc-uid"), Foreign},
		{"copy of a deleted and recreated hub object", hub, withOrigin("ns", "svc", "old-uid"), OursStale},
		{"origin without uid", hub, withOrigin("ns", "svc", ""), OursStale},
		{"no hub object", nil, withOrigin("ns", "svc", "svc-uid"), Foreign},
		{"nothing at all", nil, nil, NotFound},
		{"our copy naming this hub", hub, fromHub("ns", "svc", "svc-uid", testHub), Ours},
		{"another hub's copy of the same name", hub, fromHub("ns", "svc", "svc-uid", "hub-b"), Foreign},
		{"another hub's stale copy", hub, fromHub("ns", "svc", "old-uid", "hub-b"), Foreign},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OwnershipOf(testHub, tc.hub, tc.member); got != tc.want {
				t.Errorf("OwnershipOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOwnershipString(t *testing.T) {
	for o, want := range map[Ownership]string{
		NotFound: "NotFound", Ours: "Ours", Foreign: "Foreign", OursStale: "OursStale", Ownership(42): "Unknown",
	} {
		if got := o.String(); got != want {
			t.Errorf("Ownership(%d).String() = %q, want %q", int(o), got, want)
		}
	}
}

// testHub is the hub name the tests build copies for.
const testHub = "hub-a"
