package builder

import (
	"fmt"
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// Environment variables set on Ray containers.
const (
	envRayClusterName          = "RAY_CLUSTER_NAME"
	envRayClusterNamespace     = "RAY_CLUSTER_NAMESPACE"
	envRayIP                   = "RAY_IP"
	envFQRayIP                 = "FQ_RAY_IP"
	envRayPort                 = "RAY_PORT"
	envRayAddress              = "RAY_ADDRESS"
	envRayCloudInstanceID      = "RAY_CLOUD_INSTANCE_ID"
	envRayNodeTypeName         = "RAY_NODE_TYPE_NAME"
	envGeneratedStartCmd       = "KUBERAY_GEN_RAY_START_CMD"
	envUsageStatsInUse         = "RAY_USAGE_STATS_KUBERAY_IN_USE"
	envUsageStatsExtraTags     = "RAY_USAGE_STATS_EXTRA_TAGS"
	envDashboardK8sDiskUsage   = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"
	envTaskWaitForDeathInfo    = "RAY_timeout_ms_task_wait_for_death_info"
	envGCSServerRequestTimeout = "RAY_gcs_server_request_timeout_seconds"
	envServeKVTimeout          = "RAY_SERVE_KV_TIMEOUT_S"
	envAutoscalerV2            = "RAY_enable_autoscaler_v2"
	envRedisAddress            = "RAY_REDIS_ADDRESS"
	envRedisUsername           = "REDIS_USERNAME"
	envRedisPassword           = "REDIS_PASSWORD"
	envExternalStorageNS       = "RAY_external_storage_namespace"
	envGCSReconnectTimeout     = "RAY_gcs_rpc_server_reconnect_timeout_s"
	envAuthMode                = "RAY_AUTH_MODE"
	envAuthToken               = "RAY_AUTH_TOKEN"
	envK8sTokenAuth            = "RAY_ENABLE_K8S_TOKEN_AUTH"
)

// Values KubeRay uses for the variables above.
const (
	localHost = "127.0.0.1"
	// workerGCSReconnectTimeout keeps FT workers alive while a new head comes up (Ray's default
	// of 60s is shorter than a typical head restart).
	workerGCSReconnectTimeout = "600"
	// AuthTokenKey is the Secret key holding the Ray auth token.
	AuthTokenKey = "auth_token"
	// Ray's projected ServiceAccount token for Kubernetes-delegated auth.
	rayTokenVolumeName = "ray-token"
	rayTokenMountPath  = "/var/run/secrets/ray.io/serviceaccount"
)

// creatorKind is the custom resource that created the RayCluster (ray.io/originated-from-crd).
type creatorKind string

const (
	creatorRayCluster creatorKind = "RayCluster"
	creatorRayJob     creatorKind = "RayJob"
	creatorRayService creatorKind = "RayService"
)

// creatorOf reads the creator from the cluster's labels; anything unknown counts as RayCluster.
func creatorOf(rc *rayv1.RayCluster) creatorKind {
	switch k := creatorKind(rc.Labels[labels.OriginatedFromCRD]); k {
	case creatorRayJob, creatorRayService:
		return k
	default:
		return creatorRayCluster
	}
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// addEnvIfMissing appends the variable unless the container already sets it: the user's value wins.
func addEnvIfMissing(c *corev1.Container, name, value string) {
	if !hasEnv(c.Env, name) {
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: path},
	}}
}

func labelPath(key string) string {
	return fmt.Sprintf("metadata.labels['%s']", key)
}

// rayNodeEnv is the context the Ray container's environment is derived from.
type rayNodeEnv struct {
	nodeType rayv1.RayNodeType
	fqdn     string
	port     string
	startCmd string
	creator  creatorKind
	opts     Options
}

// setRayContainerEnv adds the environment KubeRay gives every Ray container: where the head is,
// the cluster identity (from the Pod's own labels, so it can't drift), the generated start
// command, usage-stats tags and, for RayService clusters, shorter failure timeouts.
func setRayContainerEnv(c *corev1.Container, e rayNodeEnv) {
	for _, d := range e.opts.DefaultContainerEnvs {
		if !hasEnv(c.Env, d.Name) {
			c.Env = append(c.Env, *d.DeepCopy())
		}
	}
	ip := localHost
	if e.nodeType == rayv1.WorkerNode {
		ip = e.fqdn
		c.Env = append(c.Env,
			corev1.EnvVar{Name: envFQRayIP, Value: e.fqdn},
			corev1.EnvVar{Name: envRayIP, Value: shortHost(e.fqdn)})
	}
	c.Env = append(c.Env,
		fieldEnv(envRayClusterName, labelPath(labels.Cluster)),
		fieldEnv(envRayClusterNamespace, "metadata.namespace"),
		fieldEnv(envRayCloudInstanceID, "metadata.name"),
		fieldEnv(envRayNodeTypeName, labelPath(labels.Group)),
		corev1.EnvVar{Name: envGeneratedStartCmd, Value: e.startCmd})
	addEnvIfMissing(c, envRayPort, e.port)
	if e.creator == creatorRayService {
		addEnvIfMissing(c, envTaskWaitForDeathInfo, "0")
		addEnvIfMissing(c, envGCSServerRequestTimeout, "5")
		addEnvIfMissing(c, envServeKVTimeout, "5")
	}
	addEnvIfMissing(c, envRayAddress, ip+":"+e.port)
	addEnvIfMissing(c, envUsageStatsInUse, "1")
	if e.nodeType == rayv1.HeadNode {
		c.Env = append(c.Env, corev1.EnvVar{
			Name:  envUsageStatsExtraTags,
			Value: fmt.Sprintf("kuberay_version=%s;kuberay_crd=%s", e.opts.KubeRayVersion, e.creator),
		})
	}
	addEnvIfMissing(c, envDashboardK8sDiskUsage, "1")
}

