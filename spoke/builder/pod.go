package builder

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// Volumes KubeRay adds to Ray Pods.
const (
	sharedMemoryVolume    = "shared-mem"
	sharedMemoryMountPath = "/dev/shm"
	rayLogsVolume         = "ray-logs"
	rayLogsMountPath      = "/tmp/ray"
	metricsPortName       = "metrics"
)

// Replica places a worker Pod in its worker group. Index is the replica's
// ray.io/worker-group-replica-index (single-host groups use it too); Name and HostIndex identify
// the Pod inside a multi-host replica (NumOfHosts > 1) and are ignored otherwise.
type Replica struct {
	Name      string
	Index     int
	HostIndex int
}

// HeadPod builds the head Pod of rc. It carries the ray.io/upgrade-strategy-recreate-hash and
// ray.io/kuberay-version annotations KubeRay adds when it creates the head.
func HeadPod(rc *rayv1.RayCluster, opts Options) (*corev1.Pod, error) {
	opts = opts.withDefaults()
	pod, err := buildHeadPod(rc, opts)
	if err != nil {
		return nil, err
	}
	hash, err := RecreateHash(&rc.Spec)
	if err != nil {
		return nil, fmt.Errorf("build head Pod of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	pod.Annotations[labels.UpgradeStrategyRecreateHash] = hash
	pod.Annotations[labels.KubeRayVersion] = opts.KubeRayVersion
	return pod, nil
}

// buildHeadPod is the head Pod as KubeRay's buildHeadPod returns it, before the creation-time
// annotations; the Redis cleanup Job is derived from it.
func buildHeadPod(rc *rayv1.RayCluster, opts Options) (*corev1.Pod, error) {
	head := &rc.Spec.HeadGroupSpec
	if len(head.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("build head Pod of RayCluster %s/%s: the head template has no containers", rc.Namespace, rc.Name)
	}
	tmpl := head.Template.DeepCopy()
	params := cloneParams(head.RayStartParams)
	name := podName(rc.Name, rayv1.HeadNode, !opts.DeterministicHeadPodName)
	if opts.DeterministicHeadPodName {
		tmpl.Name = name
	} else {
		tmpl.GenerateName = name
	}
	// Pods always live in the RayCluster's namespace, whatever the template says.
	tmpl.Namespace = rc.Namespace

	applyGroupResources(params, head.Resources)
	applyGroupLabels(params, head.Labels)
	tmpl.Labels = podLabels(rayv1.HeadNode, rc.Name, labels.HeadGroupValue, mergeLabels(head.Template.Labels, head.Labels))
	port, fqdn := headPort(rc), headFQDN(rc, opts)
	completeParams(params, rayv1.HeadNode, port, fqdn)
	markOverwrite(tmpl, rc)
	if rayspec.Autoscaling(&rc.Spec) {
		addAutoscaler(tmpl, rc, params, opts)
	}
	configureGCSFaultTolerance(tmpl, rc, rayv1.HeadNode, params)
	ensureMetricsPort(&tmpl.Spec.Containers[0])
	if rayspec.TokenAuth(&rc.Spec) {
		configureTokenAuth(&tmpl.Spec, rc)
	}
	if err := addSidecars(&tmpl.Spec, opts.HeadSidecars); err != nil {
		return nil, fmt.Errorf("build head Pod of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	return finishPod(rc, tmpl, podContext{nodeType: rayv1.HeadNode, params: params, port: port, fqdn: fqdn, opts: opts})
}

// WorkerPod builds one worker Pod of group (always with a generated name). replica places it in
// the group; pass the zero value with the next free Index for single-host groups.
func WorkerPod(rc *rayv1.RayCluster, group *rayv1.WorkerGroupSpec, replica Replica, opts Options) (*corev1.Pod, error) {
	opts = opts.withDefaults()
	if group == nil {
		return nil, fmt.Errorf("build worker Pod of RayCluster %s/%s: no worker group", rc.Namespace, rc.Name)
	}
	if len(group.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("build worker Pod of RayCluster %s/%s: worker group %q has no containers", rc.Namespace, rc.Name, group.GroupName)
	}
	g := group.DeepCopy()
	tmpl := &g.Template
	params := cloneParams(g.RayStartParams)
	tmpl.GenerateName = podName(rc.Name+"-"+g.GroupName, rayv1.WorkerNode, true)
	tmpl.Namespace = rc.Namespace
	// A fixed name from the template would clash between replicas.
	tmpl.Name = ""
	port, fqdn := headPort(rc), headFQDN(rc, opts)
	if opts.InitContainerInjection {
		tmpl.Spec.InitContainers = append(tmpl.Spec.InitContainers, waitGCSContainer(&tmpl.Spec.Containers[0], fqdn, port, opts))
	}

	applyGroupResources(params, g.Resources)
	applyGroupLabels(params, g.Labels)
	tmpl.Labels = podLabels(rayv1.WorkerNode, rc.Name, g.GroupName, mergeLabels(tmpl.Labels, g.Labels))
	if opts.MultiHostIndexing {
		tmpl.Labels[labels.WorkerReplicaIndex] = strconv.Itoa(replica.Index)
		if g.NumOfHosts > 1 {
			tmpl.Labels[labels.WorkerReplicaName] = replica.Name
			tmpl.Labels[labels.HostIndex] = strconv.Itoa(replica.HostIndex)
		}
	}
	completeParams(params, rayv1.WorkerNode, port, fqdn)
	markOverwrite(tmpl, rc)
	configureGCSFaultTolerance(tmpl, rc, rayv1.WorkerNode, params)
	ensureMetricsPort(&tmpl.Spec.Containers[0])
	if rayspec.Autoscaling(&rc.Spec) && rayspec.AutoscalerV2(&rc.Spec) {
		tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	if rayspec.TokenAuth(&rc.Spec) {
		configureTokenAuth(&tmpl.Spec, rc)
	}
	if err := addSidecars(&tmpl.Spec, opts.WorkerSidecars); err != nil {
		return nil, fmt.Errorf("build worker Pod of group %q of RayCluster %s/%s: %w", group.GroupName, rc.Namespace, rc.Name, err)
	}
	return finishPod(rc, tmpl, podContext{nodeType: rayv1.WorkerNode, params: params, port: port, fqdn: fqdn, opts: opts})
}

// podContext is what finishPod needs besides the template.
type podContext struct {
	nodeType rayv1.RayNodeType
	params   map[string]string
	port     string
	fqdn     string
	opts     Options
}

// finishPod turns a prepared template into the Pod: volumes, the generated command, environment,
// probes and the controller reference (KubeRay's BuildPod).
func finishPod(rc *rayv1.RayCluster, tmpl *corev1.PodTemplateSpec, p podContext) (*corev1.Pod, error) {
	creator := creatorOf(rc)
	if creator == creatorRayService {
		// Workers gate Serve traffic with their readiness probe; the head starts out of the serve
		// Service and the RayService reconciler adds it once its proxy is healthy.
		tmpl.Labels[labels.Serve] = strconv.FormatBool(p.nodeType == rayv1.WorkerNode)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: tmpl.ObjectMeta,
		Spec:       tmpl.Spec,
	}
	// The object store needs a RAM-backed /dev/shm larger than the runtime's 64Mi default, unless
	// the user moved it elsewhere.
	if _, ok := p.params[paramPlasmaDirectory]; !ok {
		addEmptyDir(pod, 0, sharedMemoryVolume, sharedMemoryMountPath, corev1.StorageMediumMemory)
	}
	if p.nodeType == rayv1.HeadNode && rayspec.Autoscaling(&rc.Spec) {
		// The autoscaler writes event logs that the head's dashboard reads.
		addEmptyDir(pod, 0, rayLogsVolume, rayLogsMountPath, corev1.StorageMediumDefault)
		if i := containerIndex(pod, AutoscalerContainerName); i >= 0 {
			addEmptyDir(pod, i, rayLogsVolume, rayLogsMountPath, corev1.StorageMediumDefault)
		}
	}

	ray := &pod.Spec.Containers[0]
	addContainerResources(p.params, ray.Resources)
	startCmd := rayStartCommand(p.nodeType, p.params)
	overwrite := strings.EqualFold(pod.Annotations[labels.OverwriteContainerCmd], "true")
	setRayContainerCommand(ray, startCmd, overwrite, p.opts)
	for i := range pod.Spec.InitContainers {
		setInitContainerEnv(&pod.Spec.InitContainers[i], p.fqdn)
	}
	setRayContainerEnv(ray, rayNodeEnv{
		nodeType: p.nodeType, fqdn: p.fqdn, port: p.port, startCmd: startCmd, creator: creator, opts: p.opts,
	})
	if p.opts.ProbesInjection {
		setProbes(ray, p.nodeType, creator, p.params, rc.Spec.RayVersion)
	}
	if err := setControllerRef(pod, rc); err != nil {
		return nil, fmt.Errorf("build %s Pod of RayCluster %s/%s: %w", p.nodeType, rc.Namespace, rc.Name, err)
	}
	return pod, nil
}

// podLabels are KubeRay's labels on a Ray Pod. User labels may override everything except the
// cluster, node type and group, which the operator's own selectors depend on.
func podLabels(nodeType rayv1.RayNodeType, clusterName, group string, user map[string]string) map[string]string {
	l := map[string]string{
		labels.IsRayNode:  "yes",
		labels.Cluster:    clusterName,
		labels.NodeType:   string(nodeType),
		labels.Group:      group,
		labels.Identifier: identifier(clusterName, nodeType),
		labels.AppName:    labels.ApplicationNameValue,
		labels.CreatedBy:  labels.CreatedByValue,
	}
	for k, v := range user {
		if k == labels.NodeType || k == labels.Group || k == labels.Cluster {
			continue
		}
		l[k] = v
	}
	return l
}

// mergeLabels overlays the group's top-level Ray labels on the template's labels.
func mergeLabels(template, group map[string]string) map[string]string {
	out := make(map[string]string, len(template)+len(group))
	maps.Copy(out, template)
	maps.Copy(out, group)
	return out
}

// markOverwrite copies the cluster's ray.io/overwrite-container-cmd opt-out onto the template,
// which is where the command generation looks for it.
func markOverwrite(tmpl *corev1.PodTemplateSpec, rc *rayv1.RayCluster) {
	if tmpl.Annotations == nil {
		tmpl.Annotations = map[string]string{}
	}
	if strings.EqualFold(rc.Annotations[labels.OverwriteContainerCmd], "true") {
		tmpl.Annotations[labels.OverwriteContainerCmd] = "true"
	}
}

// ensureMetricsPort exposes the metrics port Prometheus scrapes unless a port named "metrics"
// already exists.
func ensureMetricsPort(c *corev1.Container) {
	for _, p := range c.Ports {
		if p.Name == metricsPortName {
			return
		}
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: metricsPortName, ContainerPort: defaultMetricsPort})
}

// addEmptyDir mounts an emptyDir at path in container i unless something is mounted there already.
// A memory-backed volume is capped at the container's memory limit (else request).
func addEmptyDir(pod *corev1.Pod, i int, name, path string, medium corev1.StorageMedium) {
	c := &pod.Spec.Containers[i]
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return
		}
	}
	if !hasVolume(&pod.Spec, name) {
		src := &corev1.EmptyDirVolumeSource{Medium: medium}
		if medium == corev1.StorageMediumMemory {
			src.SizeLimit = memoryLimitOrRequest(c)
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: src}})
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: path})
}

