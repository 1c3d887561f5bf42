package propagation

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestApplyConfigurationDropsNulls(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	rs.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = nil
	for i := range rs.Spec.RayClusterSpec.WorkerGroupSpecs {
		rs.Spec.RayClusterSpec.WorkerGroupSpecs[i].RayStartParams = nil
	}
	u, err := ApplyConfiguration(rs)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := unstructured.NestedMap(u.Object, "spec", "rayClusterConfig", "headGroupSpec")
	if v, ok := head["rayStartParams"]; ok {
		t.Errorf("head rayStartParams = %v, want the field left out", v)
	}
	workers, _, _ := unstructured.NestedSlice(u.Object, "spec", "rayClusterConfig", "workerGroupSpecs")
	if len(workers) == 0 {
		t.Fatal("no worker groups in the apply configuration")
	}
	for i, w := range workers {
		if v, ok := w.(map[string]any)["rayStartParams"]; ok {
			t.Errorf("worker group %d rayStartParams = %v, want the field left out", i, v)
		}
	}
	// Set fields stay.
	params := map[string]string{"num-cpus": "1"}
	rs.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = params
	if u, err = ApplyConfiguration(rs); err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedStringMap(u.Object, "spec", "rayClusterConfig", "headGroupSpec", "rayStartParams")
	if got["num-cpus"] != "1" {
		t.Errorf("head rayStartParams = %v, want %v", got, params)
	}
}
