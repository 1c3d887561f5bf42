// Package labels holds the label and annotation keys RayFleet reads and writes. The ray.io keys
// are KubeRay's: a KubeRay user's selectors, dashboards and scripts keep working unchanged.
// It imports no other RayFleet package; like all of shared/, never hub/, spoke/ or cmd/.
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

// Keys of the fleet API (fleet.rayfleet.io), written by the hub and read by the hub, the spoke
// and the CLI. Every one is declared here (the join contract's Secret label and key are in
// shared/api/fleet/v1alpha1, next to the MemberCluster that names the Secret).
const (
	// FleetKeyPrefix prefixes every label, annotation and finalizer key the fleet API owns. The
	// hub never copies keys with it from a hub RayService to its member copies: its own keys
	// mean nothing on a member, and origin keys set by a user must not forge a copy's origin.
	FleetKeyPrefix = "fleet.rayfleet.io/"
	// PlacementPolicy is the annotation on a hub RayService naming the PlacementPolicy (in the
	// RayService's namespace) that places it; without it the namespace's "default" policy
	// applies, else the hub's built-in default of one cluster.
	PlacementPolicy = FleetKeyPrefix + "placement-policy"
	// OriginNamespace, OriginName and OriginUID are labels on a member RayService naming the hub
	// RayService it was propagated from. They mark the copy as the hub's (a member RayService
	// without them is never touched) and let the hub map a member event back to its origin by
	// label selection. All three fit label values: namespaces are DNS labels, the hub places
	// only RayServices that pass validation (names of at most 47 characters), UIDs are 36.
	OriginNamespace = FleetKeyPrefix + "origin-namespace"
	OriginName      = FleetKeyPrefix + "origin-name"
	OriginUID       = FleetKeyPrefix + "origin-uid"
	// OriginHub is the label on a member RayService naming the hub that made it (the hub's
	// --hub-name). Two hubs sharing a member treat each other's copies as foreign, and neither
	// one's orphan sweep touches the other's.
	OriginHub = FleetKeyPrefix + "origin-hub"
	// OnDelete is the annotation on a hub RayService saying what deleting it does to its member
	// copies: OnDeleteOrphan keeps them (their origin labels removed, so no hub touches them);
	// anything else, or none, deletes them.
	OnDelete = FleetKeyPrefix + "on-delete"
	// SpecHash is the annotation on a member RayService holding the hash of the hub spec it was
	// applied from (overrides included), so the hub sees which spec each member runs. An
	// annotation rather than a label because hashes may exceed 63 characters.
	SpecHash = FleetKeyPrefix + "spec-hash"
	// BaseSpecHash is the annotation on a member RayService whose capacity the hub moves
	// (a capacity-following blue/green): the SpecHash of its copy at full size, which SpecHash
	// then is not. The copy runs that spec resized in place, and counts as running it.
	BaseSpecHash = FleetKeyPrefix + "base-spec-hash"
	// MemberCleanupFinalizer holds a hub RayService until the hub has deleted its member copies.
	MemberCleanupFinalizer = FleetKeyPrefix + "member-cleanup"
	// Revision is the annotation on a member RayService naming the ControllerRevision of the
	// hub RayService the hub applied there.
	Revision = FleetKeyPrefix + "revision"
	// RunningClusterHash is the annotation the spoke keeps on a member RayService the hub made:
	// rayspec.ClusterSpecHash of the spec its active RayCluster was built from. With
	// RunningServeConfigHash it tells the hub what the member really runs, not only what it was
	// asked to run.
	RunningClusterHash = FleetKeyPrefix + "running-cluster-hash"
	// RunningServeConfigHash is the annotation the spoke keeps on a member RayService the hub
	// made: rayspec.ServeConfigHash of the serveConfigV2 last applied to its active RayCluster.
	RunningServeConfigHash = FleetKeyPrefix + "running-serve-config-hash"
	// RunningReplicas is the annotation the spoke keeps on a member RayService the hub made: how
	// many worker Pods per group and Serve replicas per deployment of its active RayCluster
	// run, and how many worker Pods it holds, as shared/runningreplicas formats it. The hub
	// admits traffic onto a copy by it and bounds the capacity it gives the other colour.
	RunningReplicas = FleetKeyPrefix + "running-replicas"
	// Paused is the annotation on a hub RayService that halts its rollout between clusters
	// ("true"); nothing in flight is undone.
	Paused = FleetKeyPrefix + "paused"
	// ApprovedStage is the annotation on a RayServiceBinding approving one stage of one
	// rollout, "<revision>/<stage>", written by `rayfleet rollout approve`.
	ApprovedStage = FleetKeyPrefix + "approved-stage"
	// ServeAddress is the annotation the spoke keeps on a member RayService the hub made:
	// where the member serves it from outside the cluster, "host:port" (the serve Service's
	// LoadBalancer ingress, else a NodePort on the Nodes' address). The hub routes traffic to it.
	ServeAddress = FleetKeyPrefix + "serve-address"
	// NoServeAddress is the annotation the spoke keeps instead of ServeAddress when the member
	// cannot be reached from outside: why, in words.
	NoServeAddress = FleetKeyPrefix + "no-serve-address"
	// ServeExport is the annotation the hub puts on a member copy when the policy's traffic
	// uses ServiceImport backends: the member's name. The spoke then exports the serve Service
	// as names.ServeExport, and for older hubs names.LegacyServeExport (each a Service and a
	// Multi-Cluster Services ServiceExport).
	ServeExport = FleetKeyPrefix + "serve-export"
	// LegacyServeExport is the annotation ("true") on the export Service and ServiceExport the
	// spoke keeps under names.LegacyServeExport for hubs that route to that name.
	LegacyServeExport = FleetKeyPrefix + "legacy-serve-export"
	// TrafficCluster is the label on a backend Service and EndpointSlice the hub keeps in the
	// traffic cluster, naming the member cluster it stands for.
	TrafficCluster = FleetKeyPrefix + "traffic-cluster"
	// HubNamespace is the label on a member Namespace saying the hub may write there:
	// HubNamespaceCreated, set by the hub only on a namespace it creates, or
	// HubNamespaceAllowed, set by the member's admin (or `rayfleet join` on namespaces already
	// holding the hub's copies). The member's guard refuses the hub's writes elsewhere.
	HubNamespace = FleetKeyPrefix + "hub-namespace"
)

// Values of the fleet API.
const (
	// HubFieldManager is the server-side apply field manager of everything the hub writes to
	// members; drift under other managers is reverted by applying again.
	HubFieldManager = "rayfleet-hub"
	// SpokeFieldManager is the field manager of every write the spoke makes on its member.
	SpokeFieldManager = "rayfleet-spoke"
	// DefaultHubNamespace is the hub's namespace unless configured otherwise: it holds the
	// members' kubeconfig Secrets and the hub's leader-election lease.
	DefaultHubNamespace = "rayfleet-system"
	// DefaultHubName is the hub's identity in its copies' OriginHub label unless configured.
	DefaultHubName = "rayfleet"
	// OnDeleteOrphan is the OnDelete value that keeps the member copies.
	OnDeleteOrphan = "orphan"
	// HubNamespaceCreated is the HubNamespace value on a namespace the hub created.
	HubNamespaceCreated = "created"
	// HubNamespaceAllowed is the HubNamespace value on a namespace the member's admin lets the
	// hub write into.
	HubNamespaceAllowed = "allowed"
)