// setInitContainerEnv tells an init container where the head is: workers wait for its GCS and a
// TLS-enabled head signs its certificate for that name.
func setInitContainerEnv(c *corev1.Container, fqdn string) {
	c.Env = append(c.Env,
		corev1.EnvVar{Name: envFQRayIP, Value: fqdn},
		corev1.EnvVar{Name: envRayIP, Value: shortHost(fqdn)})
}

// externalStorageNamespace is the Redis namespace the head's GCS stores its state under: the
// cluster UID unless the annotation or gcsFaultToleranceOptions names one.
func externalStorageNamespace(rc *rayv1.RayCluster) string {
	ns := string(rc.UID)
	if v, ok := rc.Annotations[labels.ExternalStorageNamespace]; ok {
		ns = v
	}
	if o := rc.Spec.GcsFaultToleranceOptions; o != nil && o.ExternalStorageNamespace != "" {
		ns = o.ExternalStorageNamespace
	}
	return ns
}

// configureGCSFaultTolerance records FT on the head Pod and wires Redis: the address and
// credentials as env (credentials referenced from rayStartParams as $REDIS_* so secrets never
// appear in the command line), the storage namespace, and a longer GCS reconnect window on workers.
func configureGCSFaultTolerance(tmpl *corev1.PodTemplateSpec, rc *rayv1.RayCluster, nodeType rayv1.RayNodeType, headParams map[string]string) {
	enabled := rayspec.GCSFaultTolerance(&rc.Spec, rc.Annotations)
	if nodeType == rayv1.HeadNode {
		tmpl.Annotations[labels.FTEnabled] = strconv.FormatBool(enabled)
	}
	if !enabled {
		return
	}
	c := &tmpl.Spec.Containers[0]
	if nodeType == rayv1.WorkerNode {
		addEnvIfMissing(c, envGCSReconnectTimeout, workerGCSReconnectTimeout)
		return
	}
	storageNS := externalStorageNamespace(rc)
	tmpl.Annotations[labels.ExternalStorageNamespace] = storageNS
	addEnvIfMissing(c, envExternalStorageNS, storageNS)

	opts := rc.Spec.GcsFaultToleranceOptions
	if opts == nil {
		// Legacy annotation-driven FT: a password given inline in rayStartParams is exported so the
		// Redis cleanup Job can authenticate too.
		if pw, ok := headParams[paramRedisPassword]; ok && !hasEnv(c.Env, envRedisPassword) {
			c.Env = append(c.Env, corev1.EnvVar{Name: envRedisPassword, Value: pw})
		}
		return
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: envRedisAddress, Value: opts.RedisAddress})
	if u := opts.RedisUsername; u != nil {
		headParams[paramRedisUsername] = "$" + envRedisUsername
		c.Env = append(c.Env, corev1.EnvVar{Name: envRedisUsername, Value: u.Value, ValueFrom: u.ValueFrom.DeepCopy()})
	}
	if p := opts.RedisPassword; p != nil {
		headParams[paramRedisPassword] = "$" + envRedisPassword
		c.Env = append(c.Env, corev1.EnvVar{Name: envRedisPassword, Value: p.Value, ValueFrom: p.ValueFrom.DeepCopy()})
	}
}

// setAuthEnv gives a container the token-auth mode and its credential: the projected
// ServiceAccount token for Kubernetes auth, else the token from the auth Secret.
func setAuthEnv(c *corev1.Container, rc *rayv1.RayCluster) {
	addEnvIfMissing(c, envAuthMode, string(rayv1.AuthModeToken))
	if rayspec.K8sTokenAuth(rc.Spec.AuthOptions) {
		addEnvIfMissing(c, envK8sTokenAuth, "true")
		for _, m := range c.VolumeMounts {
			if m.Name == rayTokenVolumeName {
				return
			}
		}
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
			Name: rayTokenVolumeName, MountPath: rayTokenMountPath, ReadOnly: true,
		})
		return
	}
	if hasEnv(c.Env, envAuthToken) {
		return
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: envAuthToken, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: AuthSecretName(rc)},
			Key:                  AuthTokenKey,
		},
	}})
}

// configureTokenAuth applies token auth to the Ray container and the wait-gcs-ready init
// container (its health check talks to the GCS too), adding the projected token volume when
// Kubernetes auth is used.
func configureTokenAuth(spec *corev1.PodSpec, rc *rayv1.RayCluster) {
	setAuthEnv(&spec.Containers[0], rc)
	if rayspec.K8sTokenAuth(rc.Spec.AuthOptions) && !hasVolume(spec, rayTokenVolumeName) {
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name: rayTokenVolumeName,
			VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{
					ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"},
				}},
			}},
		})
	}
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == WaitGCSContainerName {
			setAuthEnv(&spec.InitContainers[i], rc)
		}
	}
}

func hasVolume(spec *corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}
