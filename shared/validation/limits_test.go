package validation

import (
	"math"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
)

func TestMaxServeEndpoints(t *testing.T) {
	group := func(replicas, minReplicas, maxReplicas, hosts int32, suspend bool) rayv1.WorkerGroupSpec {
		return rayv1.WorkerGroupSpec{Replicas: ptr.To(replicas), MinReplicas: ptr.To(minReplicas), MaxReplicas: ptr.To(maxReplicas),
			NumOfHosts: hosts, Suspend: ptr.To(suspend)}
	}
	tests := []struct {
		name   string
		groups []rayv1.WorkerGroupSpec
		want   int32
	}{
		{name: "a head alone", want: 1},
		{name: "a group may scale to maxReplicas", groups: []rayv1.WorkerGroupSpec{group(2, 1, 5, 1, false)}, want: 6},
		{name: "multi-host groups count every host", groups: []rayv1.WorkerGroupSpec{group(2, 0, 3, 4, false)}, want: 13},
		{name: "replicas above maxReplicas still count", groups: []rayv1.WorkerGroupSpec{{Replicas: ptr.To[int32](7)}}, want: 8},
		{name: "suspended groups have none", groups: []rayv1.WorkerGroupSpec{group(2, 1, 5, 1, true), group(1, 1, 1, 1, false)}, want: 2},
		{name: "huge groups are clamped, not overflowed", groups: []rayv1.WorkerGroupSpec{
			group(math.MaxInt32, 0, math.MaxInt32, math.MaxInt32, false), group(math.MaxInt32, 0, math.MaxInt32, math.MaxInt32, false),
		}, want: 2*MaxWorkerPods + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxServeEndpoints(&rayv1.RayClusterSpec{WorkerGroupSpecs: tt.groups}); got != tt.want {
				t.Errorf("MaxServeEndpoints = %d, want %d", got, tt.want)
			}
		})
	}
}
