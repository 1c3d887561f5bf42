package membership

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// countingAware counts the members engaged with the manager.
type countingAware struct {
	multicluster.Aware
	engaged atomic.Int64
}

func (c *countingAware) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	c.engaged.Add(1)
	return c.Aware.Engage(ctx, name, cl)
}

// tokenState is what a member's token source holds, read under its lock.
func tokenState(ts *memberTokens) (bootstrap, current string, mints int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.bootstrap, ts.current, ts.mints
}

// hubIdentity gives the hub's ServiceAccount on member its contract (hubaccess.HubRules and
// TokenRules), as `rayfleet join` does, and returns a bootstrap token for it.
func hubIdentity(t *testing.T, member *envtest.Env) func(ttl time.Duration) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns, sa := hubaccess.DefaultNamespace, hubaccess.ServiceAccountName
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "rayfleet-spoke", Namespace: ns}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName}, Rules: hubaccess.HubRules()},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hubaccess.ClusterRoleName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.TokenRoleName, Namespace: ns}, Rules: hubaccess.TokenRules(sa)},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.TokenRoleName, Namespace: ns}, Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hubaccess.TokenRoleName}},
	} {
		g.Expect(member.Client.Create(ctx, obj)).To(Succeed())
	}
	admin := kubernetes.NewForConfigOrDie(member.Config)
	return func(ttl time.Duration) string {
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second))}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
}

