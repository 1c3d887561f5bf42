package membership

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// The kubeconfig join writes holds a bound token of the hub's ServiceAccount lasting
// BootstrapTokenTTL, which may mint the hub's own tokens and no other's; a re-run join
// rotates it and removes the never-expiring token Secret an older join made, but not one
// Helm manages.
func TestJoinWritesABoundBootstrapToken(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	opts := JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", BootstrapTokenTTL: 2 * time.Hour}

	before := time.Now()
	res := mustJoin(ctx, t, hub, member, opts)
	if d := res.TokenExpires.Sub(before); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
		t.Errorf("the bootstrap token expires %s after join, want 2h", d)
	}
	first := hubToken(ctx, t, hub.Client)
	whoAmI(ctx, t, envs[1], first, hubaccess.DefaultNamespace, ServiceAccountName)

	mint := func(token, sa string) error {
		cfg := *envs[1].Config
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData, cfg.BearerToken = nil, nil, token
		_, err := kubernetes.NewForConfigOrDie(&cfg).CoreV1().ServiceAccounts(hubaccess.DefaultNamespace).
			CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		return err
	}
	if err := mint(first, ServiceAccountName); err != nil {
		t.Errorf("the hub minting its own token: %v", err)
	}
	if err := member.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rayfleet-spoke", Namespace: hubaccess.DefaultNamespace}}); err != nil {
		t.Fatal(err)
	}
	if err := mint(first, "rayfleet-spoke"); !apierrors.IsForbidden(err) {
		t.Errorf("the hub minting the spoke's token: %v, want Forbidden", err)
	}

	// What an older join left: its never-expiring token Secret.
	legacy := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: LegacyTokenSecretName, Namespace: hubaccess.DefaultNamespace,
		Labels: map[string]string{ManagedByLabel: ManagedByValue}, Annotations: map[string]string{corev1.ServiceAccountNameKey: ServiceAccountName}},
		Type: corev1.SecretTypeServiceAccountToken}
	if err := member.Client.Create(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	mustJoin(ctx, t, hub, member, opts)
	second := hubToken(ctx, t, hub.Client)
	if second == first {
		t.Error("a re-run join kept the bootstrap token")
	}
	whoAmI(ctx, t, envs[1], second, hubaccess.DefaultNamespace, ServiceAccountName)
	if err := member.Client.Get(ctx, client.ObjectKeyFromObject(legacy), legacy); !apierrors.IsNotFound(err) {
		t.Errorf("the legacy token Secret join made: %v, want it removed", err)
	}

	unjoined, err := Unjoin(ctx, hub.Client, member.Client, UnjoinOptions{Name: "m1", HubNamespace: "rayfleet-system"})
	if err != nil || len(unjoined.Kept) != 0 {
		t.Fatalf("unjoin: %+v, %v", unjoined, err)
	}
	for _, obj := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: TokenRoleName, Namespace: hubaccess.DefaultNamespace}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: TokenRoleName, Namespace: hubaccess.DefaultNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName, Namespace: hubaccess.DefaultNamespace}},
	} {
		if err := member.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, %T %s: %v, want NotFound", obj, obj.GetName(), err)
		}
	}
	cfg := *envs[1].Config
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData, cfg.BearerToken = nil, nil, second
	// The API server looks ServiceAccounts up through its informer: wait for it.
	gomega.NewWithT(t).Eventually(func() error {
		_, err := kubernetes.NewForConfigOrDie(&cfg).AuthenticationV1().SelfSubjectReviews().
			Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	}).WithTimeout(waitTimeout).Should(gomega.Satisfy(apierrors.IsUnauthorized), "the bootstrap token after unjoin")
}

// hubToken is the token in the hub's kubeconfig Secret m1.
func hubToken(ctx context.Context, t *testing.T, hub client.Client) string {
	t.Helper()
	var s corev1.Secret
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "rayfleet-system", Name: "m1"}, &s); err != nil {
		t.Fatal(err)
	}
	cfg, err := hubaccess.RESTConfig(s.Data[fleetv1alpha1.DefaultKubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	return cfg.BearerToken
}

// whoAmI checks that token authenticates on env as the ServiceAccount namespace/name.
func whoAmI(ctx context.Context, t *testing.T, env *envtest.Env, token, namespace, name string) {
	t.Helper()
	cfg := *env.Config
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData, cfg.BearerToken = nil, nil, token
	review, err := kubernetes.NewForConfigOrDie(&cfg).AuthenticationV1().SelfSubjectReviews().
		Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the hub's token: %v", err)
	}
	if want := "system:serviceaccount:" + namespace + ":" + name; review.Status.UserInfo.Username != want {
		t.Errorf("the hub's token authenticates as %q, want %q", review.Status.UserInfo.Username, want)
	}
}
