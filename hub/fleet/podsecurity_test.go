package fleet

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestPodSecurityCondition(t *testing.T) {
	hub := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "rs", Generation: 4}}
	mc := func(name, level string, unenforced ...fleetv1alpha1.UnenforcedNamespace) *fleetv1alpha1.MemberCluster {
		return &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: fleetv1alpha1.MemberClusterStatus{PodSecurityLevel: level, UnenforcedNamespaces: unenforced}}
	}
	team := fleetv1alpha1.UnenforcedNamespace{Name: "team", Violations: []string{"head-x: privileged", "worker-y: hostPath volumes"}}
	other := fleetv1alpha1.UnenforcedNamespace{Name: "other", Violations: []string{"p: privileged"}}
	mcs := map[string]*fleetv1alpha1.MemberCluster{
		"eu": mc("eu", "", team), "us": mc("us", "restricted", team, other), "ap": mc("ap", "baseline", other),
	}
	tests := []struct {
		name    string
		placed  []string
		wantMsg string // "" for no condition
	}{
		{name: "placed where its namespace is enforced", placed: []string{"ap"}},
		{name: "placed nowhere", placed: nil},
		{name: "placed on a member that left", placed: []string{"gone"}},
		{
			name:   "every member holding its namespace unlabelled, by name",
			placed: []string{"us", "ap", "eu"},
			wantMsg: "namespace team is not labelled pod-security.kubernetes.io/enforce, Pods running there break the member's level " +
				"(nothing was moved or deleted): cluster eu (level baseline): head-x: privileged; worker-y: hostPath volumes; " +
				"cluster us (level restricted): head-x: privileged; worker-y: hostPath volumes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := podSecurityCondition(hub, tt.placed, mcs)
			if tt.wantMsg == "" {
				if c != nil {
					t.Errorf("condition = %+v, want none", c)
				}
				return
			}
			if c == nil {
				t.Fatalf("no condition, want %q", tt.wantMsg)
			}
			if c.Type != fleetv1alpha1.ConditionPodSecurityEnforced || c.Status != metav1.ConditionFalse ||
				c.Reason != fleetv1alpha1.ReasonPodsViolateLevel || c.ObservedGeneration != 4 || c.Message != tt.wantMsg {
				t.Errorf("condition = %+v, want False/%s, generation 4, message %q", c, fleetv1alpha1.ReasonPodsViolateLevel, tt.wantMsg)
			}
		})
	}
}
