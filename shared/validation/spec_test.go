package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// specCase changes the valid cluster() and expects an error message ("" for none).
type specCase struct {
	name   string
	mutate func(rc *rayv1.RayCluster)
	want   string
}

func runSpecCases(t *testing.T, tests []specCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := cluster().Obj()
			tt.mutate(rc)
			before := rc.DeepCopy()
			checkErr(t, RayClusterSpec(&rc.Spec, rc.Annotations), tt.want)
			if d := cmp.Diff(before, rc); d != "" {
				t.Errorf("RayClusterSpec changed the cluster (-before +after):\n%s", d)
			}
		})
	}
}

func workerAt(i int) func(rc *rayv1.RayCluster) *rayv1.WorkerGroupSpec {
	return func(rc *rayv1.RayCluster) *rayv1.WorkerGroupSpec { return &rc.Spec.WorkerGroupSpecs[i] }
}

var firstWorker = workerAt(0)

func TestRayClusterSpecContainers(t *testing.T) {
	runSpecCases(t, []specCase{
		{name: "valid", mutate: func(*rayv1.RayCluster) {}},
		{
			name:   "head without containers",
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.Containers = nil },
			want:   "spec.headGroupSpec.template.spec.containers: Required value: the head group needs at least one container; the first one runs Ray",
		},
		{
			name:   "worker group without containers",
			mutate: func(rc *rayv1.RayCluster) { firstWorker(rc).Template.Spec.Containers = nil },
			want:   `spec.workerGroupSpecs[0].template.spec.containers: Required value: worker group "g" needs at least one container; the first one runs Ray`,
		},
		{
			name: "head is checked before workers",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Template.Spec.Containers = nil
				firstWorker(rc).Template.Spec.Containers = nil
			},
			want: "spec.headGroupSpec.template.spec.containers: Required value: the head group needs at least one container; the first one runs Ray",
		},
		{
			name:   "no worker groups at all",
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs = nil },
		},
	})
}

func TestRayClusterSpecGroupNames(t *testing.T) {
	addGroup := func(name string) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			extra := raybuilder.MakeRayCluster("y", "ns").WorkerGroup(name, 1, 0, 1).Obj().Spec.WorkerGroupSpecs[0]
			rc.Spec.WorkerGroupSpecs = append(rc.Spec.WorkerGroupSpecs, extra)
		}
	}
	runSpecCases(t, []specCase{
		{name: "distinct names", mutate: addGroup("h")},
		{
			name:   "duplicate name",
			mutate: addGroup("g"),
			want:   `spec.workerGroupSpecs[1].groupName: Duplicate value: "g": worker group names must be unique; spec.workerGroupSpecs[0] also uses it`,
		},
		{
			name: "duplicate is found after a distinct group",
			mutate: func(rc *rayv1.RayCluster) {
				addGroup("h")(rc)
				addGroup("h")(rc)
			},
			want: `spec.workerGroupSpecs[2].groupName: Duplicate value: "h": worker group names must be unique; spec.workerGroupSpecs[1] also uses it`,
		},
	})
}

