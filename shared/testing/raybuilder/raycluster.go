// Package raybuilder builds ray.io/v1 objects and the Pods made from them for tests, in the
// fluent style of Kueue's testingjobs wrappers:
//
//	rc := raybuilder.MakeRayCluster("x", "ns").WorkerGroup("g", 2, 1, 4).GPU("g", "nvidia.com/gpu", "1").Obj()
//
// Every builder starts from an object KubeRay would accept and build Pods for, so a test only
// spells out what it is about.
// Only tests and e2e/ import it, never production code; like all of shared/, it never imports
// hub/, spoke/ or cmd/ (spoke/rayservice/internal/fixture builds what needs spoke/builder).
package raybuilder

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Defaults used by the builders.
const (
	// RayVersion is the spec.rayVersion of a new cluster; new enough for token auth.
	RayVersion = "2.52.0"
	// RayImage is the image of every Ray container the builders make.
	RayImage = "rayproject/ray:" + RayVersion
	// HeadContainerName is the name of the head group's Ray container.
	HeadContainerName = "ray-head"
	// WorkerContainerName is the name of every worker group's Ray container.
	WorkerContainerName = "ray-worker"
	// DefaultHeadCPU is the head container's CPU request and limit.
	DefaultHeadCPU = "1"
	// DefaultHeadMemory is the head container's memory request and limit.
	DefaultHeadMemory = "2Gi"
	// DefaultWorkerCPU is a new worker group's CPU request and limit.
	DefaultWorkerCPU = "1"
	// DefaultWorkerMemory is a new worker group's memory request and limit.
	DefaultWorkerMemory = "1Gi"
)

// RayClusterWrapper wraps a RayCluster under construction.
type RayClusterWrapper struct{ rayv1.RayCluster }

// MakeRayCluster returns a valid RayCluster with a head group and no worker groups.
func MakeRayCluster(name, ns string) *RayClusterWrapper {
	return &RayClusterWrapper{rayv1.RayCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: rayv1.RayClusterSpec{
			RayVersion: RayVersion,
			HeadGroupSpec: rayv1.HeadGroupSpec{
				RayStartParams: map[string]string{},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
					rayContainer(HeadContainerName, DefaultHeadCPU, DefaultHeadMemory),
				}}},
			},
		},
	}}
}

// Obj returns a copy of the cluster built so far; the wrapper stays usable.
func (w *RayClusterWrapper) Obj() *rayv1.RayCluster { return w.DeepCopy() }

// Head sets the CPU and memory requests and limits of the head's Ray container.
func (w *RayClusterWrapper) Head(cpu, mem string) *RayClusterWrapper {
	setCPUMemory(&w.Spec.HeadGroupSpec.Template.Spec.Containers[0], cpu, mem)
	return w
}

// WorkerGroup appends a worker group with one ray-worker container of the default size.
func (w *RayClusterWrapper) WorkerGroup(name string, replicas, minReplicas, maxReplicas int32) *RayClusterWrapper {
	w.Spec.WorkerGroupSpecs = append(w.Spec.WorkerGroupSpecs, rayv1.WorkerGroupSpec{
		GroupName:      name,
		Replicas:       ptr.To(replicas),
		MinReplicas:    ptr.To(minReplicas),
		MaxReplicas:    ptr.To(maxReplicas),
		NumOfHosts:     1,
		RayStartParams: map[string]string{},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
			rayContainer(WorkerContainerName, DefaultWorkerCPU, DefaultWorkerMemory),
		}}},
	})
	return w
}

// WorkerResources sets the CPU and memory requests and limits of a worker group's Ray container.
func (w *RayClusterWrapper) WorkerResources(group, cpu, mem string) *RayClusterWrapper {
	setCPUMemory(&w.group(group).Template.Spec.Containers[0], cpu, mem)
	return w
}

// NumOfHosts sets how many hosts (Pods) make one replica of a worker group.
func (w *RayClusterWrapper) NumOfHosts(group string, n int32) *RayClusterWrapper {
	w.group(group).NumOfHosts = n
	return w
}

// GPU sets an accelerator request and limit on a group's Ray container; group
// labels.HeadGroupValue ("headgroup") means the head.
func (w *RayClusterWrapper) GPU(group string, name corev1.ResourceName, quantity string) *RayClusterWrapper {
	c := &w.template(group).Spec.Containers[0]
	q := resource.MustParse(quantity)
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = q
	c.Resources.Limits[name] = q
	return w
}

// RayStartParam sets a head rayStartParams entry.
func (w *RayClusterWrapper) RayStartParam(key, value string) *RayClusterWrapper {
	w.Spec.HeadGroupSpec.RayStartParams[key] = value
	return w
}

// GroupRayStartParam sets a worker group's rayStartParams entry.
func (w *RayClusterWrapper) GroupRayStartParam(group, key, value string) *RayClusterWrapper {
	g := w.group(group)
	if g.RayStartParams == nil {
		g.RayStartParams = map[string]string{}
	}
	g.RayStartParams[key] = value
	return w
}

// HeadEnv appends an environment variable to the head's Ray container.
func (w *RayClusterWrapper) HeadEnv(name, value string) *RayClusterWrapper {
	c := &w.Spec.HeadGroupSpec.Template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return w
}

