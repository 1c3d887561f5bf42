package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestOutcome(t *testing.T) {
	const noGrant = "namespace ns has no NamespaceGrant"
	tests := []struct {
		name       string
		d          Decision
		notGranted string
		wantResult string
		wantCond   metav1.Condition
	}{{
		name:       "as many members as asked for",
		d:          Decision{Clusters: []string{"a", "b"}, Placed: true, Message: "2/2 clusters chosen"},
		wantResult: ResultPlaced,
		wantCond:   metav1.Condition{Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonClustersChosen, Message: "2/2 clusters chosen"},
	}, {
		name:       "fewer than asked for",
		d:          Decision{Clusters: []string{"a"}, Message: "1/2 clusters chosen; b: not ready"},
		wantResult: ResultPartial,
		wantCond: metav1.Condition{Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonInsufficientClusters,
			Message: "1/2 clusters chosen; b: not ready"},
	}, {
		name:       "none",
		d:          Decision{Message: "0/1 clusters chosen; a: not ready"},
		wantResult: ResultNone,
		wantCond: metav1.Condition{Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonNoClusterFits,
			Message: "0/1 clusters chosen; a: not ready"},
	}, {
		name:       "none, the namespace granted no member: that is why",
		d:          Decision{Message: "0/1 clusters chosen; a: not granted"},
		notGranted: noGrant,
		wantResult: ResultNone,
		wantCond:   metav1.Condition{Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonNotGranted, Message: noGrant},
	}, {
		name:       "some chosen though no grant (members placed before grants were required): the plan's word stands",
		d:          Decision{Clusters: []string{"a"}, Message: "1/2 clusters chosen"},
		notGranted: noGrant,
		wantResult: ResultPartial,
		wantCond: metav1.Condition{Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonInsufficientClusters,
			Message: "1/2 clusters chosen"},
	}, {
		name:       "all chosen though no grant",
		d:          Decision{Clusters: []string{"a"}, Placed: true, Message: "1/1 clusters chosen"},
		notGranted: noGrant,
		wantResult: ResultPlaced,
		wantCond:   metav1.Condition{Status: metav1.ConditionTrue, Reason: fleetv1alpha1.ReasonClustersChosen, Message: "1/1 clusters chosen"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result, cond := Outcome(tt.d, tt.notGranted)
			if result != tt.wantResult {
				t.Errorf("result = %q, want %q", result, tt.wantResult)
			}
			if diff := cmp.Diff(tt.wantCond, cond); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResultValues pins the result label's values: dashboards and alerts select on them.
func TestResultValues(t *testing.T) {
	got := []string{ResultPlaced, ResultPartial, ResultNone, ResultPolicyNotFound, ResultPolicyInvalid, ResultReservationMisfit}
	want := []string{"placed", "partial", "none", "policy_not_found", "policy_invalid", "reservation_misfit"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result labels (-want +got):\n%s", diff)
	}
}
