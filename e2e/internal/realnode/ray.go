package realnode

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// RayVersion is the Ray the image holds (make ray-image).
const RayVersion = "2.52.0"

// ServeAppConfigMapName is the ConfigMap ServeAppConfigMap makes and ClusterSpec mounts.
const ServeAppConfigMapName = "serveapp"

// serveAppMount is where the head mounts the test Serve apps; it is on PYTHONPATH.
const serveAppMount = "/opt/serveapp"

// The broken Serve app (e2e/testdata/serveapp/broken.py): an application entry whose module
// raises at import with BrokenMessage, which Ray reports as DEPLOY_FAILED.
const (
	BrokenApp = `- name: broken
  import_path: broken:app
  route_prefix: /broken
`
	BrokenMessage = "rayfleet test application: broken at import"
)

// ServeConfig is a serveConfigV2 running the test app versioned:build
// (e2e/testdata/serveapp) as application "versioned" at /, answering {"version": version}.
func ServeConfig(version string) string {
	return fmt.Sprintf(`applications:
- name: versioned
  import_path: versioned:build
  route_prefix: /
  args:
    version: %s
`, version)
}

// ClusterSpec is a RayCluster sized for a 2-CPU Node that may hold two of them: the head
// requests 250m and offers Ray one logical CPU (Serve replicas take 0.1), a 100 MiB object
// store; no workers. The test Serve apps are mounted from ServeAppConfigMap.
func ClusterSpec(image string) rayv1.RayClusterSpec {
	return rayv1.RayClusterSpec{
		RayVersion: RayVersion,
		HeadGroupSpec: rayv1.HeadGroupSpec{
			RayStartParams: map[string]string{
				"num-cpus":            "1",
				"object-store-memory": "104857600",
			},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "ray-head", Image: image, ImagePullPolicy: corev1.PullNever,
					Env: []corev1.EnvVar{
						{Name: "PYTHONPATH", Value: serveAppMount},
						// The dashboard gives each of its module processes 30 s to start and,
						// when one misses it (routine on a loaded 2-core machine), never
						// serves: the head stays unready until its liveness probe kills it.
						{Name: "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT", Value: "300"},
					},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("250m"),
							corev1.ResourceMemory: resource.MustParse("1Gi"),
						},
						Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "serveapp", MountPath: serveAppMount}},
				}},
				Volumes: []corev1.Volume{{Name: "serveapp", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ServeAppConfigMapName}},
				}}},
			}},
		},
	}
}

// ServeAppConfigMap holds e2e/testdata/serveapp's Python files, for ClusterSpec's heads in ns.
func ServeAppConfigMap(t testing.TB, ns string) *corev1.ConfigMap {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "e2e", "testdata", "serveapp", "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Serve apps in e2e/testdata/serveapp: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ServeAppConfigMapName, Namespace: ns}, Data: map[string]string{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[filepath.Base(f)] = string(b)
	}
	return cm
}

// HeadMemory says how much memory the first container of pod on c holds now and held at its
// peak (its cgroup v1, page cache included), or why it cannot tell.
func HeadMemory(c *localcluster.Cluster, pod *corev1.Pod) string {
	if len(pod.Status.ContainerStatuses) == 0 {
		return "no container yet"
	}
	pid, err := c.ContainerPID(pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		return err.Error()
	}
	dir, err := memoryCgroup(pid)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s now, %s peak (cgroup, page cache included)",
		mib(filepath.Join(dir, "memory.usage_in_bytes")), mib(filepath.Join(dir, "memory.max_usage_in_bytes")))
}

// mib reads a byte count from file as MiB.
func mib(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// memoryCgroup is the cgroup v1 memory directory of process pid.
func memoryCgroup(pid int) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			return filepath.Join("/sys/fs/cgroup/memory", parts[2]), nil
		}
	}
	return "", fmt.Errorf("process %d has no v1 memory cgroup", pid)
}
