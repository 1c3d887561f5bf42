package raybuilder_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestMakeRayClusterDefaults(t *testing.T) {
	rc := raybuilder.MakeRayCluster("x", "ns").Obj()
	if rc.Name != "x" || rc.Namespace != "ns" || rc.Kind != "RayCluster" || rc.APIVersion != "ray.io/v1" {
		t.Errorf("metadata = %s/%s %s %s", rc.Namespace, rc.Name, rc.APIVersion, rc.Kind)
	}
	head := rc.Spec.HeadGroupSpec.Template.Spec.Containers
	if len(head) != 1 || head[0].Name != "ray-head" || head[0].Image != "rayproject/ray:2.52.0" {
		t.Fatalf("head containers = %+v", head)
	}
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	if d := cmp.Diff(want, head[0].Resources.Requests); d != "" {
		t.Errorf("head requests (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, head[0].Resources.Limits); d != "" {
		t.Errorf("head limits (-want +got):\n%s", d)
	}
	if rc.Spec.HeadGroupSpec.RayStartParams == nil || rc.Spec.RayVersion != "2.52.0" || len(rc.Spec.WorkerGroupSpecs) != 0 {
		t.Errorf("spec = %+v", rc.Spec)
	}
}

func TestRayClusterOptions(t *testing.T) {
	w := raybuilder.MakeRayCluster("x", "ns").
		Head("2", "4Gi").
		WorkerGroup("a", 2, 1, 3).
		WorkerGroup("b", 1, 0, 1).NumOfHosts("b", 4).WorkerResources("b", "8", "32Gi").
		GPU("a", "nvidia.com/gpu", "1").GPU(labels.HeadGroupValue, "amd.com/gpu", "2").
		RayStartParam("num-cpus", "0").GroupRayStartParam("a", "object-store-memory", "1000").
		HeadEnv("FOO", "bar").
		Suspend(true).GroupSuspend("b", true).
		EnableInTreeAutoscaling().UpgradeStrategy(rayv1.RayClusterRecreate).GCSFT("redis:6379").
		Annotation("k", "v").Label("l", "m").OriginatedFrom("RayService", "svc").ManagedBy(labels.ControllerName).
		WorkersToDelete("a", "p1", "p2").EnableIngress().AuthToken().Generation(3).UID("u")
	rc := w.Obj()

	head := rc.Spec.HeadGroupSpec.Template.Spec.Containers[0]
	a, b := rc.Spec.WorkerGroupSpecs[0], rc.Spec.WorkerGroupSpecs[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"head cpu", head.Resources.Requests.Cpu().String(), "2"},
		{"head memory limit", head.Resources.Limits.Memory().String(), "4Gi"},
		{"head gpu", head.Resources.Limits[corev1.ResourceName("amd.com/gpu")], resource.MustParse("2")},
		{"head env", head.Env, []corev1.EnvVar{{Name: "FOO", Value: "bar"}}},
		{"head param", rc.Spec.HeadGroupSpec.RayStartParams["num-cpus"], "0"},
		{"a bounds", []int32{*a.Replicas, *a.MinReplicas, *a.MaxReplicas, a.NumOfHosts}, []int32{2, 1, 3, 1}},
		{"a container", a.Template.Spec.Containers[0].Name + " " + a.Template.Spec.Containers[0].Image, "ray-worker rayproject/ray:2.52.0"},
		{"a gpu", a.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceName("nvidia.com/gpu")], resource.MustParse("1")},
		{"a param", a.RayStartParams["object-store-memory"], "1000"},
		{"a workers to delete", a.ScaleStrategy.WorkersToDelete, []string{"p1", "p2"}},
		{"b hosts", b.NumOfHosts, int32(4)},
		{"b cpu", b.Template.Spec.Containers[0].Resources.Requests.Cpu().String(), "8"},
		{"b suspended", ptr.Deref(b.Suspend, false), true},
		{"a not suspended", a.Suspend == nil, true},
		{"suspend", ptr.Deref(rc.Spec.Suspend, false), true},
		{"autoscaling", ptr.Deref(rc.Spec.EnableInTreeAutoscaling, false), true},
		{"upgrade", *rc.Spec.UpgradeStrategy.Type, rayv1.RayClusterRecreate},
		{"gcs ft", rc.Spec.GcsFaultToleranceOptions.RedisAddress, "redis:6379"},
		{"annotation", rc.Annotations["k"], "v"},
		{"labels", rc.Labels, map[string]string{"l": "m", labels.OriginatedFromCRD: "RayService", labels.OriginatedFromCRName: "svc"}},
		{"managed by", *rc.Spec.ManagedBy, labels.ControllerName},
		{"ingress", ptr.Deref(rc.Spec.HeadGroupSpec.EnableIngress, false), true},
		{"auth", rc.Spec.AuthOptions.Mode, rayv1.AuthModeToken},
		{"generation", rc.Generation, int64(3)},
		{"uid", string(rc.UID), "u"},
	}
	for _, c := range checks {
		if d := cmp.Diff(c.want, c.got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}

	// Obj returns a copy: later changes to the wrapper do not leak into earlier objects.
	w.Suspend(false)
	if !*rc.Spec.Suspend {
		t.Errorf("Obj() shares memory with the wrapper")
	}
}

func TestUnknownGroupPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("NumOfHosts on an unknown group did not panic")
		}
	}()
	raybuilder.MakeRayCluster("x", "ns").NumOfHosts("nope", 2)
}

func TestMakePod(t *testing.T) {
	rc := raybuilder.MakeRayCluster("x", "ns").UID("uid-1").Obj()
	tests := []struct {
		name  string
		pod   *corev1.Pod
		check func(t *testing.T, p *corev1.Pod)
	}{
		{
			name: "defaults",
			pod:  raybuilder.MakePod("p", "ns").Obj(),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Status.Phase != corev1.PodPending || p.Spec.Containers[0].Name != "ray-worker" || len(p.Labels) != 0 {
					t.Errorf("pod = %+v", p)
				}
			},
		},
		{
			name: "head of a cluster, ready",
			pod:  raybuilder.MakePod("h", "ns").Running().HeadOf("x").Ready().Owner(rc).Obj(),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Labels[labels.Cluster] != "x" || p.Labels[labels.NodeType] != "head" || p.Labels[labels.Group] != "headgroup" ||
					p.Labels[labels.Identifier] != "x-head" || p.Labels[labels.IsRayNode] != "yes" {
					t.Errorf("labels = %v", p.Labels)
				}
				if p.Status.Phase != corev1.PodRunning || !podCondition(p, corev1.PodReady) || !podCondition(p, corev1.ContainersReady) {
					t.Errorf("status = %+v", p.Status)
				}
				if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Name != "ray-head" || !p.Status.ContainerStatuses[0].Ready {
					t.Errorf("container statuses = %+v", p.Status.ContainerStatuses)
				}
				ref := p.OwnerReferences
				if len(ref) != 1 || ref[0].Kind != "RayCluster" || ref[0].Name != "x" || ref[0].UID != "uid-1" || !*ref[0].Controller {
					t.Errorf("owner references = %+v", ref)
				}
			},
		},
		{
			name: "worker running, not ready",
			pod:  raybuilder.MakePod("w", "ns").WorkerOf("x", "g").Running().Condition(corev1.PodReady, corev1.ConditionFalse).Obj(),
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Labels[labels.NodeType] != "worker" || p.Labels[labels.Group] != "g" || p.Labels[labels.Identifier] != "x-worker" {
					t.Errorf("labels = %v", p.Labels)
				}
				if p.Status.Phase != corev1.PodRunning || podCondition(p, corev1.PodReady) || p.Status.ContainerStatuses[0].State.Running == nil {
					t.Errorf("status = %+v", p.Status)
				}
			},
		},
		{
			name: "waiting container",
			pod:  raybuilder.MakePod("w", "ns").ContainerWaiting("ImagePullBackOff", "no such image").Obj(),
			check: func(t *testing.T, p *corev1.Pod) {
				w := p.Status.ContainerStatuses[0].State.Waiting
				if w == nil || w.Reason != "ImagePullBackOff" || w.Message != "no such image" {
					t.Errorf("state = %+v", p.Status.ContainerStatuses[0].State)
				}
			},
		},
		{
			name: "terminated container with restart policy and phase",
			pod: raybuilder.MakePod("w", "ns").Terminated("Error", 1).Phase(corev1.PodFailed).
				RestartPolicy(corev1.RestartPolicyNever).Label("a", "b").Annotation("c", "d").Obj(),
			check: func(t *testing.T, p *corev1.Pod) {
				term := p.Status.ContainerStatuses[0].State.Terminated
				if term == nil || term.Reason != "Error" || term.ExitCode != 1 || p.Status.Phase != corev1.PodFailed ||
					p.Spec.RestartPolicy != corev1.RestartPolicyNever || p.Labels["a"] != "b" || p.Annotations["c"] != "d" {
					t.Errorf("pod = %+v", p)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, tt.pod) })
	}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