func memoryLimitOrRequest(c *corev1.Container) *resource.Quantity {
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		return &q
	}
	if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
		return &q
	}
	return nil
}

func containerIndex(pod *corev1.Pod, name string) int {
	for i, c := range pod.Spec.Containers {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func cloneParams(params map[string]string) map[string]string {
	out := make(map[string]string, len(params))
	maps.Copy(out, params)
	return out
}

// addSidecars appends copies of the operator's sidecars to spec. A sidecar named like a container
// the Pod already has (the template's or one the builder added) is refused here, naming it: the
// API server would refuse the Pod anyway, with a message that does not say where the name came from.
func addSidecars(spec *corev1.PodSpec, sidecars []corev1.Container) error {
	for i := range sidecars {
		name := sidecars[i].Name
		taken := func(c corev1.Container) bool { return c.Name == name }
		if slices.ContainsFunc(spec.Containers, taken) || slices.ContainsFunc(spec.InitContainers, taken) {
			return fmt.Errorf("sidecar %q from the spoke's configuration has the name of a container of the Pod", name)
		}
	}
	spec.Containers = append(spec.Containers, copyContainers(sidecars)...)
	return nil
}

func copyContainers(cs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, 0, len(cs))
	for i := range cs {
		out = append(out, *cs[i].DeepCopy())
	}
	return out
}

// setControllerRef makes rc the controller of obj, refusing if another object already controls it.
func setControllerRef(obj metav1.Object, rc *rayv1.RayCluster) error {
	ref := *metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))
	refs := obj.GetOwnerReferences()
	for i, r := range refs {
		sameOwner := r.APIVersion == ref.APIVersion && r.Kind == ref.Kind && r.Name == ref.Name
		if sameOwner {
			refs[i] = ref
			obj.SetOwnerReferences(refs)
			return nil
		}
		if r.Controller != nil && *r.Controller {
			return fmt.Errorf("%s/%s is already controlled by %s %s", obj.GetNamespace(), obj.GetName(), r.Kind, r.Name)
		}
	}
	obj.SetOwnerReferences(append(refs, ref))
	return nil
}