// Suspend sets spec.suspend.
func (w *RayClusterWrapper) Suspend(suspend bool) *RayClusterWrapper {
	w.Spec.Suspend = ptr.To(suspend)
	return w
}

// GroupSuspend sets a worker group's suspend field.
func (w *RayClusterWrapper) GroupSuspend(group string, suspend bool) *RayClusterWrapper {
	w.group(group).Suspend = ptr.To(suspend)
	return w
}

// EnableInTreeAutoscaling turns on the autoscaler sidecar.
func (w *RayClusterWrapper) EnableInTreeAutoscaling() *RayClusterWrapper {
	w.Spec.EnableInTreeAutoscaling = ptr.To(true)
	return w
}

// AutoscalerV2 turns on the autoscaler and pins it to version v2.
func (w *RayClusterWrapper) AutoscalerV2() *RayClusterWrapper {
	w.EnableInTreeAutoscaling()
	if w.Spec.AutoscalerOptions == nil {
		w.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{}
	}
	w.Spec.AutoscalerOptions.Version = ptr.To(rayv1.AutoscalerVersionV2)
	return w
}

// UpgradeStrategy sets spec.upgradeStrategy.type.
func (w *RayClusterWrapper) UpgradeStrategy(t rayv1.RayClusterUpgradeType) *RayClusterWrapper {
	w.Spec.UpgradeStrategy = &rayv1.RayClusterUpgradeStrategy{Type: ptr.To(t)}
	return w
}

// GCSFT enables GCS fault tolerance through spec.gcsFaultToleranceOptions with a Redis address.
func (w *RayClusterWrapper) GCSFT(redisAddress string) *RayClusterWrapper {
	w.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: redisAddress}
	return w
}

// Annotation sets a metadata annotation.
func (w *RayClusterWrapper) Annotation(key, value string) *RayClusterWrapper {
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, key, value)
	return w
}

// Label sets a metadata label.
func (w *RayClusterWrapper) Label(key, value string) *RayClusterWrapper {
	metav1.SetMetaDataLabel(&w.ObjectMeta, key, value)
	return w
}

// OriginatedFrom labels the cluster as created by a RayService or RayJob of that name.
func (w *RayClusterWrapper) OriginatedFrom(kind, name string) *RayClusterWrapper {
	return w.Label(labels.OriginatedFromCRD, kind).Label(labels.OriginatedFromCRName, name)
}

// ManagedBy sets spec.managedBy.
func (w *RayClusterWrapper) ManagedBy(controller string) *RayClusterWrapper {
	w.Spec.ManagedBy = ptr.To(controller)
	return w
}

// WorkersToDelete asks for the named worker Pods of a group to be removed.
func (w *RayClusterWrapper) WorkersToDelete(group string, pods ...string) *RayClusterWrapper {
	g := w.group(group)
	g.ScaleStrategy.WorkersToDelete = append(g.ScaleStrategy.WorkersToDelete, pods...)
	return w
}

// EnableIngress asks for an Ingress in front of the head Service.
func (w *RayClusterWrapper) EnableIngress() *RayClusterWrapper {
	w.Spec.HeadGroupSpec.EnableIngress = ptr.To(true)
	return w
}

// AuthToken turns on Ray token authentication.
func (w *RayClusterWrapper) AuthToken() *RayClusterWrapper {
	w.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}
	return w
}

// RayVersion sets spec.rayVersion.
func (w *RayClusterWrapper) RayVersion(v string) *RayClusterWrapper {
	w.Spec.RayVersion = v
	return w
}

// Generation sets metadata.generation.
func (w *RayClusterWrapper) Generation(g int64) *RayClusterWrapper {
	w.ObjectMeta.Generation = g
	return w
}

// UID sets metadata.uid, which owner references need.
func (w *RayClusterWrapper) UID(uid string) *RayClusterWrapper {
	w.ObjectMeta.UID = types.UID(uid)
	return w
}

// StatusCondition sets a status condition (ObservedGeneration and transition time left as given).
func (w *RayClusterWrapper) StatusCondition(c metav1.Condition) *RayClusterWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, c)
	return w
}

// group returns the named worker group; an unknown name is a bug in the test.
func (w *RayClusterWrapper) group(name string) *rayv1.WorkerGroupSpec {
	for i := range w.Spec.WorkerGroupSpecs {
		if w.Spec.WorkerGroupSpecs[i].GroupName == name {
			return &w.Spec.WorkerGroupSpecs[i]
		}
	}
	panic(fmt.Sprintf("raybuilder: RayCluster %s has no worker group %q", w.Name, name))
}

// template returns the Pod template of a worker group, or of the head for HeadGroupValue.
func (w *RayClusterWrapper) template(group string) *corev1.PodTemplateSpec {
	if group == labels.HeadGroupValue {
		return &w.Spec.HeadGroupSpec.Template
	}
	return &w.group(group).Template
}

func rayContainer(name, cpu, mem string) corev1.Container {
	c := corev1.Container{Name: name, Image: RayImage}
	setCPUMemory(&c, cpu, mem)
	return c
}

// setCPUMemory sets requests equal to limits, the shape KubeRay's samples use for Ray nodes.
func setCPUMemory(c *corev1.Container, cpu, mem string) {
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	for name, v := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem} {
		c.Resources.Requests[name] = resource.MustParse(v)
		c.Resources.Limits[name] = resource.MustParse(v)
	}
}
