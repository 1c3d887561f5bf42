package propagation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

const euServeConfig = `applications:
  - name: fruit
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    deployments:
      - name: MangoStand
        num_replicas: 4
`

func TestMemberRayServiceOverrides(t *testing.T) {
	hub := raybuilder.MakeRayService("svc", "ns")
	eu := map[string]string{"region": "eu", "gpu": "a100"}
	// Merge patches replace lists whole, so a replicas override restates the worker groups.
	threeWorkers := hub.Obj().Spec.RayClusterSpec.WorkerGroupSpecs
	threeWorkers[0].Replicas = ptr.To[int32](3)
	replicasPatch := `{"rayClusterConfig":{"workerGroupSpecs":` + mustJSON(t, threeWorkers) + `}}`
	serveConfigPatch := `{"serveConfigV2":` + mustJSON(t, euServeConfig) + `}`

	tests := []struct {
		name      string
		hub       *rayv1.RayService // hub.Obj() when nil
		labels    map[string]string
		overrides []fleetv1alpha1.ClusterOverride
		want      *rayv1.RayService
	}{
		{
			name: "no overrides",
			want: hub.Obj(),
		},
		{
			name:      "none matching",
			labels:    eu,
			overrides: []fleetv1alpha1.ClusterOverride{override(map[string]string{"region": "us"}, replicasPatch)},
			want:      hub.Obj(),
		},
		{
			name:   "one matching changes replicas",
			labels: eu,
			overrides: []fleetv1alpha1.ClusterOverride{
				override(map[string]string{"region": "us"}, serveConfigPatch),
				override(map[string]string{"region": "eu"}, replicasPatch),
			},
			want: raybuilder.MakeRayService("svc", "ns").Replicas(0, 3).Obj(),
		},
		{
			name:   "two matching, both apply",
			labels: eu,
			overrides: []fleetv1alpha1.ClusterOverride{
				override(map[string]string{"region": "eu"}, replicasPatch),
				override(map[string]string{"gpu": "a100"}, serveConfigPatch),
			},
			want: raybuilder.MakeRayService("svc", "ns").Replicas(0, 3).ServeConfig(euServeConfig).Obj(),
		},
		{
			name:   "two matching the same field, the later wins",
			labels: eu,
			overrides: []fleetv1alpha1.ClusterOverride{
				override(nil, `{"rayClusterDeletionDelaySeconds":10}`),
				override(map[string]string{"region": "eu"}, `{"rayClusterDeletionDelaySeconds":20}`),
			},
			want: raybuilder.MakeRayService("svc", "ns").DeletionDelay(20).Obj(),
		},
		{
			name:      "empty selector selects every cluster",
			overrides: []fleetv1alpha1.ClusterOverride{override(nil, serveConfigPatch)},
			want:      raybuilder.MakeRayService("svc", "ns").ServeConfig(euServeConfig).Obj(),
		},
		{
			name:   "null removes a field, nested objects merge",
			hub:    raybuilder.MakeRayService("svc", "ns").DeletionDelay(5).Obj(),
			labels: eu,
			overrides: []fleetv1alpha1.ClusterOverride{override(nil,
				`{"rayClusterDeletionDelaySeconds":null,"rayClusterConfig":{"headGroupSpec":{"rayStartParams":{"num-cpus":"0"}}}}`)},
			want: func() *rayv1.RayService {
				rs := raybuilder.MakeRayService("svc", "ns").Obj()
				rs.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "0"}
				return rs
			}(),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.hub
			if in == nil {
				in = hub.Obj()
			}
			got, err := MemberRayService(testHub, in, "m1", tc.labels, tc.overrides)
			if err != nil {
				t.Fatalf("MemberRayService: %v", err)
			}
			if diff := cmp.Diff(tc.want.Spec, got.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if h := got.Annotations[labels.SpecHash]; h != mustHash(t, &tc.want.Spec) {
				t.Errorf("spec-hash annotation %q is not the hash of the resulting spec", h)
			}
		})
	}
}

