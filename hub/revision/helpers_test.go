package revision

import (
	"encoding/json"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	rfscheme "github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// override selects clusters labelled region=<region> and applies patch.
func override(region, patch string) fleetv1alpha1.ClusterOverride {
	return fleetv1alpha1.ClusterOverride{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": region}},
		Patch:           apiextensionsv1.JSON{Raw: []byte(patch)},
	}
}

// content is the test RayService's spec with overrides.
func content(overrides ...fleetv1alpha1.ClusterOverride) *Content {
	return &Content{Spec: raybuilder.MakeRayService("svc", "ns").Obj().Spec, Overrides: overrides}
}

// contentOfSize is a content whose JSON encoding is exactly n bytes, padded in a comment of
// its serveConfigV2.
func contentOfSize(t testing.TB, n int) *Content {
	t.Helper()
	c := content(override("eu", `{"serveConfigV2":"x"}`))
	c.Spec.ServeConfigV2 += "#"
	if pad := n - encodedSize(t, c); pad >= 0 {
		c.Spec.ServeConfigV2 += strings.Repeat("a", pad)
	}
	if got := encodedSize(t, c); got != n {
		t.Fatalf("padded content encodes as %d bytes, want %d", got, n)
	}
	return c
}

func encodedSize(t testing.TB, c *Content) int {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

func mustHash(t testing.TB, c *Content) string {
	t.Helper()
	h, err := Hash(c)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s, err := rfscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hubRayService is a hub RayService as read from the API server (it has a UID).
func hubRayService(name string) *rayv1.RayService {
	return raybuilder.MakeRayService(name, "ns").Obj()
}
