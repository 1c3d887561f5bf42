package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/spoke/builder"
)

// goodConfig is a file as a KubeRay user writes it: a fluentbit log shipper on every head and a
// second container on every worker.
const goodConfig = `apiVersion: config.ray.io/v1alpha1
kind: Configuration
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:1.9.6
  volumeMounts:
  - name: ray-logs
    mountPath: /tmp/ray
workerSidecarContainers:
- name: shipper
  image: busybox
defaultContainerEnvs:
- name: RAY_LOG_TO_STDERR
  value: "1"
`

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		file string
		// wantErr lists what the error must name; nil means the file is accepted.
		wantErr []string
		want    operatorConfig
	}{
		{
			name: "sidecars and default envs",
			file: goodConfig,
			want: operatorConfig{
				HeadSidecarContainers: []corev1.Container{{
					Name: "fluentbit", Image: "fluent/fluent-bit:1.9.6",
					VolumeMounts: []corev1.VolumeMount{{Name: "ray-logs", MountPath: "/tmp/ray"}},
				}},
				WorkerSidecarContainers: []corev1.Container{{Name: "shipper", Image: "busybox"}},
				DefaultContainerEnvs:    []corev1.EnvVar{{Name: "RAY_LOG_TO_STDERR", Value: "1"}},
			},
		},
		{name: "nothing but the type", file: "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n"},
		{name: "no kind", file: "apiVersion: config.ray.io/v1alpha1\n", wantErr: []string{"kind"}},
		{name: "another version", file: "apiVersion: config.ray.io/v1\nkind: Configuration\n", wantErr: []string{"config.ray.io/v1"}},
		{name: "not YAML", file: "kind: [", wantErr: []string{"YAML"}},
		{name: "a list", file: "- a\n", wantErr: []string{"Configuration"}},
		{
			name:    "misspelt field",
			file:    goodConfig + "headSidecarContainer: []\n",
			wantErr: []string{`"headSidecarContainer"`},
		},
		{
			name:    "misspelt container field",
			file:    strings.Replace(goodConfig, "  image: busybox", "  imge: busybox", 1),
			wantErr: []string{`"imge"`},
		},
		{
			name:    "KubeRay's process settings name the spoke's flags",
			file:    goodConfig + "qps: 50\nwatchNamespace: a,b\n",
			wantErr: []string{`"qps"`, "--kube-api-qps", `"watchNamespace"`, "--watch-namespace"},
		},
		{
			name:    "a RayJob setting",
			file:    goodConfig + "deleteRayJobAfterJobFinishes: true\n",
			wantErr: []string{`"deleteRayJobAfterJobFinishes"`, "RayJobs"},
		},
		{
			name:    "sidecar without a name",
			file:    "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nworkerSidecarContainers:\n- image: busybox\n",
			wantErr: []string{"workerSidecarContainers[0]: name"},
		},
		{
			name:    "sidecar name not a DNS label",
			file:    "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nheadSidecarContainers:\n- name: Fluent_Bit\n  image: x\n",
			wantErr: []string{`headSidecarContainers[0]: name "Fluent_Bit"`},
		},
		{
			name:    "sidecar without an image",
			file:    "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nheadSidecarContainers:\n- name: fluentbit\n",
			wantErr: []string{"headSidecarContainers[0]: image is required"},
		},
		{
			name: "two sidecars with one name",
			file: "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nworkerSidecarContainers:\n" +
				"- {name: s, image: x}\n- {name: s, image: y}\n",
			wantErr: []string{`workerSidecarContainers[1]: name "s" is given twice`},
		},
		{
			name:    "head sidecar named like the autoscaler",
			file:    "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nheadSidecarContainers:\n- {name: autoscaler, image: x}\n",
			wantErr: []string{`headSidecarContainers[0]: name "autoscaler" is the spoke's own container`},
		},
		{
			name:    "worker sidecar named like the GCS wait",
			file:    "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nworkerSidecarContainers:\n- {name: wait-gcs-ready, image: x}\n",
			wantErr: []string{`workerSidecarContainers[0]: name "wait-gcs-ready" is the spoke's own container`},
		},
		{
			name: "default env twice",
			file: "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\ndefaultContainerEnvs:\n" +
				"- {name: A, value: x}\n- {name: A, value: y}\n- {name: '', value: z}\n",
			wantErr: []string{`defaultContainerEnvs[1]: name "A" is given twice`, "defaultContainerEnvs[2]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConfig([]byte(tt.file))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("parseConfig: %v", err)
				}
				got.TypeMeta = tt.want.TypeMeta
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("config (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("parseConfig accepted the file, want an error naming %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

// --config reaches both reconcilers' builders; without it the builders keep KubeRay's defaults
// (no sidecar).
func TestParseArgsConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(goodConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	_, opts, _, err := parseArgs([]string{"--config=" + path}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	for name, build := range map[string]builder.Options{"RayCluster": opts.rayCluster.Build, "RayService": opts.rayService.Build} {
		if len(build.HeadSidecars) != 1 || build.HeadSidecars[0].Name != "fluentbit" {
			t.Errorf("%s head sidecars = %v, want fluentbit", name, build.HeadSidecars)
		}
		if len(build.WorkerSidecars) != 1 || build.WorkerSidecars[0].Name != "shipper" {
			t.Errorf("%s worker sidecars = %v, want shipper", name, build.WorkerSidecars)
		}
		if len(build.DefaultContainerEnvs) != 1 || build.DefaultContainerEnvs[0].Name != "RAY_LOG_TO_STDERR" {
			t.Errorf("%s default envs = %v, want RAY_LOG_TO_STDERR", name, build.DefaultContainerEnvs)
		}
	}

	_, opts, _, err = parseArgs(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatalf("parseArgs: %v", err)
	}
	if opts.rayCluster.Build.HeadSidecars != nil || opts.rayCluster.Build.WorkerSidecars != nil {
		t.Errorf("sidecars without --config: %v, %v", opts.rayCluster.Build.HeadSidecars, opts.rayCluster.Build.WorkerSidecars)
	}

	missing := []string{"--config=" + filepath.Join(t.TempDir(), "missing.yaml")}
	if _, _, _, err = parseArgs(missing, func(string) string { return "" }, io.Discard); err == nil {
		t.Errorf("parseArgs(%v) succeeded, want an error for the missing file", missing)
	}
}
