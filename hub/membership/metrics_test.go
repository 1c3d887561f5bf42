package membership

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestCapacityMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	status := func(c *fleetv1alpha1.ClusterCapacity) *fleetv1alpha1.MemberClusterStatus {
		return &fleetv1alpha1.MemberClusterStatus{Capacity: c}
	}
	names := []string{"rayfleet_member_capacity_allocatable", "rayfleet_member_capacity_free"}
	header := `# HELP rayfleet_member_capacity_allocatable The member's allocatable resources from its ClusterReport (schedulable, Ready Nodes), by resource, in its base unit (cores, bytes, devices).
# TYPE rayfleet_member_capacity_allocatable gauge
`
	freeHeader := `# HELP rayfleet_member_capacity_free The member's allocatable resources minus the requests of its running Pods, from its ClusterReport, by resource, in its base unit.
# TYPE rayfleet_member_capacity_free gauge
`
	steps := []struct {
		name   string
		member string
		st     *fleetv1alpha1.MemberClusterStatus
		forget bool
		want   string
	}{
		{
			name: "cpu, memory and GPUs in base units", member: "eu",
			st: status(&fleetv1alpha1.ClusterCapacity{
				Allocatable: list("cpu", "1500m", "memory", "2Gi", "nvidia.com/gpu", "4"),
				Free:        list("cpu", "500m", "memory", "1Gi", "nvidia.com/gpu", "4"),
			}),
			want: header + `rayfleet_member_capacity_allocatable{member="eu",resource="cpu"} 1.5
rayfleet_member_capacity_allocatable{member="eu",resource="memory"} 2.147483648e+09
rayfleet_member_capacity_allocatable{member="eu",resource="nvidia.com/gpu"} 4
` + freeHeader + `rayfleet_member_capacity_free{member="eu",resource="cpu"} 0.5
rayfleet_member_capacity_free{member="eu",resource="memory"} 1.073741824e+09
rayfleet_member_capacity_free{member="eu",resource="nvidia.com/gpu"} 4
`,
		},
		{
			name: "a resource no longer reported loses its series", member: "eu",
			st: status(&fleetv1alpha1.ClusterCapacity{Allocatable: list("cpu", "2"), Free: list("cpu", "1")}),
			want: header + `rayfleet_member_capacity_allocatable{member="eu",resource="cpu"} 2
` + freeHeader + `rayfleet_member_capacity_free{member="eu",resource="cpu"} 1
`,
		},
		{
			name: "a free value without an allocatable one", member: "eu",
			st: status(&fleetv1alpha1.ClusterCapacity{Free: list("cpu", "1")}),
			want: freeHeader + `rayfleet_member_capacity_free{member="eu",resource="cpu"} 1
`,
		},
		{name: "no capacity reported", member: "eu", st: status(nil), want: ""},
		{
			name: "forgotten member", member: "us", forget: true,
			st: status(&fleetv1alpha1.ClusterCapacity{Allocatable: list("cpu", "2"), Free: list("cpu", "1")}),
		},
	}
	for _, s := range steps {
		m.observe(s.member, s.st, t0)
		if s.forget {
			m.forget(s.member)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(s.want), names...); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}