func TestMemberRayServiceMetadata(t *testing.T) {
	hub := raybuilder.MakeRayService("svc", "ns").
		Annotation("team.example.com/owner", "serving").
		Annotation(corev1.LastAppliedConfigAnnotation, `{"kind":"RayService"}`).
		Annotation(labels.PlacementPolicy, "gpu").
		Annotation(labels.SpecHash, "forged").
		Annotation(labels.InitializingTimeout, "10m").
		Obj()
	hub.Labels = map[string]string{
		"app":                       "fruit",
		labels.OriginUID:            "forged-uid",
		labels.FleetKeyPrefix + "x": "y",
		"example.com/tier":          "gold",
	}
	hub.UID = types.UID("hub-uid-1")
	hub.ResourceVersion = "42"
	hub.Generation = 7
	hub.Finalizers = []string{labels.MemberCleanupFinalizer}
	hub.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "o-uid"}}
	hub.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	hub.CreationTimestamp = metav1.Now()
	hub.Status.ServiceStatus = rayv1.Running
	before := hub.DeepCopy()

	got, err := MemberRayService(testHub, hub, "m1", map[string]string{"region": "eu"},
		[]fleetv1alpha1.ClusterOverride{override(map[string]string{"region": "eu"}, `{"rayClusterDeletionDelaySeconds":9}`)})
	if err != nil {
		t.Fatalf("MemberRayService: %v", err)
	}
	wantSpec := raybuilder.MakeRayService("svc", "ns").DeletionDelay(9).Obj().Spec
	want := &rayv1.RayService{
		TypeMeta: metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayService"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns",
			Name:      "svc",
			Labels: map[string]string{
				"app":                  "fruit",
				"example.com/tier":     "gold",
				labels.OriginNamespace: "ns",
				labels.OriginName:      "svc",
				labels.OriginUID:       "hub-uid-1",
				labels.OriginHub:       testHub,
			},
			Annotations: map[string]string{
				"team.example.com/owner":   "serving",
				labels.InitializingTimeout: "10m",
				labels.SpecHash:            mustHash(t, &wantSpec),
			},
		},
		Spec: wantSpec,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("member RayService (-want +got):\n%s", diff)
	}
	if hubHash := mustHash(t, &hub.Spec); got.Annotations[labels.SpecHash] == hubHash {
		t.Errorf("spec hash %s is the hub spec's, not the overridden member spec's", hubHash)
	}
	if diff := cmp.Diff(before, hub); diff != "" {
		t.Errorf("hub object modified (-before +after):\n%s", diff)
	}
	got.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](99)
	if *hub.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas == 99 {
		t.Errorf("member spec shares memory with the hub spec")
	}
}

func TestMemberRayServiceErrors(t *testing.T) {
	good := override(nil, `{"rayClusterDeletionDelaySeconds":1}`)
	tests := []struct {
		name     string
		override fleetv1alpha1.ClusterOverride
		wantErr  string
	}{
		{"patch is an array", override(nil, `[{"op":"add"}]`), "patch must be a valid JSON object"},
		{"patch is a string", override(nil, `"x"`), "patch must be a valid JSON object"},
		{"patch is null", override(nil, `null`), "patch must be a valid JSON object"},
		{"patch is empty", override(nil, ``), "patch must be a valid JSON object"},
		{"patch is malformed", override(nil, `{"serveConfigV2":`), "patch must be a valid JSON object"},
		{"not an object, even where it does not match", override(map[string]string{"region": "mars"}, `[]`),
			"patch must be a valid JSON object"},
		{"wrong type for a field", override(nil, `{"rayClusterConfig":{"workerGroupSpecs":[{"replicas":"three"}]}}`),
			"not a valid RayService spec"},
		{"serveConfigV2 not a string", override(nil, `{"serveConfigV2":{"applications":[]}}`), "not a valid RayService spec"},
		{"unknown field", override(nil, `{"rayClusterConfig":{"enableInTreeAutoscalling":true}}`), "unknown field"},
		{"field name in the wrong case", override(nil, `{"ServeConfigV2":"x"}`), "unknown field"},
		{"no selector", fleetv1alpha1.ClusterOverride{Patch: good.Patch}, "clusterSelector is required"},
		{"invalid selector", fleetv1alpha1.ClusterOverride{
			ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "region", Operator: "Near", Values: []string{"eu"}},
			}},
			Patch: good.Patch,
		}, "invalid clusterSelector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hub := raybuilder.MakeRayService("svc", "ns").Obj()
			got, err := MemberRayService(testHub, hub, "m-eu-1", map[string]string{"region": "eu"},
				[]fleetv1alpha1.ClusterOverride{good, tc.override})
			if err == nil {
				t.Fatalf("MemberRayService = %v, want an error", got.Spec)
			}
			for _, want := range []string{tc.wantErr, "override 1", `cluster "m-eu-1"`, "ns/svc"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			// The policy check finds the same fault without a RayService or a cluster.
			err = CheckOverrides([]fleetv1alpha1.ClusterOverride{good, tc.override})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "override 1") {
				t.Errorf("CheckOverrides = %v, want an error naming override 1 and containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckOverridesAcceptsUsablePatches(t *testing.T) {
	overrides := []fleetv1alpha1.ClusterOverride{
		override(map[string]string{"region": "eu"}, `{"serveConfigV2":"applications: []"}`),
		// null removes a field: valid on any spec.
		override(nil, `{"rayClusterDeletionDelaySeconds":null}`),
		override(nil, `{"rayClusterConfig":{"workerGroupSpecs":[{"groupName":"gpu","replicas":2}]}}`),
	}
	if err := CheckOverrides(overrides); err != nil {
		t.Errorf("CheckOverrides = %v, want nil", err)
	}
	if err := CheckOverrides(nil); err != nil {
		t.Errorf("CheckOverrides(nil) = %v, want nil", err)
	}
}

func TestMemberRayServiceNilHub(t *testing.T) {
	if _, err := MemberRayService(testHub, nil, "m1", nil, nil); err == nil {
		t.Error("MemberRayService(nil) returned no error")
	}
}