// TestMemberTokensRefreshInPlace runs the provider against a hub and a member whose kubeconfig
// holds a bootstrap token of the hub's ServiceAccount: the hub mints its own tokens with it,
// refreshes them at 80 % of their life while the member's cache keeps serving, may mint for
// no other ServiceAccount, and takes a rotated bootstrap token (a re-run join) without
// engaging the member again.
func TestMemberTokensRefreshInPlace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds", "charts/rayfleet-spoke/crds"))
	hub, member := envs[0], envs[1]
	ns := labels.DefaultHubNamespace
	g.Expect(hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	bootstrapToken := hubIdentity(t, member)

	clock := clocktesting.NewFakeClock(time.Now())
	reg := prometheus.NewRegistry()
	provider := NewProvider(ProviderOptions{Namespace: ns, Clock: clock, Registerer: reg,
		ClusterOptions: []cluster.Option{func(o *cluster.Options) { o.Scheme = hub.Scheme }}})
	mgr, err := mcmanager.New(hub.Config, provider, mcmanager.Options{Scheme: hub.Scheme,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(ctx)
	g.Expect(provider.SetupWithManager(mgrCtx, mgr)).To(Succeed())
	aware := &countingAware{Aware: mgr}
	provider.aware = aware
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mgrCtx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	setKubeconfig := func(token string) {
		data, _, _ := mutateKubeconfig(t, member.KubeConfig, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			*u = clientcmdapi.AuthInfo{Token: token}
		})
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns,
			Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}},
			Data: map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: data}}
		if err := hub.Client.Update(ctx, s); apierrors.IsNotFound(err) {
			g.Expect(hub.Client.Create(ctx, s)).To(Succeed())
		} else {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	boot1 := bootstrapToken(hubaccess.DefaultBootstrapTokenTTL)
	setKubeconfig(boot1)
	var cl cluster.Cluster
	g.Eventually(func() error { cl, err = provider.Get(ctx, "m1"); return err }, timeout, interval).Should(Succeed())
	tokens := provider.member("m1").tokens
	g.Expect(tokens).NotTo(BeNil())

	var reports fleetv1alpha1.ClusterReportList
	g.Expect(cl.GetClient().List(ctx, &reports)).To(Succeed(), "the cached client lists through the hub's minted token")
	_, first, mints := tokenState(tokens)
	g.Expect(first).NotTo(BeEmpty())
	g.Expect(first).NotTo(Equal(boot1))
	g.Expect(mints).To(Equal(1))
	exp, ok := tokenExpiry(boot1)
	g.Expect(ok).To(BeTrue(), "the API server's bootstrap token has no readable exp")
	g.Expect(exp).To(BeTemporally("~", time.Now().Add(hubaccess.DefaultBootstrapTokenTTL), time.Minute))

	t.Run("the minted token mints for no other ServiceAccount", func(t *testing.T) {
		g := NewWithT(t)
		cfg := rest.AnonymousClientConfig(member.Config)
		cfg.BearerToken = first
		_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts(hubaccess.DefaultNamespace).
			CreateToken(ctx, "rayfleet-spoke", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "minting the spoke's token: %v", err)
	})

	t.Run("the token is refreshed at 80 % of its life and the cache keeps serving", func(t *testing.T) {
		g := NewWithT(t)
		clock.Step(47 * time.Minute)
		g.Expect(cl.GetAPIReader().List(ctx, &reports)).To(Succeed())
		_, current, mints := tokenState(tokens)
		g.Expect(current).To(Equal(first), "refreshed before 80 %% of the hour")
		g.Expect(mints).To(Equal(1))

		// Two minutes, not one: the fake clock started before the mint, and the API server dates
		// the token's expiry on the real clock, so 80 % falls later on the fake one by up to the
		// setup's duration (seconds, or a minute under load).
		clock.Step(2 * time.Minute)
		// Within the refresh window the token source mints in the background and serves the
		// token it holds meanwhile: a request made now sees the new token a moment later.
		g.Eventually(func(g Gomega) {
			g.Expect(cl.GetAPIReader().List(ctx, &reports)).To(Succeed())
			_, current, mints := tokenState(tokens)
			g.Expect(current).NotTo(Equal(first), "not refreshed at 80 %% of the hour")
			g.Expect(mints).To(Equal(2))
		}, timeout, interval).Should(Succeed())

		g.Expect(member.Client.Create(ctx, &fleetv1alpha1.ClusterReport{
			ObjectMeta: metav1.ObjectMeta{Name: fleetv1alpha1.ClusterReportName}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(cl.GetClient().List(ctx, &reports)).To(Succeed())
			g.Expect(reports.Items).To(HaveLen(1))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a refused TokenRequest is reported and counted, and cleared by the next grant", func(t *testing.T) {
		g := NewWithT(t)
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.TokenRoleName, Namespace: hubaccess.DefaultNamespace}}
		g.Expect(member.Client.Get(ctx, client.ObjectKeyFromObject(binding), binding)).To(Succeed())
		g.Expect(member.Client.Delete(ctx, binding)).To(Succeed())
		clock.Step(48 * time.Minute)
		g.Eventually(func(g Gomega) {
			clock.Step(mintRetry)
			g.Expect(cl.GetAPIReader().List(ctx, &reports)).To(Succeed(), "the hub keeps the token it holds")
			f := provider.MintFailure("m1")
			g.Expect(f).NotTo(BeNil())
			g.Expect(f.Message).To(ContainSubstring("forbidden"))
		}, timeout, interval).Should(Succeed())
		g.Expect(testutil.ToFloat64(provider.refreshFailures.WithLabelValues("m1"))).To(BeNumerically(">=", 1))
		g.Expect(testutil.CollectAndCount(reg, "rayfleet_member_token_refresh_failures_total")).To(Equal(1))

		binding.ResourceVersion = ""
		g.Expect(member.Client.Create(ctx, binding)).To(Succeed())
		g.Eventually(func(g Gomega) {
			clock.Step(mintRetry)
			g.Expect(cl.GetAPIReader().List(ctx, &reports)).To(Succeed())
			g.Expect(provider.MintFailure("m1")).To(BeNil())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a rotated bootstrap token is taken in place", func(t *testing.T) {
		g := NewWithT(t)
		_, _, before := tokenState(tokens)
		boot2 := bootstrapToken(hubaccess.DefaultBootstrapTokenTTL)
		setKubeconfig(boot2)
		g.Eventually(func() string { b, _, _ := tokenState(tokens); return b }, timeout, interval).Should(Equal(boot2))
		g.Eventually(func(g Gomega) {
			g.Expect(cl.GetAPIReader().List(ctx, &reports)).To(Succeed())
			_, _, mints := tokenState(tokens)
			g.Expect(mints).To(Equal(before+1), "the rotated bootstrap token minted the next token")
		}, timeout, interval).Should(Succeed())
		now, err := provider.Get(ctx, "m1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now).To(BeIdenticalTo(cl), "the member's cluster was replaced")
		g.Expect(aware.engaged.Load()).To(Equal(int64(1)), "the member was engaged again")
	})

	t.Run("a kubeconfig for another identity engages again", func(t *testing.T) {
		g := NewWithT(t)
		data := member.KubeConfig
		s := &corev1.Secret{}
		g.Expect(hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, s)).To(Succeed())
		s.Data[fleetv1alpha1.DefaultKubeconfigKey] = data
		g.Expect(hub.Client.Update(ctx, s)).To(Succeed())
		g.Eventually(aware.engaged.Load, timeout, interval).Should(Equal(int64(2)))
	})
}
