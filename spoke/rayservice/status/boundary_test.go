package status

import (
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
)

func TestBoundaryConditions(t *testing.T) {
	base := raybuilder.MakeRayService("svc", "ns")
	forbiddenCluster := fixture.Cluster(base.Obj(), "svc-p")
	forbiddenCluster.Status.Conditions = []metav1.Condition{{Type: "PodsForbidden", Status: metav1.ConditionTrue,
		Reason: "PodSecurityViolation", Message: `worker group w violates PodSecurity "baseline": privileged`}}
	clean := fixture.Cluster(base.Obj(), "svc-a")
	raised := base.Obj()
	raised.Status.Conditions = []metav1.Condition{
		{Type: "PodsForbidden", Status: metav1.ConditionTrue, Reason: "PodSecurityViolation", Message: "old"},
		{Type: "OwnershipConflict", Status: metav1.ConditionTrue, Reason: "NotControlled", Message: "old"},
	}

	tests := []struct {
		name string
		rs   *rayv1.RayService
		obs  Observed
		// wantForbidden and wantConflict are substrings of the conditions' messages; "" means absent.
		wantForbidden, wantConflict string
	}{
		{name: "nothing to say", rs: base.Obj(), obs: Observed{Active: clean, Conflicts: []string{}}},
		{
			name: "a cluster's refused Pods", rs: base.Obj(), obs: Observed{Pending: forbiddenCluster},
			wantForbidden: `RayCluster svc-p: worker group w violates PodSecurity "baseline": privileged`,
		},
		{
			name: "a foreign Service", rs: base.Obj(),
			obs:          Observed{Conflicts: []string{`Service ns/web is controlled by Deployment web, not by this RayService`}},
			wantConflict: "Service ns/web is controlled by Deployment web",
		},
		{name: "both resolved", rs: raised, obs: Observed{Active: clean, Conflicts: []string{}}},
		{
			name: "conflicts not looked at this time are kept", rs: raised, obs: Observed{Active: clean},
			wantConflict: "old",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := Compute(tt.rs, tt.obs, false, now)
			for typ, want := range map[string]string{"PodsForbidden": tt.wantForbidden, "OwnershipConflict": tt.wantConflict} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				switch {
				case want == "" && c != nil:
					t.Errorf("%s = %+v, want none", typ, c)
				case want != "" && (c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, want)):
					t.Errorf("%s = %+v, want True naming %q", typ, c, want)
				}
			}
			ready := meta.FindStatusCondition(st.Conditions, string(rayv1.RayServiceReady))
			if tt.wantForbidden != "" && !strings.Contains(ready.Message, tt.wantForbidden) {
				t.Errorf("Ready message %q leaves out the refused Pods: the hub shows it", ready.Message)
			}
		})
	}
}
