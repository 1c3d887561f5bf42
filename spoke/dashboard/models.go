package dashboard

// The Serve REST models hold the subset of Ray's ServeInstanceDetails (the answer of
// GET /api/serve/applications/) that a RayService reconciler reads. Field names and JSON keys
// follow Ray's schema; everything else the dashboard sends (controller and proxy details,
// deployment configs, most of each replica's details) is ignored on decode.

// ServeDetails is the Serve instance of one Ray cluster, as its dashboard reports it.
type ServeDetails struct {
	// DeployMode is MULTI_APP while Serve is not running; Ray 2.52 deprecated the field and
	// leaves it out once Serve runs (e2e/ray), so nothing may depend on it.
	DeployMode string `json:"deploy_mode,omitempty"`
	// TargetCapacity is the target_capacity of the last declarative config, a percentage; nil
	// when none was set.
	TargetCapacity *float64 `json:"target_capacity,omitempty"`
	// Applications maps application names to their details; empty, never nil, after a
	// successful ServeDetails call, including when Serve is not running.
	Applications map[string]ApplicationDetails `json:"applications"`
}

// ApplicationDetails is one Serve application.
type ApplicationDetails struct {
	// Name is the application's name, the key it has in ServeDetails.Applications.
	Name string `json:"name,omitempty"`
	// Status is one of the AppStatus constants.
	Status string `json:"status"`
	// Message explains the status, typically the error of a failed deployment.
	Message string `json:"message,omitempty"`
	// RoutePrefix is the HTTP route of the application's ingress; empty when it has none.
	RoutePrefix string `json:"route_prefix,omitempty"`
	// DocsPath is the path of the application's OpenAPI docs, when it serves any.
	DocsPath string `json:"docs_path,omitempty"`
	// Deployments maps deployment names to their status.
	Deployments map[string]DeploymentDetails `json:"deployments"`
}

// DeploymentDetails is one deployment of a Serve application.
type DeploymentDetails struct {
	// Name is the deployment's name, the key it has in ApplicationDetails.Deployments.
	Name string `json:"name,omitempty"`
	// Status is one of the DeploymentStatus constants.
	Status string `json:"status,omitempty"`
	// Message explains the status.
	Message string `json:"message,omitempty"`
	// TargetNumReplicas is Ray's target_num_replicas: how many replicas Serve currently aims
	// for, which moves with autoscaling and target_capacity.
	TargetNumReplicas int32 `json:"target_num_replicas,omitempty"`
	// Replicas are Ray's replicas: the deployment's live replicas.
	Replicas []ReplicaDetails `json:"replicas,omitempty"`
}

// ReplicaDetails is one replica of a deployment, the part of Ray's ReplicaDetails the spoke reads.
type ReplicaDetails struct {
	// ReplicaID is Ray's replica_id, unique within the deployment.
	ReplicaID string `json:"replica_id,omitempty"`
	// State is one of the ReplicaState constants.
	State string `json:"state,omitempty"`
}

// DeployModeMultiApp is the deploy_mode Ray reports for a cluster where Serve is not running,
// the only mode KubeRay's serveConfigV2 uses.
const DeployModeMultiApp = "MULTI_APP"

// Application statuses, Ray's ApplicationStatus values.
const (
	// AppStatusNotStarted: the config was accepted and the application is not being built yet.
	AppStatusNotStarted = "NOT_STARTED"
	// AppStatusDeploying: the application's deployments are being created or updated.
	AppStatusDeploying = "DEPLOYING"
	// AppStatusRunning: every deployment is healthy; the only status a RayService counts as ready.
	AppStatusRunning = "RUNNING"
	// AppStatusDeployFailed: the application could not be deployed (import error, failing
	// constructor, unschedulable replicas); Ray does not retry on its own.
	AppStatusDeployFailed = "DEPLOY_FAILED"
	// AppStatusUnhealthy: a deployment of a deployed application failed its health checks.
	AppStatusUnhealthy = "UNHEALTHY"
	// AppStatusDeleting: the application is being removed, for example because a newer config
	// no longer lists it.
	AppStatusDeleting = "DELETING"
)

// Deployment statuses, Ray's DeploymentStatus values.
const (
	// DeploymentStatusUpdating: replicas are being started or replaced for a new config.
	DeploymentStatusUpdating = "UPDATING"
	// DeploymentStatusHealthy: the deployment has its target number of healthy replicas.
	DeploymentStatusHealthy = "HEALTHY"
	// DeploymentStatusUnhealthy: replicas fail their health checks or crashed.
	DeploymentStatusUnhealthy = "UNHEALTHY"
	// DeploymentStatusDeployFailed: replicas could not be started for the current config.
	DeploymentStatusDeployFailed = "DEPLOY_FAILED"
	// DeploymentStatusUpscaling: the autoscaler or a new target capacity adds replicas.
	DeploymentStatusUpscaling = "UPSCALING"
	// DeploymentStatusDownscaling: the autoscaler or a new target capacity removes replicas.
	DeploymentStatusDownscaling = "DOWNSCALING"
)

// Replica states, Ray's ReplicaState values.
const (
	// ReplicaStateStarting: the replica's actor is being created or its constructor runs.
	ReplicaStateStarting = "STARTING"
	// ReplicaStateUpdating: the replica takes a new user_config or other lightweight update.
	ReplicaStateUpdating = "UPDATING"
	// ReplicaStateRecovering: the Serve controller restarted and is finding the replica again.
	ReplicaStateRecovering = "RECOVERING"
	// ReplicaStateRunning: the replica passed its health checks and takes requests.
	ReplicaStateRunning = "RUNNING"
	// ReplicaStateStopping: the replica is shutting down.
	ReplicaStateStopping = "STOPPING"
	// ReplicaStatePendingMigration: the replica is on a draining node and awaits its successor.
	ReplicaStatePendingMigration = "PENDING_MIGRATION"
)
