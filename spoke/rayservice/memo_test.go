package rayservice

import (
	"fmt"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

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

func TestWriteMemo(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := newWriteMemo(clk)
	if m.recent("k", "true") {
		t.Fatal("nothing written yet")
	}
	m.note("k", "true")
	for _, tc := range []struct {
		step  time.Duration
		value string
		want  bool
	}{
		{0, "true", true},
		{0, "false", false}, // another value is not covered by the memory
		{cacheLag - time.Second, "true", true},
		{time.Second, "true", false}, // expired: the cache is believed again
	} {
		clk.Step(tc.step)
		if got := m.recent("k", tc.value); got != tc.want {
			t.Errorf("after %v recent(k, %q) = %v, want %v", tc.step, tc.value, got, tc.want)
		}
	}
	for i := range sweepAt {
		m.note(fmt.Sprint("old", i), "v")
	}
	clk.Step(cacheLag)
	m.note("fresh", "v")
	if len(m.written) != 1 {
		t.Errorf("after a sweep %d entries remain, want 1", len(m.written))
	}
}
