package podsecurity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func pod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-worker", Image: "rayproject/ray"}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

// restrictedPod is compliant with restricted: every field the seven restricted checks read.
func restrictedPod(p *corev1.Pod) {
	p.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name  string
		level string
		pod   *corev1.Pod
		// want are the checks that fail, and a field each must name; nil means allowed.
		want map[string]string
	}{
		{name: "plain Pod at baseline", level: LevelBaseline, pod: pod()},
		{
			name: "privileged container", level: LevelBaseline,
			pod: pod(func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}),
			want: map[string]string{"privileged": "securityContext.privileged=true"},
		},
		{
			name: "hostPath volume", level: LevelBaseline,
			pod: pod(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			}),
			want: map[string]string{"hostPath volumes": `"root"`},
		},
		{
			name: "the issue's four fields", level: LevelBaseline,
			pod: pod(func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{
					SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
					SELinuxOptions:  &corev1.SELinuxOptions{Type: "spc_t"},
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
					Sysctls:         []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}},
				}
			}),
			want: map[string]string{
				"seccompProfile": "Unconfined", "seLinuxOptions": "spc_t",
				"forbidden AppArmor profile": "Unconfined", "forbidden sysctls": "kernel.msgmax",
			},
		},
		{
			name: "host probe", level: LevelBaseline,
			pod: pod(func(p *corev1.Pod) {
				p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1"}}}
			}),
			want: map[string]string{"probe or lifecycle host": "10.0.0.1"},
		},
		{
			name: "plain Pod at restricted", level: LevelRestricted, pod: pod(),
			want: map[string]string{
				"allowPrivilegeEscalation != false": "ray-worker", "unrestricted capabilities": "ray-worker",
				"runAsNonRoot != true": "runAsNonRoot=true", "seccompProfile": "RuntimeDefault",
			},
		},
		{name: "compliant Pod at restricted", level: LevelRestricted, pod: pod(restrictedPod)},
		{
			name: "privileged level checks nothing", level: LevelPrivileged,
			pod: pod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.level)
			if err != nil {
				t.Fatal(err)
			}
			v := c.Check(tt.pod)
			if v.Level != tt.level {
				t.Errorf("Level = %q, want %q", v.Level, tt.level)
			}
			got := map[string]string{}
			for _, f := range v.Failures {
				got[f.Check] = f.String()
			}
			if len(got) != len(tt.want) {
				t.Errorf("failed checks %v, want %v", got, tt.want)
			}
			for check, field := range tt.want {
				if !strings.Contains(got[check], field) {
					t.Errorf("check %q: got %q, want it to name %q", check, got[check], field)
				}
				if !strings.Contains(v.String(), got[check]) {
					t.Errorf("message %q leaves out %q", v.String(), got[check])
				}
			}
			if v.Forbidden() != (len(tt.want) > 0) {
				t.Errorf("Forbidden = %v with failures %v", v.Forbidden(), got)
			}
		})
	}
}

func TestNilCheckerAllows(t *testing.T) {
	var c *Checker
	if v := c.Check(pod(func(p *corev1.Pod) { p.Spec.HostPID = true })); v.Forbidden() || v.String() != "" {
		t.Errorf("nil Checker forbids: %v", v)
	}
	if c.Level() != LevelPrivileged {
		t.Errorf("Level = %q, want privileged", c.Level())
	}
}

func TestNewRejectsUnknownLevel(t *testing.T) {
	if _, err := New("strict"); err == nil {
		t.Error("New(strict) succeeded")
	}
}
