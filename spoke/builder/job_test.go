package builder

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// KubeRay v1.6.2's cleanup command, spelled out to pin the behaviour.
const (
	cleanupPrefix = `echo "To get more information about manually deleting the storage namespace in Redis and removing the RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more details." && ` +
		`python -c "from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; import os; import sys; ` +
		`redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; ` +
		`redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; parsed = urlparse(redis_address); `
	cleanupCall         = `sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None"`
	cleanupCallWithUser = `sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, username=os.getenv('REDIS_USERNAME', parsed.username), password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None"`
)

func TestRedisCleanupJob(t *testing.T) {
	ft := func(username bool) func(s *rayv1.RayClusterSpec) {
		return func(s *rayv1.RayClusterSpec) {
			s.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{RedisAddress: "redis:6379"}
			if username {
				s.GcsFaultToleranceOptions.RedisUsername = &rayv1.RedisCredential{Value: "u"}
			}
		}
	}
	tests := []struct {
		name     string
		cluster  *rayv1.RayCluster
		wantName string
		wantArgs string
	}{
		{
			name:     "password only",
			cluster:  newCluster("rc").Autoscaling("").Spec(ft(false)).Obj(),
			wantName: "rc-redis-cleanup",
			wantArgs: cleanupPrefix + cleanupCall,
		},
		{
			name:     "with a Redis username",
			cluster:  newCluster("rc").Spec(ft(true)).Obj(),
			wantName: "rc-redis-cleanup",
			wantArgs: cleanupPrefix + cleanupCallWithUser,
		},
		{
			name:     "long names keep their last 63 characters",
			cluster:  newCluster(strings.Repeat("d", 53)).Annotation(labels.FTEnabled, "true").Obj(),
			wantName: strings.Repeat("d", 49) + "-redis-cleanup",
			wantArgs: cleanupPrefix + cleanupCall,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := tt.cluster
			opts := DefaultOptions()
			opts.HeadSidecars = []corev1.Container{{Name: "sidecar"}}
			job, err := RedisCleanupJob(rc, opts)
			if err != nil {
				t.Fatal(err)
			}
			if job.Name != tt.wantName || job.Namespace != "ns" {
				t.Errorf("job %s/%s, want ns/%s", job.Namespace, job.Name, tt.wantName)
			}
			wantOwner := []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))}
			if diff := cmp.Diff(wantOwner, job.OwnerReferences); diff != "" {
				t.Errorf("owner (-want +got):\n%s", diff)
			}
			if job.Labels[labels.NodeType] != "redis-cleanup" || job.Labels[labels.Cluster] != rc.Name {
				t.Errorf("job labels %v do not select it as the cluster's cleanup job", job.Labels)
			}
			if diff := cmp.Diff(job.Labels, job.Spec.Template.Labels); diff != "" {
				t.Errorf("template labels differ from job labels:\n%s", diff)
			}
			if job.Annotations[labels.FTEnabled] != "true" || job.Annotations[labels.UpgradeStrategyRecreateHash] != "" {
				t.Errorf("job annotations = %v, want the head's (FT on, no recreate hash)", job.Annotations)
			}
			if *job.Spec.BackoffLimit != 0 || *job.Spec.ActiveDeadlineSeconds != 300 {
				t.Errorf("backoffLimit=%d activeDeadlineSeconds=%d, want 0 and 300", *job.Spec.BackoffLimit, *job.Spec.ActiveDeadlineSeconds)
			}
			spec := job.Spec.Template.Spec
			if spec.RestartPolicy != corev1.RestartPolicyNever || len(spec.Containers) != 1 {
				t.Fatalf("restartPolicy=%q containers=%d, want Never and only the Ray container", spec.RestartPolicy, len(spec.Containers))
			}
			c := spec.Containers[0]
			if diff := cmp.Diff([]string{"/bin/bash", "-c", "--"}, c.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{tt.wantArgs}, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if c.LivenessProbe != nil || c.ReadinessProbe != nil {
				t.Errorf("probes are set on the cleanup container")
			}
			if diff := cmp.Diff(fixedResources("200m", "256Mi"), c.Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			for k, v := range map[string]string{
				"RAY_redis_db_connect_retries": "120", "RAY_redis_db_connect_wait_milliseconds": "500", envExternalStorageNS: "uid-1",
			} {
				if got := envValue(&c, k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
	t.Run("login shell", func(t *testing.T) {
		opts := DefaultOptions()
		opts.LoginShell = true
		job, err := RedisCleanupJob(newCluster("rc").Annotation(labels.FTEnabled, "true").Obj(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := job.Spec.Template.Spec.Containers[0].Command; !cmp.Equal(got, []string{"/bin/bash", "-cl", "--"}) {
			t.Errorf("command = %q", got)
		}
	})
}
