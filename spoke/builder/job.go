package builder

import (
	"fmt"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Redis cleanup Job settings.
const (
	// redisCleanupDeadlineSeconds keeps the cleanup best-effort: after five minutes the Job fails
	// and the finalizer logic decides what to do.
	redisCleanupDeadlineSeconds = 300
	// Retrying the Redis connection 120 times, 500ms apart, gives the cleanup at least 60s.
	redisConnectRetries  = "120"
	redisConnectWaitMs   = "500"
	redisCleanupDocsHint = "To get more information about manually deleting the storage namespace in Redis and removing the RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more details."
)

// redisCleanupScript builds the python program that deletes the cluster's storage namespace from
// Redis with Ray's own helper. It reads the address, credentials and namespace from the env the
// head Pod already has; the username is passed only when REDIS_USERNAME is set, because older Ray
// versions do not accept it.
func redisCleanupScript(withUsername bool) string {
	credentials := "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), "
	if withUsername {
		credentials = "username=os.getenv('REDIS_USERNAME', parsed.username), " + credentials
	}
	statements := []string{
		"from ray._private.gcs_utils import cleanup_redis_storage",
		"from urllib.parse import urlparse",
		"import os",
		"import sys",
		"redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]",
		"redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address",
		"parsed = urlparse(redis_address)",
		"sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, " + credentials +
			"use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None",
	}
	return `echo "` + redisCleanupDocsHint + `" && python -c "` + strings.Join(statements, "; ") + `"`
}

// RedisCleanupJob builds the Job that removes a deleted GCS FT cluster's data from Redis. Its Pod
// is the head Pod reduced to the Ray container (same image, env and volumes, so it reaches Redis
// exactly as the GCS did), running the cleanup script once with small fixed resources and no GPU.
func RedisCleanupJob(rc *rayv1.RayCluster, opts Options) (*batchv1.Job, error) {
	opts = opts.withDefaults()
	pod, err := buildHeadPod(rc, opts)
	if err != nil {
		return nil, fmt.Errorf("build Redis cleanup Job of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	pod.Labels[labels.NodeType] = string(rayv1.RedisCleanupNode)

	ray := pod.Spec.Containers[0]
	ray.Command = opts.shellCommand()
	ray.Args = []string{redisCleanupScript(hasEnv(ray.Env, envRedisUsername))}
	// The Job starts neither raylet nor GCS, so the health probes could only fail.
	ray.LivenessProbe = nil
	ray.ReadinessProbe = nil
	ray.Env = append(ray.Env,
		corev1.EnvVar{Name: "RAY_redis_db_connect_retries", Value: redisConnectRetries},
		corev1.EnvVar{Name: "RAY_redis_db_connect_wait_milliseconds", Value: redisConnectWaitMs})
	ray.Resources = fixedResources("200m", "256Mi")
	pod.Spec.Containers = []corev1.Container{ray}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        RedisCleanupJobName(rc),
			Namespace:   rc.Namespace,
			Labels:      pod.Labels,
			Annotations: pod.Annotations,
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](0),
			ActiveDeadlineSeconds: ptr.To[int64](redisCleanupDeadlineSeconds),
			Template:              corev1.PodTemplateSpec{ObjectMeta: *pod.ObjectMeta.DeepCopy(), Spec: pod.Spec},
		},
	}
	if err := setControllerRef(job, rc); err != nil {
		return nil, fmt.Errorf("build Redis cleanup Job of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	return job, nil
}
