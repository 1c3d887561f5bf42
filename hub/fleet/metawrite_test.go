package fleet

import (
	"encoding/json"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// TestStatusMergePatchIsMergeFrom checks the status-only patch against controller-runtime's
// MergeFrom of the whole objects, which it replaces: the same patch for objects that differ
// in their status only.
func TestStatusMergePatchIsMergeFrom(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: at}
	hub := &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc", Labels: map[string]string{"a": "b"}, ResourceVersion: "7"},
		Spec:       rayv1.RayServiceSpec{ServeConfigV2: "applications: []"},
		Status:     rayv1.RayServiceStatuses{ServiceStatus: rayv1.NotRunning, Conditions: []metav1.Condition{ready}},
	}
	binding := &fleetv1alpha1.RayServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc"},
		Spec:       fleetv1alpha1.RayServiceBindingSpec{Clusters: []string{"m1", "m2"}},
		Status: fleetv1alpha1.RayServiceBindingStatus{
			Clusters: []fleetv1alpha1.ClusterStatus{{Name: "m1"}, {Name: "m2"}},
		},
	}
	tests := []struct {
		name string
		// base and next are objects differing in their status only.
		base, next client.Object
	}{
		{
			name: "RayService: a field changed, a condition added",
			base: hub,
			next: func() client.Object {
				n := hub.DeepCopy()
				n.Status.ServiceStatus = rayv1.Running
				n.Status.Conditions = append(n.Status.Conditions, metav1.Condition{Type: "UpgradeInProgress", Status: metav1.ConditionFalse, Reason: "None", LastTransitionTime: at})
				return n
			}(),
		},
		{
			name: "RayService: conditions emptied, a field cleared",
			base: hub,
			next: func() client.Object {
				n := hub.DeepCopy()
				n.Status = rayv1.RayServiceStatuses{}
				return n
			}(),
		},
		{
			name: "RayService: nothing changed",
			base: hub,
			next: hub.DeepCopy(),
		},
		{
			name: "binding: a cluster left",
			base: binding,
			next: func() client.Object {
				n := binding.DeepCopy()
				n.Status.Clusters = n.Status.Clusters[:1]
				return n
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := client.MergeFrom(tt.base).Data(tt.next)
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			switch base := tt.base.(type) {
			case *rayv1.RayService:
				got, err = statusMergePatch(&base.Status, &tt.next.(*rayv1.RayService).Status)
			case *fleetv1alpha1.RayServiceBinding:
				got, err = statusMergePatch(&base.Status, &tt.next.(*fleetv1alpha1.RayServiceBinding).Status)
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &wantV); err != nil {
				t.Fatal(err)
			}
			gotJSON, _ := json.Marshal(gotV)
			wantJSON, _ := json.Marshal(wantV)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("status patch %s, MergeFrom's %s", gotJSON, wantJSON)
			}
		})
	}
}
