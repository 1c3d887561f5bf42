package aggregate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// t0 is the tests' "now"; sub-second parts are cut as the API server would.
var t0 = metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 500_000_000, time.UTC))

// t0s is t0 as stored.
var t0s = metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))

// memberRS is a member copy at generation gen, observed up to observed, with the hub's hash.
func memberRS(hash string, gen, observed int64) *rayv1.RayService {
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	rs.Generation = gen
	if hash != "" {
		rs.Annotations = map[string]string{labels.SpecHash: hash}
	}
	rs.Status = rayv1.RayServiceStatuses{
		ObservedGeneration: observed,
		ServiceStatus:      rayv1.Running,
		NumServeEndpoints:  3,
		Conditions: []metav1.Condition{
			{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: string(rayv1.NonZeroServeEndpoints),
				Message: "Number of serve endpoints is greater than 0", ObservedGeneration: observed, LastTransitionTime: t0s},
		},
		ActiveServiceStatus: rayv1.RayServiceStatus{
			RayClusterName: "svc-a",
			Applications:   map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}},
		},
		PendingServiceStatus: rayv1.RayServiceStatus{
			RayClusterName: "svc-b",
			Applications:   map[string]rayv1.AppStatus{"fruit": {Status: "DEPLOYING"}},
		},
	}
	return rs
}

func TestClusterStatusOf(t *testing.T) {
	full := func(hash string, observed int64) fleetv1alpha1.ClusterStatus {
		return fleetv1alpha1.ClusterStatus{
			Name: "m1", SpecHash: hash, ObservedGeneration: observed,
			Conditions:    memberRS("h1", 1, observed).Status.Conditions,
			ServiceStatus: rayv1.Running, ActiveRayCluster: "svc-a", PendingRayCluster: "svc-b",
			NumServeEndpoints: 3,
			Applications:      map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}},
			LastSeenTime:      &t0s,
		}
	}
	tests := []struct {
		name        string
		member      *rayv1.RayService
		appliedHash string
		want        fleetv1alpha1.ClusterStatus
	}{
		{
			name: "no copy on the member: name only, never seen",
			want: fleetv1alpha1.ClusterStatus{Name: "m1"},
		},
		{
			name:   "current copy: status copied, active applications only, hash recorded",
			member: memberRS("h1", 2, 2), appliedHash: "h1",
			want: full("h1", 2),
		},
		{
			name:   "member observed a later generation than cached: still current",
			member: memberRS("h1", 2, 3), appliedHash: "h1",
			want: full("h1", 3),
		},
		{
			name:   "spoke has not observed the copy's generation: no hash",
			member: memberRS("h1", 3, 2), appliedHash: "h1",
			want: full("", 2),
		},
		{
			name:   "copy carries an older hash than applied: no hash",
			member: memberRS("h0", 2, 2), appliedHash: "h1",
			want: full("", 2),
		},
		{
			name:   "applied hash unknown: the copy's hash is trusted once observed",
			member: memberRS("h1", 2, 2),
			want:   full("h1", 2),
		},
		{
			name:   "copy without the hub's annotation: no hash",
			member: memberRS("", 2, 2), appliedHash: "h1",
			want: full("", 2),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClusterStatusOf("m1", tt.member, tt.appliedHash, t0)
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("ClusterStatusOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestClusterStatusOfDoesNotShareMemory(t *testing.T) {
	member := memberRS("h1", 1, 1)
	got := ClusterStatusOf("m1", member, "h1", t0)
	got.Conditions[0].Status = metav1.ConditionFalse
	got.Applications["fruit"] = rayv1.AppStatus{Status: "UNHEALTHY"}
	if member.Status.Conditions[0].Status != metav1.ConditionTrue {
		t.Error("changing the entry's conditions changed the member's")
	}
	if member.Status.ActiveServiceStatus.Applications["fruit"].Status != "RUNNING" {
		t.Error("changing the entry's applications changed the member's")
	}
}
