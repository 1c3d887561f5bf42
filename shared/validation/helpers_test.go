package validation

import (
	"testing"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// cluster is the valid starting point of most cases: a head and one worker group "g".
func cluster() *raybuilder.RayClusterWrapper {
	return raybuilder.MakeRayCluster("x", "ns").WorkerGroup("g", 1, 0, 3)
}

// checkErr fails unless err's message is exactly want ("" meaning no error).
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("wrong error\n got: %s\nwant: %s", err.Error(), want)
	}
}

func TestBuilderClusterIsValid(t *testing.T) {
	rc := raybuilder.MakeRayCluster("x", "ns").
		WorkerGroup("a", 2, 1, 3).WorkerGroup("b", 1, 1, 1).NumOfHosts("b", 4).
		GPU("a", "nvidia.com/gpu", "1").UpgradeStrategy("Recreate").GCSFT("redis:6379").
		AuthToken().EnableIngress().Obj()
	checkErr(t, RayClusterMetadata(rc.ObjectMeta), "")
	checkErr(t, RayClusterSpec(&rc.Spec, rc.Annotations), "")
	checkErr(t, RayClusterUpgradeOptions(rc), "")
	checkErr(t, RayClusterStatus(&rc.Status), "")
}
