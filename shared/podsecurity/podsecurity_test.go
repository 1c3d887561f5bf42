package podsecurity

import (
	"slices"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// restrictedContext is a container securityContext that passes the restricted level.
func restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// restrictedService is a RayService whose head and one worker group pass restricted.
func restrictedService() *rayv1.RayService {
	rs := raybuilder.MakeRayService("rs", "ns").Obj()
	spec := &rs.Spec.RayClusterSpec
	spec.WorkerGroupSpecs[0].GroupName = "cpu"
	for _, t := range []*corev1.PodTemplateSpec{&spec.HeadGroupSpec.Template, &spec.WorkerGroupSpecs[0].Template} {
		for i := range t.Spec.Containers {
			t.Spec.Containers[i].SecurityContext = restrictedContext()
		}
	}
	return rs
}

func TestNeedOf(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(rs *rayv1.RayService)
		wantLevel string
		// wantBreaks are substrings of Breaks per level; Breaks holds exactly the levels
		// stricter than wantLevel.
		wantBreaks map[string]string
	}{
		{name: "restricted templates", wantLevel: Restricted},
		{
			name: "default securityContext is baseline",
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].SecurityContext = nil
			},
			wantLevel:  Baseline,
			wantBreaks: map[string]string{Restricted: "workerGroupSpecs[cpu]: allowPrivilegeEscalation != false"},
		},
		{
			name: "privileged head",
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
			},
			wantLevel:  Privileged,
			wantBreaks: map[string]string{Baseline: "headGroupSpec: privileged", Restricted: "headGroupSpec: privileged"},
		},
		{
			name: "unconfined seccomp, spc_t and an unsafe sysctl",
			edit: func(rs *rayv1.RayService) {
				s := &rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
				s.SecurityContext = &corev1.PodSecurityContext{
					SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"},
					Sysctls:        []corev1.Sysctl{{Name: "kernel.msgmax", Value: "1"}},
				}
				s.Containers[0].SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
			},
			wantLevel:  Privileged,
			wantBreaks: map[string]string{Baseline: "forbidden sysctls (kernel.msgmax)"},
		},
		{
			name: "AppArmor annotation on a worker",
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Annotations = map[string]string{
					corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "ray-worker": "unconfined"}
			},
			wantLevel:  Privileged,
			wantBreaks: map[string]string{Baseline: "workerGroupSpecs[cpu]: forbidden AppArmor profile"},
		},
		{
			name: "hostPath volume in a worker",
			edit: func(rs *rayv1.RayService) {
				s := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec
				s.Volumes = append(s.Volumes, corev1.Volume{Name: "host",
					VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
			},
			wantLevel:  Privileged,
			wantBreaks: map[string]string{Baseline: "workerGroupSpecs[cpu]: hostPath volumes"},
		},
		{
			name: "autoscaler sidecar without a securityContext",
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
			},
			wantLevel:  Baseline,
			wantBreaks: map[string]string{Restricted: `headGroupSpec: allowPrivilegeEscalation != false (container "autoscaler"`},
		},
		{
			name: "privileged autoscaler",
			edit: func(rs *rayv1.RayService) {
				sc := restrictedContext()
				sc.Privileged = ptr.To(true)
				rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
				rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: sc}
			},
			wantLevel:  Privileged,
			wantBreaks: map[string]string{Baseline: `privileged (container "autoscaler"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := restrictedService()
			if tt.edit != nil {
				tt.edit(rs)
			}
			got := NeedOf(rs)
			if got.Level != tt.wantLevel {
				t.Errorf("Level = %q, want %q (breaks %q)", got.Level, tt.wantLevel, got.Breaks)
			}
			for _, level := range Levels() {
				stricter := slices.Index(Levels(), level) > slices.Index(Levels(), tt.wantLevel)
				if _, broken := got.Breaks[level]; broken != stricter {
					t.Errorf("Breaks[%s] present = %t, want %t (breaks %q)", level, broken, stricter, got.Breaks)
				}
			}
			for level, want := range tt.wantBreaks {
				if !strings.Contains(got.Breaks[level], want) {
					t.Errorf("Breaks[%s] = %q, want it to contain %q", level, got.Breaks[level], want)
				}
			}
		})
	}
}

func TestNeedOfNil(t *testing.T) {
	if got := NeedOf(nil); got.Level != Restricted || len(got.Breaks) != 0 {
		t.Errorf("NeedOf(nil) = %+v, want Restricted with no breaks", got)
	}
}

func TestAllows(t *testing.T) {
	tests := []struct {
		enforced, needed string
		want             bool
	}{
		{Privileged, Privileged, true},
		{Privileged, Restricted, true},
		{Baseline, Privileged, false},
		{Baseline, Baseline, true},
		{Baseline, Restricted, true},
		{Restricted, Baseline, false},
		{Restricted, Restricted, true},
		{"strict", Restricted, false},
		{Baseline, "", false},
		{Privileged, "", true},
	}
	for _, tt := range tests {
		if got := Allows(tt.enforced, tt.needed); got != tt.want {
			t.Errorf("Allows(%q, %q) = %t, want %t", tt.enforced, tt.needed, got, tt.want)
		}
	}
}
