package propagation

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestCovered(t *testing.T) {
	seen := raybuilder.MakeRayService("svc", "ns").Obj()
	seen.UID, seen.Generation = "uid-1", 3
	bumped := seen.DeepCopy()
	bumped.Generation = 4
	recreated := seen.DeepCopy()
	recreated.UID = "uid-2"
	tests := []struct {
		name    string
		cluster string
		copy    *rayv1.RayService
		want    string
	}{
		{name: "the copy at the generation seen", cluster: "eu", copy: seen, want: "d1"},
		{name: "its spec changed since", cluster: "eu", copy: bumped},
		{name: "made again under the same name", cluster: "eu", copy: recreated},
		{name: "the same name on another cluster", cluster: "us", copy: seen},
		{name: "no copy", cluster: "eu"},
	}
	c := NewCovered()
	c.Record("eu", seen, "d1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.Digest(tt.cluster, tt.copy)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("Digest = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
	c.Record("eu", bumped, "")
	if got, ok := c.Digest("eu", seen); got != "d1" || !ok {
		t.Errorf("an empty digest replaced what was recorded: %q, %v", got, ok)
	}
	c.Forget("eu", types.NamespacedName{Namespace: "ns", Name: "svc"})
	if _, ok := c.Digest("eu", seen); ok || c.Len() != 0 {
		t.Errorf("a forgotten copy is still remembered (%d remembered)", c.Len())
	}
}
