package builder

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// TestIncrementalUpgradeObjectsOnAPIServer creates what the builders make for an incremental
// upgrade on a real API server with the Gateway API CRDs of e2e/testdata/gateway-api (copied by
// `make manifests`) and the spoke's ray.io CRDs: the CRDs' validation accepts them, and the
// Gateway and HTTPRoute read back equal to what was built, so a reconciler that compares the
// built spec with the stored one sees no difference the API server's defaulting made.
func TestIncrementalUpgradeObjectsOnAPIServer(t *testing.T) {
	env := envtest.Start(t, envtest.WithCRDDirectories("charts/rayfleet-spoke/crds", "e2e/testdata/gateway-api"))
	c, ctx := env.Client, context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}); err != nil {
		t.Fatal(err)
	}
	rs := incrementalService("svc-old")
	rs.Spec.ServeConfigV2 = "applications: []\n"
	if err := c.Create(ctx, rs); err != nil {
		t.Fatalf("create RayService: %v", err)
	}
	rs.Status.ActiveServiceStatus.RayClusterName = "svc-old" // status is not written on create

	for _, name := range []string{"svc-old", "svc-new"} {
		createClusterAndServices(t, c, rs, name)
	}

	gw, err := Gateway(rs)
	if err != nil {
		t.Fatal(err)
	}
	createAndCompare(t, c, gw, &gwv1.Gateway{}, func(o client.Object) any { return o.(*gwv1.Gateway).Spec })

	route, err := HTTPRoute(rs, []Backend{
		{Service: "svc-old-serve-svc", Port: 8000, Weight: 90},
		{Service: "svc-new-serve-svc", Port: 8000, Weight: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	createAndCompare(t, c, route, &gwv1.HTTPRoute{}, func(o client.Object) any { return o.(*gwv1.HTTPRoute).Spec })

	// A weight step is an update the CRD accepts and stores as built.
	stepped, err := HTTPRoute(rs, []Backend{
		{Service: "svc-old-serve-svc", Port: 8000, Weight: 80},
		{Service: "svc-new-serve-svc", Port: 8000, Weight: 20},
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := &gwv1.HTTPRoute{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(route), stored); err != nil {
		t.Fatal(err)
	}
	stored.Spec = stepped.Spec
	if err := c.Update(ctx, stored); err != nil {
		t.Fatalf("update HTTPRoute weights: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(route), stored); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stepped.Spec, stored.Spec); diff != "" {
		t.Errorf("stored HTTPRoute after the step differs (-built +stored):\n%s", diff)
	}

	// The CRDs do validate: a weight the builder refuses is refused by the API server too.
	stored.Spec.Rules[0].BackendRefs[0].Weight = ptr.To[int32](1_000_001)
	if err := c.Update(ctx, stored); !apierrors.IsInvalid(err) {
		t.Errorf("update with weight 1000001: got %v, want Invalid", err)
	}
}

// createClusterAndServices creates rs's cluster name and the Services built for it.
func createClusterAndServices(t *testing.T, c client.Client, rs *rayv1.RayService, name string) {
	t.Helper()
	ctx := context.Background()
	rc, err := RayClusterForRayService(rs, name, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err = c.Create(ctx, rc); err != nil {
		t.Fatalf("create RayCluster %s: %v", name, err)
	}
	perCluster, err := ClusterServeService(rs, rc)
	if err != nil {
		t.Fatal(err)
	}
	services := []*corev1.Service{perCluster}
	if name == rs.Status.ActiveServiceStatus.RayClusterName {
		head, err := RayServiceHeadService(rs, rc, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		serve, err := RayServiceServeService(rs, rc)
		if err != nil {
			t.Fatal(err)
		}
		services = append(services, head, serve)
	}
	for _, svc := range services {
		want := svc.DeepCopy()
		if err := c.Create(ctx, svc); err != nil {
			t.Fatalf("create Service %s: %v", svc.Name, err)
		}
		if diff := cmp.Diff(want.Spec.Selector, svc.Spec.Selector); diff != "" {
			t.Errorf("Service %s selector changed on create:\n%s", svc.Name, diff)
		}
	}
}

// createAndCompare creates obj, reads it back into into and compares the specs spec extracts.
func createAndCompare(t *testing.T, c client.Client, obj, into client.Object, spec func(client.Object) any) {
	t.Helper()
	ctx := context.Background()
	built := obj.DeepCopyObject().(client.Object)
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), into); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(spec(built), spec(into)); diff != "" {
		t.Errorf("stored %T differs from the built one (-built +stored):\n%s", obj, diff)
	}
	if diff := cmp.Diff(built.GetOwnerReferences(), into.GetOwnerReferences()); diff != "" {
		t.Errorf("%T owner references (-built +stored):\n%s", obj, diff)
	}
}
