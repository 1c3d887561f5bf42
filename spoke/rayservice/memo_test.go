package rayservice

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
)

func TestStatusMemo(t *testing.T) {
	written := fixture.MakeRayService("svc", "ns").Pending("svc-new").Obj()
	stale := fixture.MakeRayService("svc", "ns").Obj()
	recreated := stale.DeepCopy()
	recreated.UID = "other"
	tests := []struct {
		name        string
		read        *rayv1.RayService
		wantPending string
		wantKept    bool
	}{
		{"stale cache gets the written status", stale, "svc-new", true},
		{"cache caught up: memory dropped", written, "svc-new", false},
		{"another object of the same name", recreated, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newStatusMemo()
			m.remember(written)
			rs := tt.read.DeepCopy()
			m.apply(rs)
			if rs.Status.PendingServiceStatus.RayClusterName != tt.wantPending {
				t.Errorf("pending = %q", rs.Status.PendingServiceStatus.RayClusterName)
			}
			if _, kept := m.written[types.NamespacedName{Namespace: "ns", Name: "svc"}]; kept != tt.wantKept {
				t.Errorf("kept = %v", kept)
			}
		})
	}
}
