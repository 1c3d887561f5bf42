package rayservice

import (
	"context"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
)

func TestTokenCache(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	withAuth := fixture.Cluster(rs, "svc-abcde")
	withAuth.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("my-token")}
	noAuth := fixture.Cluster(rs, "svc-fghij")

	tests := []struct {
		name      string
		rc        *rayv1.RayCluster
		steps     func(c *tokenCache, clk *clocktesting.FakeClock)
		wantToken string
		wantGets  int
	}{
		{name: "token auth off reads nothing", rc: noAuth, wantGets: 0},
		{name: "read once, reused within the TTL", rc: withAuth, wantToken: "s3cret", wantGets: 1,
			steps: func(_ *tokenCache, clk *clocktesting.FakeClock) { clk.Step(tokenTTL - time.Second) }},
		{name: "read again after the TTL", rc: withAuth, wantToken: "s3cret", wantGets: 2,
			steps: func(_ *tokenCache, clk *clocktesting.FakeClock) { clk.Step(tokenTTL) }},
		{name: "a rejected token is read again", rc: withAuth, wantToken: "s3cret", wantGets: 2,
			steps: func(c *tokenCache, _ *clocktesting.FakeClock) {
				c.forgetIfRejected(withAuth, &dashboard.StatusError{StatusCode: 401})
			}},
		{name: "other dashboard errors keep the token", rc: withAuth, wantToken: "s3cret", wantGets: 1,
			steps: func(c *tokenCache, _ *clocktesting.FakeClock) {
				c.forgetIfRejected(withAuth, &dashboard.StatusError{StatusCode: 500})
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sch, err := scheme.New()
			if err != nil {
				t.Fatal(err)
			}
			gets := 0
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-token", Namespace: "ns"},
				Data: map[string][]byte{"auth_token": []byte("s3cret")}}
			cl := fake.NewClientBuilder().WithScheme(sch).WithObjects(secret).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					gets++
					return c.Get(ctx, key, obj, opts...)
				},
			}).Build()
			clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
			c := newTokenCache(cl, clk)
			ctx := context.Background()
			if _, getErr := c.get(ctx, tc.rc); getErr != nil {
				t.Fatal(getErr)
			}
			if tc.steps != nil {
				tc.steps(c, clk)
			}
			got, err := c.get(ctx, tc.rc)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.wantToken || gets != tc.wantGets {
				t.Errorf("token %q after %d GETs, want %q after %d", got, gets, tc.wantToken, tc.wantGets)
			}
		})
	}
}

func TestTokenCacheMissingKey(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	rc := fixture.Cluster(rs, "svc-abcde")
	rc.Spec.AuthOptions = &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("my-token")}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-token", Namespace: "ns"}}
	c := newTokenCache(fake.NewClientBuilder().WithScheme(sch).WithObjects(secret).Build(), clocktesting.NewFakeClock(time.Now()))
	if _, err := c.get(context.Background(), rc); err == nil {
		t.Fatal("want an error for a Secret without auth_token")
	}
}
