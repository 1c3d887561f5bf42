package demand

import (
	"math"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func group(replicas, minReplicas, maxReplicas *int32, hosts int32, suspend *bool) rayv1.WorkerGroupSpec {
	return rayv1.WorkerGroupSpec{
		GroupName: "g", Replicas: replicas, MinReplicas: minReplicas, MaxReplicas: maxReplicas,
		NumOfHosts: hosts, Suspend: suspend,
	}
}

func TestWorkerGroupReplicas(t *testing.T) {
	p := ptr.To[int32]
	tests := []struct {
		name  string
		group rayv1.WorkerGroupSpec
		want  int32
	}{
		{"replicas nil means minReplicas", group(nil, p(1), p(5), 1, nil), 1},
		{"within bounds", group(p(3), p(1), p(5), 1, nil), 3},
		{"above maxReplicas is clamped", group(p(6), p(1), p(5), 1, nil), 5},
		{"below minReplicas is raised", group(p(0), p(1), p(5), 1, nil), 1},
		{"suspended group wants nothing", group(p(3), p(5), p(1), 1, ptr.To(true)), 0},
		{"suspend false counts", group(p(3), p(1), p(5), 1, ptr.To(false)), 3},
		{"multi-host multiplies", group(p(5), p(1), p(5), 4, nil), 20},
		{"nil bounds: min 0, max unbounded", group(p(7), nil, nil, 1, nil), 7},
		{"nil everything is zero", group(nil, nil, nil, 1, nil), 0},
		{"inverted bounds: replicas above min is clamped to max", group(p(4), p(3), p(2), 1, nil), 2},
		{"inverted bounds: replicas below min is raised to min", group(p(1), p(3), p(2), 1, nil), 3},
		{"numOfHosts 0 means no Pods", group(p(3), p(1), p(5), 0, nil), 0},
		{"negative replicas is raised to min", group(p(-2), p(0), p(5), 1, nil), 0},
		{"overflow saturates", group(p(math.MaxInt32), p(0), nil, 4, nil), math.MaxInt32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorkerGroupReplicas(&tt.group); got != tt.want {
				t.Errorf("WorkerGroupReplicas() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestClusterWorkerCounts(t *testing.T) {
	p := ptr.To[int32]
	suspended := ptr.To(true)
	tests := []struct {
		name                 string
		groups               []rayv1.WorkerGroupSpec
		wantDesired, wantMin int32
		wantMax              int32
	}{
		{name: "no worker groups"},
		{
			name:        "one single-host group",
			groups:      []rayv1.WorkerGroupSpec{group(p(2), p(2), p(3), 1, nil)},
			wantDesired: 2, wantMin: 2, wantMax: 3,
		},
		{
			name:        "one group with four hosts",
			groups:      []rayv1.WorkerGroupSpec{group(p(2), p(2), p(3), 4, nil)},
			wantDesired: 8, wantMin: 8, wantMax: 12,
		},
		{
			name:        "single-host and two-host groups",
			groups:      []rayv1.WorkerGroupSpec{group(p(4), p(4), p(4), 1, nil), group(p(3), p(3), p(3), 2, nil)},
			wantDesired: 10, wantMin: 10, wantMax: 10,
		},
		{
			name:   "suspended groups count for nothing",
			groups: []rayv1.WorkerGroupSpec{group(p(3), p(3), p(3), 1, suspended), group(p(1), p(1), p(1), 1, suspended)},
		},
		{
			name:        "suspended group next to a running one",
			groups:      []rayv1.WorkerGroupSpec{group(p(3), p(3), p(3), 1, suspended), group(p(2), p(1), p(4), 1, nil)},
			wantDesired: 2, wantMin: 1, wantMax: 4,
		},
		{
			name:        "replicas below min and above max are clamped",
			groups:      []rayv1.WorkerGroupSpec{group(p(0), p(2), p(5), 1, nil), group(p(6), p(2), p(5), 1, nil)},
			wantDesired: 7, wantMin: 4, wantMax: 10,
		},
		{
			name:        "nil replicas in both groups",
			groups:      []rayv1.WorkerGroupSpec{group(nil, p(1), p(5), 1, nil), group(nil, p(2), p(5), 1, nil)},
			wantDesired: 3, wantMin: 3, wantMax: 10,
		},
		{
			name:        "max with default maxReplicas and four hosts saturates",
			groups:      []rayv1.WorkerGroupSpec{group(p(1), p(3), p(math.MaxInt32), 4, nil)},
			wantDesired: 12, wantMin: 12, wantMax: math.MaxInt32,
		},
		{
			name:        "max of missing maxReplicas saturates",
			groups:      []rayv1.WorkerGroupSpec{group(p(1), p(1), nil, 1000, nil)},
			wantDesired: 1000, wantMin: 1000, wantMax: math.MaxInt32,
		},
		{
			name: "sum of groups saturates",
			groups: []rayv1.WorkerGroupSpec{
				group(p(1), p(1), p(1500000000), 2, nil), group(p(1), p(1), p(1000000000), 1, nil),
			},
			wantDesired: 3, wantMin: 3, wantMax: math.MaxInt32,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &rayv1.RayClusterSpec{WorkerGroupSpecs: tt.groups}
			if got := DesiredWorkers(spec); got != tt.wantDesired {
				t.Errorf("DesiredWorkers() = %d, want %d", got, tt.wantDesired)
			}
			if got := MinWorkers(spec); got != tt.wantMin {
				t.Errorf("MinWorkers() = %d, want %d", got, tt.wantMin)
			}
			if got := MaxWorkers(spec); got != tt.wantMax {
				t.Errorf("MaxWorkers() = %d, want %d", got, tt.wantMax)
			}
		})
	}
}

func TestWorkerCountsFromBuilder(t *testing.T) {
	rc := raybuilder.MakeRayCluster("x", "ns").
		WorkerGroup("small", 2, 1, 3).
		WorkerGroup("tpu", 1, 1, 2).NumOfHosts("tpu", 4).
		WorkerGroup("off", 5, 5, 5).GroupSuspend("off", true).
		Obj()
	if got, want := DesiredWorkers(&rc.Spec), int32(2+4); got != want {
		t.Errorf("DesiredWorkers() = %d, want %d", got, want)
	}
	if got, want := MinWorkers(&rc.Spec), int32(1+4); got != want {
		t.Errorf("MinWorkers() = %d, want %d", got, want)
	}
	if got, want := MaxWorkers(&rc.Spec), int32(3+8); got != want {
		t.Errorf("MaxWorkers() = %d, want %d", got, want)
	}
}
