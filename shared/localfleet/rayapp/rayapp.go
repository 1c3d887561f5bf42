// Package rayapp is the Ray Serve application and RayCluster the local fleet runs on real
// Nodes: the Python apps in serveapp/ (versioned:build answers {"version": <args.version>},
// broken:app raises at import), a ConfigMap holding them, a serveConfigV2 for the versioned
// app and a RayCluster spec sized for a 2-CPU Node with the ConfigMap on the head's
// PYTHONPATH. The e2e tests and `rayfleet dev up --ray` share them.
package rayapp

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Version is the Ray the image holds (make ray-image).
const Version = "2.52.0"

// ConfigMapName is the ConfigMap ConfigMap makes and ClusterSpec mounts.
const ConfigMapName = "serveapp"

// mountPath is where the head mounts the Serve apps; it is on PYTHONPATH.
const mountPath = "/opt/serveapp"

// The broken Serve app (serveapp/broken.py): an application entry whose module raises at
// import with BrokenMessage, which Ray reports as DEPLOY_FAILED.
const (
	BrokenApp = `- name: broken
  import_path: broken:app
  route_prefix: /broken
`
	BrokenMessage = "rayfleet test application: broken at import"
)

// apps are the Python files of the Serve apps.
//
//go:embed serveapp/*.py
var apps embed.FS

// ServeConfig is a serveConfigV2 running versioned:build as application "versioned" at /,
// answering {"version": version}.
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
// store; no workers. The Serve apps are mounted from ConfigMap.
func ClusterSpec(image string) rayv1.RayClusterSpec {
	return rayv1.RayClusterSpec{
		RayVersion: Version,
		HeadGroupSpec: rayv1.HeadGroupSpec{
			RayStartParams: map[string]string{
				"num-cpus":            "1",
				"object-store-memory": "104857600",
			},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "ray-head", Image: image, ImagePullPolicy: corev1.PullNever,
					Env: []corev1.EnvVar{
						{Name: "PYTHONPATH", Value: mountPath},
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
					VolumeMounts: []corev1.VolumeMount{{Name: ConfigMapName, MountPath: mountPath}},
				}},
				Volumes: []corev1.Volume{{Name: ConfigMapName, VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName}},
				}}},
			}},
		},
	}
}

// ConfigMap holds the Serve apps' Python files, for ClusterSpec's heads in namespace ns.
func ConfigMap(ns string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns},
		Data:       map[string]string{},
	}
	files, _ := fs.Glob(apps, "serveapp/*.py") // the pattern is valid and the files embedded
	for _, f := range files {
		data, _ := apps.ReadFile(f) // embedded: cannot fail
		cm.Data[path.Base(f)] = string(data)
	}
	return cm
}
