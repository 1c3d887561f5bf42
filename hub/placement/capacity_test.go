package placement

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func TestBoundCapacity(t *testing.T) {
	tests := []struct {
		name             string
		reported, limits corev1.ResourceList
		want             corev1.ResourceList
	}{
		{name: "no limits: as reported", reported: rl("cpu", "8", "nvidia.com/gpu", "4"),
			want: rl("cpu", "8", "nvidia.com/gpu", "4")},
		{name: "over the limit: the limit", reported: rl("cpu", "8", "nvidia.com/gpu", "10000"),
			limits: rl("nvidia.com/gpu", "8"), want: rl("cpu", "8", "nvidia.com/gpu", "8")},
		{name: "within the limit: as reported", reported: rl("memory", "16Gi"), limits: rl("memory", "64Gi"),
			want: rl("memory", "16Gi")},
		{name: "units compared as quantities", reported: rl("memory", "2Gi"), limits: rl("memory", "1000Mi"),
			want: rl("memory", "1000Mi")},
		{name: "a limit on a resource not reported adds none", reported: rl("cpu", "8"),
			limits: rl("nvidia.com/gpu", "8"), want: rl("cpu", "8")},
		{name: "a zero limit: none", reported: rl("nvidia.com/gpu", "4"), limits: rl("nvidia.com/gpu", "0"),
			want: rl("nvidia.com/gpu", "0")},
		{name: "nothing reported", limits: rl("cpu", "8"), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.reported.DeepCopy()
			got := BoundCapacity(tt.reported, tt.limits)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("BoundCapacity = %v, want %v", got, tt.want)
			}
			if !equality.Semantic.DeepEqual(tt.reported, before) {
				t.Errorf("reported modified: %v, was %v", tt.reported, before)
			}
		})
	}
}

// A member inflating its free GPUs wins placement by room left; bounded by its limit, the
// honest member with more real room wins.
func TestPlanWithBoundedCapacity(t *testing.T) {
	demand := rl("cpu", "4", "nvidia.com/gpu", "1")
	inflating := rl("cpu", "64", "nvidia.com/gpu", "10000")
	honest := member("honest", "cpu", "64", "nvidia.com/gpu", "16").obj()
	tests := []struct {
		name   string
		limits corev1.ResourceList
		want   string
	}{
		{name: "unbounded: the inflated report wins", want: "inflating"},
		{name: "bounded: the honest member wins", limits: rl("nvidia.com/gpu", "8"), want: "honest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Member{Name: "inflating", Ready: true, Free: BoundCapacity(inflating, tt.limits)}
			got := Plan(Input{Demand: demand, Policy: BuiltInPolicy(), Members: []Member{m, honest}})
			if len(got.Clusters) != 1 || got.Clusters[0] != tt.want {
				t.Errorf("Plan chose %v, want [%s] (%s)", got.Clusters, tt.want, got.Message)
			}
		})
	}
}
