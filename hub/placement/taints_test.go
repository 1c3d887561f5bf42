package placement

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPlanTaints(t *testing.T) {
	const (
		noSchedule = corev1.TaintEffectNoSchedule
		noExecute  = corev1.TaintEffectNoExecute
		prefer     = corev1.TaintEffectPreferNoSchedule
	)
	equal := func(key, value string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: effect}
	}
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	// plain has less room than the tainted member, so the tainted one wins whenever it qualifies.
	plain := member("plain", "cpu", "8")
	tests := []struct {
		name         string
		tainted      *memberWrapper
		tolerations  []corev1.Toleration
		current      []string
		want         []string
		wantRejected string
	}{
		{
			name: "NoSchedule keeps a new copy off", tainted: member("t", "cpu", "64").taint("gpu", "reserved", noSchedule),
			want: []string{"plain"}, wantRejected: "untolerated taint gpu=reserved:NoSchedule",
		},
		{
			name: "NoSchedule tolerated by key and value", tainted: member("t", "cpu", "64").taint("gpu", "reserved", noSchedule),
			tolerations: []corev1.Toleration{equal("gpu", "reserved", noSchedule)}, want: []string{"t"},
		},
		{
			name: "NoSchedule with another value is not tolerated", tainted: member("t", "cpu", "64").taint("gpu", "reserved", noSchedule),
			tolerations: []corev1.Toleration{equal("gpu", "shared", noSchedule)},
			want:        []string{"plain"}, wantRejected: "untolerated taint gpu=reserved:NoSchedule",
		},
		{
			name: "NoSchedule does not drain a member the RayService runs on", current: []string{"t"},
			tainted: member("t", "cpu", "64").taint("gpu", "reserved", noSchedule), want: []string{"t"},
		},
		{
			name: "NoExecute keeps a new copy off", tainted: member("t", "cpu", "64").taint("maintenance", "", noExecute),
			want: []string{"plain"}, wantRejected: "untolerated taint maintenance:NoExecute",
		},
		{
			name: "NoExecute drops a current member", current: []string{"t"},
			tainted: member("t", "cpu", "64").taint("maintenance", "", noExecute),
			want:    []string{"plain"}, wantRejected: "untolerated taint maintenance:NoExecute",
		},
		{
			name: "a toleration for another effect does not help", tainted: member("t", "cpu", "64").taint("maintenance", "", noExecute),
			tolerations: []corev1.Toleration{exists("maintenance", noSchedule)},
			want:        []string{"plain"}, wantRejected: "untolerated taint maintenance:NoExecute",
		},
		{
			name: "Exists with a key tolerates any value", tainted: member("t", "cpu", "64").taint("gpu", "anything", noExecute),
			tolerations: []corev1.Toleration{exists("gpu", "")}, want: []string{"t"},
		},
		{
			name: "Exists without a key tolerates every taint",
			tainted: member("t", "cpu", "64").taint("a", "1", noSchedule).taint("b", "2", noExecute).
				taint("c", "", prefer),
			tolerations: []corev1.Toleration{exists("", "")}, want: []string{"t"},
		},
		{
			name: "every taint must be tolerated", tainted: member("t", "cpu", "64").taint("a", "1", noSchedule).taint("b", "2", noSchedule),
			tolerations: []corev1.Toleration{equal("a", "1", noSchedule)},
			want:        []string{"plain"}, wantRejected: "untolerated taint b=2:NoSchedule",
		},
		{
			name: "PreferNoSchedule loses to a member of similar room", tainted: member("t", "cpu", "10").taint("spot", "", prefer),
			want: []string{"plain"},
		},
		{
			name: "PreferNoSchedule is no filter: far more room still wins", tainted: member("t", "cpu", "64").taint("spot", "", prefer),
			want: []string{"t"},
		},
		{
			name: "PreferNoSchedule tolerated costs nothing", tainted: member("t", "cpu", "10").taint("spot", "", prefer),
			tolerations: []corev1.Toleration{exists("spot", prefer)}, want: []string{"t"},
		},
		{
			name: "Gt compares numbers", tainted: member("t", "cpu", "64").taint("tier", "3", noSchedule),
			tolerations: []corev1.Toleration{{Key: "tier", Operator: corev1.TolerationOpGt, Value: "2", Effect: noSchedule}},
			want:        []string{"t"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(Input{Demand: rl("cpu", "2"), Members: members(plain, tt.tainted), Current: tt.current,
				Policy: Policy{Clusters: 1, Tolerations: tt.tolerations}})
			if !slices.Equal(got.Clusters, tt.want) || !got.Placed {
				t.Errorf("Plan() = %v (placed %t), want %v placed", got.Clusters, got.Placed, tt.want)
			}
			if got.Rejected["t"] != tt.wantRejected {
				t.Errorf("Rejected[t] = %q, want %q", got.Rejected["t"], tt.wantRejected)
			}
		})
	}
}

func TestPlanAcceleratorKinds(t *testing.T) {
	fleet := members(
		member("nvidia", "cpu", "64", "memory", "256Gi", "nvidia.com/gpu", "8"),
		member("amd", "cpu", "64", "memory", "256Gi", "amd.com/gpu", "8"),
		member("tpu", "cpu", "64", "memory", "256Gi", "google.com/tpu", "16"),
		member("mixed", "cpu", "16", "memory", "64Gi", "nvidia.com/gpu", "2", "amd.com/gpu", "2"),
		member("cpu-only", "cpu", "256", "memory", "1Ti"),
	)
	tests := []struct {
		name   string
		demand []string
		want   []string
	}{
		{name: "nvidia GPUs go where nvidia GPUs are", demand: []string{"cpu", "4", "nvidia.com/gpu", "4"}, want: []string{"nvidia"}},
		{name: "AMD GPUs are not NVIDIA GPUs", demand: []string{"cpu", "4", "amd.com/gpu", "4"}, want: []string{"amd"}},
		{name: "TPUs", demand: []string{"cpu", "4", "google.com/tpu", "8"}, want: []string{"tpu"}},
		{name: "both GPU kinds in one copy", demand: []string{"cpu", "4", "nvidia.com/gpu", "1", "amd.com/gpu", "1"}, want: []string{"mixed"}},
		{name: "CPU only: the most CPU and memory left", demand: []string{"cpu", "4", "memory", "8Gi"}, want: []string{"cpu-only"}},
		{name: "too many GPUs for anyone", demand: []string{"nvidia.com/gpu", "16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(Input{Demand: rl(tt.demand...), Members: fleet, Policy: BuiltInPolicy()})
			if !slices.Equal(got.Clusters, tt.want) || got.Placed != (len(tt.want) == 1) {
				t.Errorf("Plan() = %v (placed %t, %s), want %v", got.Clusters, got.Placed, got.Message, tt.want)
			}
		})
	}
}

func TestAcceleratorsOutweighCPU(t *testing.T) {
	// gpu-room has twice the GPUs left, cpu-room eight times the CPU: GPU room decides.
	fleet := members(
		member("gpu-room", "cpu", "12", "nvidia.com/gpu", "12"),
		member("cpu-room", "cpu", "68", "nvidia.com/gpu", "8"),
	)
	got := Plan(Input{Demand: rl("cpu", "4", "nvidia.com/gpu", "4"), Members: fleet, Policy: BuiltInPolicy()})
	if !slices.Equal(got.Clusters, []string{"gpu-room"}) {
		t.Errorf("Plan() = %v, want [gpu-room]", got.Clusters)
	}
}
