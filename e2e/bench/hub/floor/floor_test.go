package floor

import (
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestBindingStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Name: "rs", Generation: 1}}
	clusters := []fleetv1alpha1.ClusterStatus{{Name: "sim-001"}, {Name: "sim-002"}}
	hubConditions := []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse,
		Reason: "ClustersNotReady", Message: "0/2 clusters ready"}}
	got := bindingStatus(b, clusters, hubConditions, "rs-abc", []string{"sim-001", "sim-002"}, now)

	if got.ObservedGeneration != 1 || len(got.Clusters) != 2 {
		t.Errorf("observedGeneration %d, %d clusters; want 1 and 2", got.ObservedGeneration, len(got.Clusters))
	}
	if got.Rollout == nil || got.Rollout.TargetRevision != "rs-abc" || got.Rollout.Phase != fleetv1alpha1.RolloutProgressing {
		t.Errorf("rollout %+v, want revision rs-abc progressing", got.Rollout)
	}
	for _, tc := range []struct {
		condition string
		status    metav1.ConditionStatus
		reason    string
	}{
		{fleetv1alpha1.ConditionPlaced, metav1.ConditionTrue, fleetv1alpha1.ReasonClustersChosen},
		{fleetv1alpha1.ConditionPropagated, metav1.ConditionTrue, fleetv1alpha1.ReasonApplied},
		{fleetv1alpha1.ConditionReady, metav1.ConditionFalse, "ClustersNotReady"},
	} {
		c := meta.FindStatusCondition(got.Conditions, tc.condition)
		if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 1 || !c.LastTransitionTime.Equal(&now) {
			t.Errorf("condition %s = %+v, want %s %s at generation 1", tc.condition, c, tc.status, tc.reason)
		}
	}
	if b.Status.Rollout != nil || len(b.Status.Conditions) != 0 {
		t.Errorf("bindingStatus modified the binding: %+v", b.Status)
	}
}

func TestApplyConfiguration(t *testing.T) {
	desired := &rayv1.RayService{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayService"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "sim-001-bench", Name: "rs", Labels: map[string]string{"a": "b"}},
	}
	u, err := propagation.ApplyConfiguration(desired)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := u.Object["status"]; ok {
		t.Error("the apply configuration has a status")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); found {
		t.Error("the apply configuration has a creationTimestamp")
	}
	if u.GetNamespace() != "sim-001-bench" || u.GetLabels()["a"] != "b" || u.GetKind() != "RayService" {
		t.Errorf("apply configuration lost the object's identity: %v", u.Object)
	}
}
