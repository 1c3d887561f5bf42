package builder

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOptionsFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Options
	}{
		{
			name: "KubeRay defaults",
			want: Options{KubeRayVersion: "v1.6.2", ClusterDomain: "cluster.local", ProbesInjection: true, InitContainerInjection: true, MultiHostIndexing: true},
		},
		{
			name: "everything flipped, case-insensitive",
			env: map[string]string{
				"CLUSTER_DOMAIN": "corp.local", "ENABLE_PROBES_INJECTION": "False", "ENABLE_INIT_CONTAINER_INJECTION": "FALSE",
				"ENABLE_LOGIN_SHELL": "True", "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "true", "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": "TRUE",
			},
			want: Options{KubeRayVersion: "v1.6.2", ClusterDomain: "corp.local", LoginShell: true, DeterministicHeadPodName: true,
				HeadServiceClusterIP: true, MultiHostIndexing: true},
		},
		{
			name: "only exact true/false words count",
			env:  map[string]string{"ENABLE_PROBES_INJECTION": "no", "ENABLE_LOGIN_SHELL": "1"},
			want: Options{KubeRayVersion: "v1.6.2", ClusterDomain: "cluster.local", ProbesInjection: true, InitContainerInjection: true, MultiHostIndexing: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OptionsFromEnv(func(k string) string { return tt.env[k] })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("OptionsFromEnv (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(OptionsFromEnv(func(string) string { return "" }), DefaultOptions()); diff != "" {
		t.Errorf("DefaultOptions differs from an empty environment:\n%s", diff)
	}
	// A zero Options still yields usable names and version strings.
	pod := mustWorker(t, newCluster("rc").Obj(), Replica{}, Options{})
	if got := envValue(&pod.Spec.Containers[0], envFQRayIP); got != "rc-head-svc.ns.svc.cluster.local" {
		t.Errorf("FQ_RAY_IP with zero Options = %q", got)
	}
}
