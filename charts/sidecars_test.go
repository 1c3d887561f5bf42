package charts_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// spokeConfigArg is the --config the spoke chart passes when it renders sidecars.
const spokeConfigArg = "--config=/etc/rayfleet-spoke/config.yaml"

// operatorConfig is what the spoke reads from --config, decoded strictly so that a field the
// chart renders and the spoke does not know fails here.
type operatorConfig struct {
	metav1.TypeMeta         `json:",inline"`
	HeadSidecarContainers   []corev1.Container `json:"headSidecarContainers,omitempty"`
	WorkerSidecarContainers []corev1.Container `json:"workerSidecarContainers,omitempty"`
}

func TestSpokeSidecars(t *testing.T) {
	fluentbit := corev1.Container{
		Name: "fluentbit", Image: "fluent/fluent-bit:1.9.6",
		VolumeMounts: []corev1.VolumeMount{{Name: "ray-logs", MountPath: "/tmp/ray"}},
	}
	shipper := corev1.Container{Name: "shipper", Image: "busybox", Args: []string{"--to", "collector:24224"}}
	tests := []struct {
		name string
		set  []string
		// want is the configuration file rendered; nil means none.
		want *operatorConfig
	}{
		{name: "none by default"},
		{name: "empty lists", set: []string{"json:headSidecarContainers=[]", "json:workerSidecarContainers=[]"}},
		{
			name: "head sidecar",
			set:  []string{`json:headSidecarContainers=[{"name":"fluentbit","image":"fluent/fluent-bit:1.9.6","volumeMounts":[{"name":"ray-logs","mountPath":"/tmp/ray"}]}]`},
			want: &operatorConfig{HeadSidecarContainers: []corev1.Container{fluentbit}},
		},
		{
			name: "worker sidecar",
			set:  []string{`json:workerSidecarContainers=[{"name":"shipper","image":"busybox","args":["--to","collector:24224"]}]`},
			want: &operatorConfig{WorkerSidecarContainers: []corev1.Container{shipper}},
		},
		{
			name: "both, with pod annotations",
			set: []string{
				`json:headSidecarContainers=[{"name":"fluentbit","image":"fluent/fluent-bit:1.9.6","volumeMounts":[{"name":"ray-logs","mountPath":"/tmp/ray"}]}]`,
				`json:workerSidecarContainers=[{"name":"shipper","image":"busybox","args":["--to","collector:24224"]}]`,
				"podAnnotations.team=ml",
			},
			want: &operatorConfig{HeadSidecarContainers: []corev1.Container{fluentbit}, WorkerSidecarContainers: []corev1.Container{shipper}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustRender(t, spokeChart, tt.set...)
			var d appsv1.Deployment
			m.decode(t, "Deployment", spokeChart, &d)
			pod := d.Spec.Template.Spec
			c := pod.Containers[0]
			if tt.want == nil {
				if n := len(m.ofKind("ConfigMap")); n != 0 {
					t.Errorf("%d ConfigMaps rendered without sidecars, want none", n)
				}
				if slices.Contains(c.Args, spokeConfigArg) || len(pod.Volumes) != 0 || len(c.VolumeMounts) != 0 {
					t.Errorf("--config, volumes or mounts without sidecars: args %v, volumes %v, mounts %v", c.Args, pod.Volumes, c.VolumeMounts)
				}
				if _, ok := d.Spec.Template.Annotations["checksum/config"]; ok {
					t.Error("config checksum annotation without sidecars")
				}
				return
			}
			var cm corev1.ConfigMap
			m.decode(t, "ConfigMap", spokeChart+"-config", &cm)
			var got operatorConfig
			if err := yaml.UnmarshalStrict([]byte(cm.Data["config.yaml"]), &got); err != nil {
				t.Fatalf("config.yaml: %v\n%s", err, cm.Data["config.yaml"])
			}
			want := *tt.want
			want.TypeMeta = metav1.TypeMeta{APIVersion: "config.ray.io/v1alpha1", Kind: "Configuration"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config.yaml (-want +got):\n%s", diff)
			}
			if !slices.Equal(c.Args, insertBefore(spokeDefaultArgs, "--zap-log-level=info", spokeConfigArg)) {
				t.Errorf("args = %v, want the defaults and %s", c.Args, spokeConfigArg)
			}
			wantVolumes := []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
			}}}
			if diff := cmp.Diff(wantVolumes, pod.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			wantMounts := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/rayfleet-spoke", ReadOnly: true}}
			if diff := cmp.Diff(wantMounts, c.VolumeMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			if d.Spec.Template.Annotations["checksum/config"] == "" {
				t.Error("no checksum/config annotation: a changed sidecar would not restart the spoke")
			}
			if slices.Contains(tt.set, "podAnnotations.team=ml") && d.Spec.Template.Annotations["team"] != "ml" {
				t.Errorf("pod annotations = %v, want team=ml kept beside the checksum", d.Spec.Template.Annotations)
			}
		})
	}
}

// A changed sidecar changes the Pod template, so the Deployment rolls and the spoke reads it.
func TestSpokeSidecarChangeRollsTheSpoke(t *testing.T) {
	checksum := func(image string) string {
		m := mustRender(t, spokeChart, `json:headSidecarContainers=[{"name":"fluentbit","image":"`+image+`"}]`)
		var d appsv1.Deployment
		m.decode(t, "Deployment", spokeChart, &d)
		return d.Spec.Template.Annotations["checksum/config"]
	}
	if a, b := checksum("fluent/fluent-bit:1.9.6"), checksum("fluent/fluent-bit:2.0"); a == b {
		t.Errorf("checksum %q did not change with the sidecar's image", a)
	}
}
