package aggregate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestHubStatusApplications(t *testing.T) {
	deps := func(kv ...string) map[string]rayv1.ServeDeploymentStatus {
		out := map[string]rayv1.ServeDeploymentStatus{}
		for i := 0; i+3 <= len(kv); i += 3 {
			out[kv[i]] = rayv1.ServeDeploymentStatus{Status: kv[i+1], Message: kv[i+2]}
		}
		return out
	}
	tests := []struct {
		name     string
		placed   []string
		clusters []fleetv1alpha1.ClusterStatus
		want     map[string]rayv1.AppStatus
	}{
		{
			name:   "no applications anywhere",
			placed: []string{"m1"}, clusters: entries(ready("m1", 1)),
		},
		{
			name:   "all running: running, no message; messages of healthy copies are dropped",
			placed: []string{"m1", "m2"},
			clusters: entries(ready("m1", 1).app("fruit", "RUNNING", "", "Mango", "HEALTHY"),
				ready("m2", 1).app("fruit", "RUNNING", "fine", "Mango", "HEALTHY")),
			want: map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING", Deployments: deps("Mango", "HEALTHY", "")}},
		},
		{
			name:   "mixed across clusters: worst wins, the others named worst first",
			placed: []string{"m1", "m2", "m3", "m4"},
			clusters: entries(
				ready("m1", 1).app("fruit", "RUNNING", ""),
				ready("m2", 1).app("fruit", "DEPLOYING", ""),
				ready("m3", 1).app("fruit", "DEPLOY_FAILED", "import error"),
				ready("m4", 1).app("fruit", "UNHEALTHY", "replica died"),
			),
			want: map[string]rayv1.AppStatus{"fruit": {Status: "DEPLOY_FAILED",
				Message: "m3: DEPLOY_FAILED (import error); m4: UNHEALTHY (replica died); m2: DEPLOYING"}},
		},
		{
			name:   "transitional beats running; NOT_STARTED and DEPLOYING both named",
			placed: []string{"m1", "m2", "m3"},
			clusters: entries(
				ready("m3", 1).app("fruit", "NOT_STARTED", ""),
				ready("m1", 1).app("fruit", "RUNNING", ""),
				ready("m2", 1).app("fruit", "DEPLOYING", "starting"),
			),
			want: map[string]rayv1.AppStatus{"fruit": {Status: "DEPLOYING",
				Message: "m2: DEPLOYING (starting); m3: NOT_STARTED"}},
		},
		{
			name:   "an unknown status is neither healthy nor failed; an empty one is named as such",
			placed: []string{"m1", "m2", "m3"},
			clusters: entries(
				ready("m1", 1).app("fruit", "RUNNING", ""),
				ready("m2", 1).app("fruit", "SOMETHING_NEW", ""),
				ready("m3", 1).app("fruit", "", ""),
			),
			want: map[string]rayv1.AppStatus{"fruit": {Status: "SOMETHING_NEW",
				Message: "m2: SOMETHING_NEW; m3: no status"}},
		},
		{
			name:   "applications are merged by name; one only some clusters run is kept",
			placed: []string{"m1", "m2"},
			clusters: entries(
				ready("m1", 1).app("fruit", "RUNNING", "").app("veg", "DEPLOYING", ""),
				ready("m2", 1).app("fruit", "RUNNING", ""),
			),
			want: map[string]rayv1.AppStatus{
				"fruit": {Status: "RUNNING"},
				"veg":   {Status: "DEPLOYING", Message: "m1: DEPLOYING"},
			},
		},
		{
			name:   "deployments merged worst-first across clusters, union of names",
			placed: []string{"m1", "m2", "m3"},
			clusters: entries(
				ready("m1", 1).app("fruit", "RUNNING", "", "Mango", "HEALTHY", "Pear", "HEALTHY"),
				ready("m2", 1).app("fruit", "DEPLOYING", "", "Mango", "UPDATING", "Pear", "HEALTHY", "Kiwi", "UPDATING"),
				ready("m3", 1).app("fruit", "UNHEALTHY", "", "Mango", "UNHEALTHY", "Pear", "UPSCALING"),
			),
			want: map[string]rayv1.AppStatus{"fruit": {
				Status:  "UNHEALTHY",
				Message: "m3: UNHEALTHY; m2: DEPLOYING",
				Deployments: deps(
					"Mango", "UNHEALTHY", "m3: UNHEALTHY; m2: UPDATING",
					"Pear", "UPSCALING", "m3: UPSCALING",
					"Kiwi", "UPDATING", "m2: UPDATING",
				),
			}},
		},
		{
			name:   "DEPLOY_FAILED deployments, reported by newer Ray, beat UNHEALTHY",
			placed: []string{"m1", "m2"},
			clusters: entries(
				ready("m1", 1).app("fruit", "UNHEALTHY", "", "Mango", "UNHEALTHY"),
				ready("m2", 1).app("fruit", "DEPLOY_FAILED", "", "Mango", "DEPLOY_FAILED"),
			),
			want: map[string]rayv1.AppStatus{"fruit": {
				Status: "DEPLOY_FAILED", Message: "m2: DEPLOY_FAILED; m1: UNHEALTHY",
				Deployments: deps("Mango", "DEPLOY_FAILED", "m2: DEPLOY_FAILED; m1: UNHEALTHY"),
			}},
		},
		{
			name:   "clusters no longer placed do not contribute",
			placed: []string{"m1"},
			clusters: entries(
				ready("m1", 1).app("fruit", "RUNNING", ""),
				ready("gone", 1).app("fruit", "DEPLOY_FAILED", "").app("old", "RUNNING", ""),
			),
			want: map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HubStatus(hubRS(1), tt.placed, tt.clusters, t0)
			if d := cmp.Diff(tt.want, got.ActiveServiceStatus.Applications); d != "" {
				t.Errorf("applications (-want +got):\n%s", d)
			}
		})
	}
}

func TestHubStatusApplicationsDoNotShareMemory(t *testing.T) {
	clusters := entries(ready("m1", 1).app("fruit", "RUNNING", "", "Mango", "HEALTHY"))
	got := HubStatus(hubRS(1), []string{"m1"}, clusters, t0)
	got.ActiveServiceStatus.Applications["fruit"].Deployments["Mango"] = rayv1.ServeDeploymentStatus{Status: "UNHEALTHY"}
	if s := clusters[0].Applications["fruit"].Deployments["Mango"].Status; s != "HEALTHY" {
		t.Errorf("changing the hub's deployments changed the entry's: %s", s)
	}
}
