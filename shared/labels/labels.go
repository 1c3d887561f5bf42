// Package labels holds the label and annotation keys RayFleet reads and writes. The ray.io keys
// are KubeRay's: a KubeRay user's selectors, dashboards and scripts keep working unchanged.
package labels

// Labels KubeRay puts on every object it creates for a RayCluster.
const (
	// Cluster names the RayCluster a Pod or Service belongs to.
	Cluster = "ray.io/cluster"
	// NodeType is "head" or "worker" (rayv1.RayNodeType).
	NodeType = "ray.io/node-type"
	// Group is the worker group name, or HeadGroupValue for the head.
	Group = "ray.io/group"
	// IsRayNode is "yes" on every Ray node Pod.
	IsRayNode = "ray.io/is-ray-node"
	// Identifier is "<cluster>-<node-type>".
	Identifier = "ray.io/identifier"
	// Serve is "true" on Pods that should receive Serve traffic.
	Serve = "ray.io/serve"
	// HeadlessWorkerService marks the headless Service of multi-host worker groups.
	HeadlessWorkerService = "ray.io/headless-worker-svc"
	// OriginatedFromCRName names the RayService or RayJob that created a RayCluster.
	OriginatedFromCRName = "ray.io/originated-from-cr-name"
	// OriginatedFromCRD is the kind ("RayService", "RayJob") that created a RayCluster.
	OriginatedFromCRD = "ray.io/originated-from-crd"
	// WorkerReplicaName is the unique name of a multi-host replica group.
	WorkerReplicaName = "ray.io/worker-group-replica-name"
	// WorkerReplicaIndex is the index of a multi-host replica group in its worker group.
	WorkerReplicaIndex = "ray.io/worker-group-replica-index"
	// HostIndex is the index of a Pod inside its multi-host replica group.
	HostIndex = "ray.io/replica-host-index"
	// AppName is app.kubernetes.io/name, always ApplicationNameValue.
	AppName = "app.kubernetes.io/name"
	// CreatedBy is app.kubernetes.io/created-by, always CreatedByValue.
	CreatedBy = "app.kubernetes.io/created-by"
)

// Annotations KubeRay reads or writes.
const (
	// FTEnabled is the legacy GCS fault-tolerance switch on a RayCluster.
	FTEnabled = "ray.io/ft-enabled"
	// ExternalStorageNamespace overrides the GCS FT storage namespace.
	ExternalStorageNamespace = "ray.io/external-storage-namespace"
	// GCSFTDeletionTimeout overrides how long the Redis cleanup may block deletion (seconds).
	GCSFTDeletionTimeout = "ray.io/gcs-ft-deletion-timeout"
	// OverwriteContainerCmd leaves the Ray container's command alone ("true").
	OverwriteContainerCmd = "ray.io/overwrite-container-cmd"
	// EnableServeService asks for the serve Service on a standalone RayCluster.
	EnableServeService = "ray.io/enable-serve-service"
	// DisableProvisionedHeadRestart keeps a provisioned cluster's head from being recreated.
	DisableProvisionedHeadRestart = "ray.io/disable-provisioned-head-restart"
	// HashWithoutReplicas is the Pod annotation used by KubeRay to detect template changes.
	HashWithoutReplicas = "ray.io/hash-without-replicas-and-workers-to-delete"
	// UpgradeStrategyRecreateHash is the Pod annotation that drives Recreate upgrades.
	UpgradeStrategyRecreateHash = "ray.io/upgrade-strategy-recreate-hash"
	// NumWorkerGroups records how many worker groups the spec had when the Pod was built.
	NumWorkerGroups = "ray.io/num-worker-groups"
	// KubeRayVersion records the operator version that built the object.
	KubeRayVersion = "ray.io/kuberay-version"
	// InitializingTimeout bounds how long a RayService may initialize.
	InitializingTimeout = "ray.io/initializing-timeout"
	// PriorityClassName and GangSchedulingEnabled are batch-scheduler hints kept as-is.
	PriorityClassName     = "ray.io/priority-class-name"
	GangSchedulingEnabled = "ray.io/gang-scheduling-enabled"
)

// Annotations RayFleet adds of its own.
const (
	// DeleteAfter is the time (RFC 3339) after which a RayService's dangling RayCluster is
	// deleted; kept on the RayCluster so a restarted spoke neither deletes early nor forgets.
	DeleteAfter = "rayfleet.io/delete-after"
)

// Values used with the keys above.
const (
	// HeadGroupValue is the ray.io/group value of the head Pod.
	HeadGroupValue = "headgroup"
	// ApplicationNameValue is the app.kubernetes.io/name value on every owned object.
	ApplicationNameValue = "kuberay"
	// CreatedByValue is the app.kubernetes.io/created-by value; kept as KubeRay's so that
	// tools which select on it still find the objects.
	CreatedByValue = "kuberay-operator"
	// True and False are the string booleans used by KubeRay's labels and annotations.
	True  = "true"
	False = "false"
)

// Finalizers.
const (
	// GCSFTRedisCleanupFinalizer holds a GCS FT RayCluster until its Redis data is cleaned up.
	GCSFTRedisCleanupFinalizer = "ray.io/gcs-ft-redis-cleanup-finalizer"
	// RayServiceFinalizer holds a RayService until its RayClusters are deleted.
	RayServiceFinalizer = "ray.io/rayservice-finalizer"
)

// ControllerName is the value of spec.managedBy that hands a RayCluster to KubeRay (and so to us).
const ControllerName = "ray.io/kuberay-operator"

// KubeRayVersionValue is the KubeRay release whose behaviour the spoke reproduces; it is written
// where KubeRay writes its version, so upgrades from KubeRay do not recreate Pods.
const KubeRayVersionValue = "v1.6.2"
