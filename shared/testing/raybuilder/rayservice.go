package raybuilder

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Defaults of a new RayService.
const (
	// RayServiceServeConfig is the serveConfigV2 of a new RayService: one application, one
	// deployment.
	RayServiceServeConfig = `applications:
  - name: fruit
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    deployments:
      - name: MangoStand
        num_replicas: 1
`
	// RayServiceGatewayClass is the gatewayClassName Incremental asks for.
	RayServiceGatewayClass = "istio"
	// RayServiceWorkerGroup is the name of a new RayService's one worker group.
	RayServiceWorkerGroup = "small"
)

// RayServiceWrapper wraps a RayService under construction.
type RayServiceWrapper struct{ rayv1.RayService }

// MakeRayService returns a valid RayService: generation 1, a UID (owner references need one),
// RayServiceServeConfig, and the cluster of MakeRayCluster with one worker group
// RayServiceWorkerGroup (one replica, 0 to 5).
func MakeRayService(name, ns string) *RayServiceWrapper {
	rc := MakeRayCluster(name, ns).WorkerGroup(RayServiceWorkerGroup, 1, 0, 5).Obj()
	return &RayServiceWrapper{rayv1.RayService{
		TypeMeta:   metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayService"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name + "-uid"), Generation: 1},
		Spec:       rayv1.RayServiceSpec{ServeConfigV2: RayServiceServeConfig, RayClusterSpec: rc.Spec},
	}}
}

// Obj returns a copy of the RayService built so far; the wrapper stays usable.
func (w *RayServiceWrapper) Obj() *rayv1.RayService { return w.DeepCopy() }

// Image sets the image of every Ray container: a spec change that needs a new cluster.
func (w *RayServiceWrapper) Image(image string) *RayServiceWrapper {
	SetImage(&w.Spec.RayClusterSpec, image)
	return w
}

// WorkerGroup appends a worker group like the first one.
func (w *RayServiceWrapper) WorkerGroup(name string, replicas int32) *RayServiceWrapper {
	AppendGroup(&w.Spec.RayClusterSpec, name, replicas)
	return w
}

// SetImage sets the image of every Ray container of spec; for tests that change a stored
// RayService's cluster spec in place.
func SetImage(spec *rayv1.RayClusterSpec, image string) {
	spec.HeadGroupSpec.Template.Spec.Containers[0].Image = image
	for i := range spec.WorkerGroupSpecs {
		spec.WorkerGroupSpecs[i].Template.Spec.Containers[0].Image = image
	}
}

// AppendGroup appends to spec a copy of its first worker group, named name, with replicas.
func AppendGroup(spec *rayv1.RayClusterSpec, name string, replicas int32) {
	g := *spec.WorkerGroupSpecs[0].DeepCopy()
	g.GroupName = name
	g.Replicas = ptr.To(replicas)
	spec.WorkerGroupSpecs = append(spec.WorkerGroupSpecs, g)
}

// Replicas sets the replicas of a worker group by index.
func (w *RayServiceWrapper) Replicas(group int, n int32) *RayServiceWrapper {
	w.Spec.RayClusterSpec.WorkerGroupSpecs[group].Replicas = ptr.To(n)
	return w
}

// ReplicaBounds sets the minReplicas and maxReplicas of a worker group by index.
func (w *RayServiceWrapper) ReplicaBounds(group int, minReplicas, maxReplicas int32) *RayServiceWrapper {
	g := &w.Spec.RayClusterSpec.WorkerGroupSpecs[group]
	g.MinReplicas, g.MaxReplicas = ptr.To(minReplicas), ptr.To(maxReplicas)
	return w
}

// Autoscaling turns the in-tree autoscaler on.
func (w *RayServiceWrapper) Autoscaling() *RayServiceWrapper {
	w.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
	return w
}

// Suspend sets rayClusterConfig.suspend.
func (w *RayServiceWrapper) Suspend(s bool) *RayServiceWrapper {
	w.Spec.RayClusterSpec.Suspend = ptr.To(s)
	return w
}

// Strategy sets upgradeStrategy.type.
func (w *RayServiceWrapper) Strategy(t rayv1.RayServiceUpgradeType) *RayServiceWrapper {
	if w.Spec.UpgradeStrategy == nil {
		w.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{}
	}
	w.Spec.UpgradeStrategy.Type = ptr.To(t)
	return w
}

// Incremental asks for NewClusterWithIncrementalUpgrade with these options through
// RayServiceGatewayClass, and turns on autoscaling, which that strategy needs.
func (w *RayServiceWrapper) Incremental(maxSurge, stepSize, intervalSeconds int32) *RayServiceWrapper {
	w.Strategy(rayv1.RayServiceNewClusterWithIncrementalUpgrade).Autoscaling()
	w.Spec.UpgradeStrategy.ClusterUpgradeOptions = &rayv1.ClusterUpgradeOptions{
		MaxSurgePercent:  ptr.To(maxSurge),
		StepSizePercent:  ptr.To(stepSize),
		IntervalSeconds:  ptr.To(intervalSeconds),
		GatewayClassName: RayServiceGatewayClass,
	}
	return w
}

// GatewayClass sets the gatewayClassName; call it after Incremental.
func (w *RayServiceWrapper) GatewayClass(name string) *RayServiceWrapper {
	w.Spec.UpgradeStrategy.ClusterUpgradeOptions.GatewayClassName = name
	return w
}

// ServeConfig sets serveConfigV2.
func (w *RayServiceWrapper) ServeConfig(cfg string) *RayServiceWrapper {
	w.Spec.ServeConfigV2 = cfg
	return w
}

// DeletionDelay sets rayClusterDeletionDelaySeconds.
func (w *RayServiceWrapper) DeletionDelay(seconds int32) *RayServiceWrapper {
	w.Spec.RayClusterDeletionDelaySeconds = ptr.To(seconds)
	return w
}

// Annotation sets a metadata annotation.
func (w *RayServiceWrapper) Annotation(key, value string) *RayServiceWrapper {
	metav1.SetMetaDataAnnotation(&w.ObjectMeta, key, value)
	return w
}

// Active names the active cluster in the status.
func (w *RayServiceWrapper) Active(name string) *RayServiceWrapper {
	w.Status.ActiveServiceStatus.RayClusterName = name
	return w
}

// Pending names the pending cluster in the status.
func (w *RayServiceWrapper) Pending(name string) *RayServiceWrapper {
	w.Status.PendingServiceStatus.RayClusterName = name
	return w
}

// Condition sets a status condition.
func (w *RayServiceWrapper) Condition(t rayv1.RayServiceConditionType, s metav1.ConditionStatus, reason rayv1.RayServiceConditionReason) *RayServiceWrapper {
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: string(t), Status: s, Reason: string(reason)})
	return w
}

// Upgrading sets UpgradeInProgress True, as while both clusters exist.
func (w *RayServiceWrapper) Upgrading() *RayServiceWrapper {
	return w.Condition(rayv1.UpgradeInProgress, metav1.ConditionTrue, rayv1.BothActivePendingClustersExist)
}