func TestRayClusterSpecReplicas(t *testing.T) {
	bounds := func(minR, maxR *int32) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			firstWorker(rc).MinReplicas, firstWorker(rc).MaxReplicas = minR, maxR
		}
	}
	withAutoscaler := func(f func(rc *rayv1.RayCluster)) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			f(rc)
		}
	}
	p := ptr.To[int32]
	const bothRequired = `worker group "g" must set both minReplicas and maxReplicas when autoscaling is disabled`
	runSpecCases(t, []specCase{
		{name: "min equals max", mutate: bounds(p(2), p(2))},
		{
			name:   "min greater than max",
			mutate: bounds(p(5), p(3)),
			want:   `spec.workerGroupSpecs[0].minReplicas: Invalid value: 5: worker group "g": must not be greater than maxReplicas (3)`,
		},
		{
			name: "replicas below min is clamped, not rejected",
			mutate: func(rc *rayv1.RayCluster) {
				bounds(p(2), p(5))(rc)
				firstWorker(rc).Replicas = p(1)
			},
		},
		{
			name: "replicas above max is clamped, not rejected",
			mutate: func(rc *rayv1.RayCluster) {
				firstWorker(rc).Replicas = p(9)
			},
		},
		{
			name:   "negative replicas is rejected, not clamped",
			mutate: func(rc *rayv1.RayCluster) { firstWorker(rc).Replicas = p(-1) },
			want:   `spec.workerGroupSpecs[0].replicas: Invalid value: -1: worker group "g": must not be negative`,
		},
		{name: "min nil without autoscaler", mutate: bounds(nil, p(5)), want: "spec.workerGroupSpecs[0].minReplicas: Required value: " + bothRequired},
		{name: "max nil without autoscaler", mutate: bounds(p(1), nil), want: "spec.workerGroupSpecs[0].maxReplicas: Required value: " + bothRequired},
		{name: "both nil without autoscaler", mutate: bounds(nil, nil), want: "spec.workerGroupSpecs[0].minReplicas: Required value: " + bothRequired},
		{name: "both nil with autoscaler", mutate: withAutoscaler(bounds(nil, nil))},
		{
			name:   "negative min",
			mutate: withAutoscaler(bounds(p(-1), nil)),
			want:   `spec.workerGroupSpecs[0].minReplicas: Invalid value: -1: worker group "g": must not be negative`,
		},
		{
			name:   "negative max",
			mutate: withAutoscaler(bounds(nil, p(-1))),
			want:   `spec.workerGroupSpecs[0].maxReplicas: Invalid value: -1: worker group "g": must not be negative`,
		},
		{
			name:   "negative min and max: min is reported",
			mutate: bounds(p(-2), p(-1)),
			want:   `spec.workerGroupSpecs[0].minReplicas: Invalid value: -2: worker group "g": must not be negative`,
		},
	})
}

func TestRayClusterSpecResources(t *testing.T) {
	runSpecCases(t, []specCase{
		{
			name: "head resources in rayStartParams only",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "1", "num-gpus": "0"}
			},
		},
		{
			name:   "worker resources field only",
			mutate: func(rc *rayv1.RayCluster) { firstWorker(rc).Resources = map[string]string{"CPU": "1"} },
		},
		{
			name: "head in both places",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{"num-cpus": "1", "memory": "1000"}
				rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "1"}
			},
			want: `spec.headGroupSpec.resources: Invalid value: {"CPU":"1"}: head group: must not be set together with ` +
				`rayStartParams num-cpus, memory; declare Ray resources in one place only`,
		},
		{
			name: "worker in both places (custom resources)",
			mutate: func(rc *rayv1.RayCluster) {
				firstWorker(rc).RayStartParams = map[string]string{"resources": `"{\"TPU\": 4}"`}
				firstWorker(rc).Resources = map[string]string{"TPU": "4"}
			},
			want: `spec.workerGroupSpecs[0].resources: Invalid value: {"TPU":"4"}: worker group "g": must not be set together with ` +
				`rayStartParams resources; declare Ray resources in one place only`,
		},
		{
			name: "empty rayStartParams values do not count",
			mutate: func(rc *rayv1.RayCluster) {
				firstWorker(rc).RayStartParams = map[string]string{"num-gpus": ""}
				firstWorker(rc).Resources = map[string]string{"GPU": "1"}
			},
		},
		{
			name: "other rayStartParams do not conflict",
			mutate: func(rc *rayv1.RayCluster) {
				firstWorker(rc).RayStartParams = map[string]string{"object-store-memory": "100000000"}
				firstWorker(rc).Resources = map[string]string{"CPU": "1"}
			},
		},
	})
}

