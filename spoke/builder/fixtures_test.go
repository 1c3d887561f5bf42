package builder

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// clusterWrapper is a fluent builder for test RayClusters: newCluster("rc").Autoscaling().Obj().
type clusterWrapper struct{ rc *rayv1.RayCluster }

// newCluster returns a small defaulted cluster: a head with the usual ports and one worker group.
func newCluster(name string) *clusterWrapper {
	return &clusterWrapper{rc: &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-1"},
		Spec: rayv1.RayClusterSpec{
			RayVersion: "2.52.0",
			HeadGroupSpec: rayv1.HeadGroupSpec{
				RayStartParams: map[string]string{},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:      "ray-head",
					Image:     "rayproject/ray:2.52.0",
					Resources: resources("1", "2Gi", nil),
					Ports: []corev1.ContainerPort{
						{Name: "gcs-server", ContainerPort: 6379},
						{Name: "dashboard", ContainerPort: 8265},
						{Name: "client", ContainerPort: 10001},
					},
				}}}},
			},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName:      "small",
				Replicas:       ptr.To[int32](1),
				MinReplicas:    ptr.To[int32](0),
				MaxReplicas:    ptr.To[int32](5),
				NumOfHosts:     1,
				RayStartParams: map[string]string{},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:      "ray-worker",
					Image:     "rayproject/ray:2.52.0",
					Resources: resources("1", "1Gi", nil),
				}}}},
			}},
		},
	}}
}

func (w *clusterWrapper) Obj() *rayv1.RayCluster { return w.rc }

func (w *clusterWrapper) Annotation(k, v string) *clusterWrapper {
	if w.rc.Annotations == nil {
		w.rc.Annotations = map[string]string{}
	}
	w.rc.Annotations[k] = v
	return w
}

func (w *clusterWrapper) Label(k, v string) *clusterWrapper {
	if w.rc.Labels == nil {
		w.rc.Labels = map[string]string{}
	}
	w.rc.Labels[k] = v
	return w
}

func (w *clusterWrapper) RayVersion(v string) *clusterWrapper {
	w.rc.Spec.RayVersion = v
	return w
}

func (w *clusterWrapper) Autoscaling(version rayv1.AutoscalerVersion) *clusterWrapper {
	w.rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
	if version != "" {
		w.rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(version)}
	}
	return w
}

func (w *clusterWrapper) HeadParam(k, v string) *clusterWrapper {
	w.rc.Spec.HeadGroupSpec.RayStartParams[k] = v
	return w
}

func (w *clusterWrapper) WorkerParam(k, v string) *clusterWrapper {
	w.rc.Spec.WorkerGroupSpecs[0].RayStartParams[k] = v
	return w
}

func (w *clusterWrapper) HeadContainer(f func(c *corev1.Container)) *clusterWrapper {
	f(&w.rc.Spec.HeadGroupSpec.Template.Spec.Containers[0])
	return w
}

func (w *clusterWrapper) WorkerContainer(f func(c *corev1.Container)) *clusterWrapper {
	f(&w.rc.Spec.WorkerGroupSpecs[0].Template.Spec.Containers[0])
	return w
}

func (w *clusterWrapper) Head(f func(h *rayv1.HeadGroupSpec)) *clusterWrapper {
	f(&w.rc.Spec.HeadGroupSpec)
	return w
}

func (w *clusterWrapper) Worker(f func(g *rayv1.WorkerGroupSpec)) *clusterWrapper {
	f(&w.rc.Spec.WorkerGroupSpecs[0])
	return w
}

func (w *clusterWrapper) Spec(f func(s *rayv1.RayClusterSpec)) *clusterWrapper {
	f(&w.rc.Spec)
	return w
}

// resources builds equal requests and limits, plus extra limits (accelerators).
func resources(cpu, memory string, extra map[corev1.ResourceName]string) corev1.ResourceRequirements {
	list := corev1.ResourceList{}
	if cpu != "" {
		list[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		list[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	limits := list.DeepCopy()
	for k, v := range extra {
		limits[k] = resource.MustParse(v)
	}
	return corev1.ResourceRequirements{Requests: list, Limits: limits}
}

// env returns the named variable of c and whether it is set.
func env(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// envValue returns the literal value of the named variable, "" when unset.
func envValue(c *corev1.Container, name string) string {
	e, _ := env(c, name)
	return e.Value
}

func mustHead(t testing.TB, rc *rayv1.RayCluster, opts Options) *corev1.Pod {
	t.Helper()
	pod, err := HeadPod(rc, opts)
	if err != nil {
		t.Fatalf("HeadPod: %v", err)
	}
	return pod
}

func mustWorker(t testing.TB, rc *rayv1.RayCluster, replica Replica, opts Options) *corev1.Pod {
	t.Helper()
	pod, err := WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], replica, opts)
	if err != nil {
		t.Fatalf("WorkerPod: %v", err)
	}
	return pod
}
