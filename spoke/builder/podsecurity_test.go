package builder

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/spoke/podsecurity"
)

// hardenPodLevel makes a template restricted-compliant with the run-as and seccomp settings on
// the Pod, the usual way.
func hardenPodLevel(spec *corev1.PodSpec) {
	spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// hardenContainerLevel makes a template restricted-compliant with every setting on the Ray
// container alone.
func hardenContainerLevel(spec *corev1.PodSpec) {
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](1000),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// TestAddedContainersKeepTheTemplatesLevel checks the containers the spoke adds (the autoscaler
// sidecar, the wait-gcs-ready init container) against Pod Security with the upstream checks: a
// template that passes a level gives Pods that pass it.
func TestAddedContainersKeepTheTemplatesLevel(t *testing.T) {
	tests := []struct {
		name   string
		level  string
		harden func(*corev1.PodSpec)
	}{
		{name: "a plain template at baseline", level: podsecurity.LevelBaseline, harden: func(*corev1.PodSpec) {}},
		{name: "restricted set on the Pod", level: podsecurity.LevelRestricted, harden: hardenPodLevel},
		{name: "restricted set on the Ray container", level: podsecurity.LevelRestricted, harden: hardenContainerLevel},
	}
	opts := DefaultOptions() // probes and the wait-gcs-ready init container on, as in KubeRay
	for _, tt := range tests {
		for _, version := range []rayv1.AutoscalerVersion{rayv1.AutoscalerVersionV1, rayv1.AutoscalerVersionV2} {
			t.Run(tt.name+"/autoscaler "+string(version), func(t *testing.T) {
				rc := newCluster("rc").Autoscaling(version).Obj()
				tt.harden(&rc.Spec.HeadGroupSpec.Template.Spec)
				tt.harden(&rc.Spec.WorkerGroupSpecs[0].Template.Spec)
				checker, err := podsecurity.New(tt.level)
				if err != nil {
					t.Fatal(err)
				}
				head, worker := mustHead(t, rc, opts), mustWorker(t, rc, Replica{}, opts)
				if containerIndex(head, AutoscalerContainerName) < 0 || len(worker.Spec.InitContainers) == 0 {
					t.Fatalf("the spoke's containers are missing: head %v, worker init %v", head.Spec.Containers, worker.Spec.InitContainers)
				}
				for _, pod := range []*corev1.Pod{head, worker} {
					if v := checker.Check(pod); v.Forbidden() {
						t.Errorf("%s Pod %s", pod.Labels["ray.io/node-type"], v)
					}
				}
			})
		}
	}
}

// TestAutoscalerTakesNoPrivilege: the sidecar carries the Ray container's restrictions, never its
// privileges, and a user's autoscalerOptions.securityContext still wins whole.
func TestAutoscalerTakesNoPrivilege(t *testing.T) {
	rc := newCluster("rc").Autoscaling("").Obj()
	rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		Privileged:               ptr.To(true),
		Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
		AllowPrivilegeEscalation: ptr.To(true),
		RunAsUser:                ptr.To[int64](1000),
		SELinuxOptions:           &corev1.SELinuxOptions{Type: "spc_t"},
	}
	head := mustHead(t, rc, DefaultOptions())
	got := head.Spec.Containers[containerIndex(head, AutoscalerContainerName)].SecurityContext
	want := &corev1.SecurityContext{RunAsUser: ptr.To[int64](1000), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	if got == nil || got.Privileged != nil || got.SELinuxOptions != nil || got.AllowPrivilegeEscalation != nil ||
		*got.RunAsUser != 1000 || len(got.Capabilities.Add) != 0 || got.Capabilities.Drop[0] != "ALL" {
		t.Errorf("sidecar security context %+v, want %+v", got, want)
	}

	plain := mustHead(t, newCluster("rc").Autoscaling("").Obj(), DefaultOptions())
	if sc := plain.Spec.Containers[containerIndex(plain, AutoscalerContainerName)].SecurityContext; sc != nil {
		t.Errorf("a Ray container without restrictions gives the sidecar %+v; KubeRay gives it none", sc)
	}

	user := &corev1.SecurityContext{RunAsUser: ptr.To[int64](7)}
	rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: user}
	head = mustHead(t, rc, DefaultOptions())
	if got := head.Spec.Containers[containerIndex(head, AutoscalerContainerName)].SecurityContext; *got.RunAsUser != 7 || got.Capabilities != nil {
		t.Errorf("autoscalerOptions.securityContext %+v did not win whole: %+v", user, got)
	}
}
