//go:build e2e

package fleetray

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// rayVersion is the Ray the image holds (make ray-image).
const rayVersion = "2.52.0"

// serveAppMount is where the head mounts the test Serve apps' ConfigMap; it is on PYTHONPATH.
const serveAppMount = "/opt/serveapp"

// serveConfig runs the test app versioned:build (e2e/testdata/serveapp) answering version.
func serveConfig(version string) string {
	return fmt.Sprintf(`applications:
- name: versioned
  import_path: versioned:build
  route_prefix: /
  args:
    version: %s
`, version)
}

// clusterSpec is a head-only RayCluster sized for a 2-CPU Node: 250m requested, one logical
// CPU for Ray (the app's replica takes 0.1), a 100 MiB object store, the test apps mounted.
func clusterSpec(image string) rayv1.RayClusterSpec {
	return rayv1.RayClusterSpec{
		RayVersion: rayVersion,
		HeadGroupSpec: rayv1.HeadGroupSpec{
			RayStartParams: map[string]string{"num-cpus": "1", "object-store-memory": "104857600"},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "ray-head", Image: image, ImagePullPolicy: corev1.PullNever,
					Env: []corev1.EnvVar{
						{Name: "PYTHONPATH", Value: serveAppMount},
						// The dashboard's module processes miss the 30 s default on a loaded
						// 2-core machine, and the head then never serves.
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
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "serveapp"}},
				}}},
			}},
		},
	}
}

// serveAppConfigMap holds e2e/testdata/serveapp's Python files.
func serveAppConfigMap(t *testing.T, ns string) *corev1.ConfigMap {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "e2e", "testdata", "serveapp", "*.py"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Serve apps in e2e/testdata/serveapp: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "serveapp", Namespace: ns}, Data: map[string]string{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[filepath.Base(f)] = string(b)
	}
	return cm
}

// logHeadMemory logs the memory of the head containers of ns on member (cgroup v1, page cache
// included), now and at their peak.
func logHeadMemory(t *testing.T, f *localfleet.Fleet, member, ns string) {
	t.Helper()
	c := f.Members[member]
	var pods corev1.PodList
	if err := c.Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"ray.io/node-type": "head"}); err != nil {
		t.Logf("head memory on %s: %v", member, err)
		return
	}
	for _, p := range pods.Items {
		if len(p.Status.ContainerStatuses) == 0 {
			continue
		}
		pid, err := c.ContainerPID(p.Status.ContainerStatuses[0].ContainerID)
		if err != nil {
			t.Logf("head memory of %s on %s: %v", p.Name, member, err)
			continue
		}
		dir, err := memoryCgroup(pid)
		if err != nil {
			t.Logf("head memory of %s on %s: %v", p.Name, member, err)
			continue
		}
		t.Logf("head %s on %s: %s now, %s peak", p.Name, member,
			mib(filepath.Join(dir, "memory.usage_in_bytes")), mib(filepath.Join(dir, "memory.max_usage_in_bytes")))
	}
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
	fh, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	defer fh.Close()
	s := bufio.NewScanner(fh)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			return filepath.Join("/sys/fs/cgroup/memory", parts[2]), nil
		}
	}
	return "", fmt.Errorf("process %d has no v1 memory cgroup", pid)
}