func TestRayClusterSpecLabels(t *testing.T) {
	const badKey, badValue = "bad key!", "bad value!"
	keyMsg := joinMessages(k8svalidation.IsQualifiedName(badKey))
	valueMsg := joinMessages(k8svalidation.IsValidLabelValue(badValue))
	runSpecCases(t, []specCase{
		{
			name: "valid labels",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.Labels = map[string]string{"ray.io/market-type": "on-demand", "zone": ""}
				firstWorker(rc).Labels = map[string]string{"accelerator": "a100"}
			},
		},
		{
			name:   "head labels in rayStartParams",
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.RayStartParams["labels"] = "a=b" },
			want:   `spec.headGroupSpec.rayStartParams[labels]: Invalid value: "a=b": head group: not supported; use the group's labels field instead`,
		},
		{
			name:   "worker labels in rayStartParams, even empty",
			mutate: func(rc *rayv1.RayCluster) { firstWorker(rc).RayStartParams["labels"] = "" },
			want:   `spec.workerGroupSpecs[0].rayStartParams[labels]: Invalid value: "": worker group "g": not supported; use the group's labels field instead`,
		},
		{
			name:   "bad head label key",
			mutate: func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Labels = map[string]string{badKey: "v"} },
			want:   `spec.headGroupSpec.labels: Invalid value: "bad key!": head group: invalid label key: ` + keyMsg,
		},
		{
			name:   "bad worker label value",
			mutate: func(rc *rayv1.RayCluster) { firstWorker(rc).Labels = map[string]string{"k": badValue} },
			want:   `spec.workerGroupSpecs[0].labels[k]: Invalid value: "bad value!": worker group "g": invalid label value: ` + valueMsg,
		},
		{
			name: "every bad label is reported, in key order",
			mutate: func(rc *rayv1.RayCluster) {
				firstWorker(rc).Labels = map[string]string{"z": badValue, badKey: badValue, "ok": "fine"}
			},
			want: `[spec.workerGroupSpecs[0].labels: Invalid value: "bad key!": worker group "g": invalid label key: ` + keyMsg +
				`, spec.workerGroupSpecs[0].labels[bad key!]: Invalid value: "bad value!": worker group "g": invalid label value: ` + valueMsg +
				`, spec.workerGroupSpecs[0].labels[z]: Invalid value: "bad value!": worker group "g": invalid label value: ` + valueMsg + `]`,
		},
		{
			name: "resources conflict is reported before labels",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.HeadGroupSpec.RayStartParams["num-cpus"] = "1"
				rc.Spec.HeadGroupSpec.Resources = map[string]string{"CPU": "1"}
				rc.Spec.HeadGroupSpec.Labels = map[string]string{badKey: "v"}
			},
			want: `spec.headGroupSpec.resources: Invalid value: {"CPU":"1"}: head group: must not be set together with ` +
				`rayStartParams num-cpus; declare Ray resources in one place only`,
		},
	})
}

func TestRayClusterSpecRuleOrder(t *testing.T) {
	// A group's replica bounds come before its labels, and groups before GCS FT.
	runSpecCases(t, []specCase{
		{
			name: "replicas before labels",
			mutate: func(rc *rayv1.RayCluster) {
				firstWorker(rc).MinReplicas = ptr.To[int32](4)
				firstWorker(rc).Labels = map[string]string{"bad key!": "v"}
			},
			want: `spec.workerGroupSpecs[0].minReplicas: Invalid value: 4: worker group "g": must not be greater than maxReplicas (3)`,
		},
		{
			name: "worker groups before GCS fault tolerance",
			mutate: func(rc *rayv1.RayCluster) {
				firstWorker(rc).Template.Spec.Containers = nil
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_REDIS_ADDRESS", Value: "r:6379"}}
			},
			want: `spec.workerGroupSpecs[0].template.spec.containers: Required value: worker group "g" needs at least one container; the first one runs Ray`,
		},
	})
}
