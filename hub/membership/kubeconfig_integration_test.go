package membership

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/eventrecorder"
)

// refusedKubeconfig turns the member's working kubeconfig into one the hub must refuse, and
// names the field the refusal must name: of the cluster (onCluster) or of the user.
type refusedKubeconfig struct {
	name, field string
	onCluster   bool
	mutate      func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo)
}

// refusedKubeconfigCases are one refusedKubeconfig per refused field. The exec plugin and the
// proxy point at things the test watches: a script that leaves a file behind when run, a
// server that counts requests.
func refusedKubeconfigCases(t *testing.T, marker, proxyURL string) []refusedKubeconfig {
	script := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch '"+marker+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	hubToken := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(hubToken, []byte("the-hubs-own-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	type c = clientcmdapi.Cluster
	type u = clientcmdapi.AuthInfo
	return []refusedKubeconfig{
		{"exec plugin", "exec", false, func(_ *c, u *u) {
			u.Exec = &clientcmdapi.ExecConfig{Command: script, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}},
		{"auth provider", "auth-provider", false, func(_ *c, u *u) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": proxyURL}}
		}},
		{"token file", "tokenFile", false, func(_ *c, u *u) { u.TokenFile = hubToken }},
		{"client certificate file", "client-certificate", false, func(_ *c, u *u) { u.ClientCertificate = hubToken }},
		{"client key file", "client-key", false, func(_ *c, u *u) { u.ClientKey = hubToken }},
		{"basic auth", "username", false, func(_ *c, u *u) { u.Username, u.Password = "admin", "admin" }},
		{"impersonation", "as-groups", false, func(_ *c, u *u) { u.ImpersonateGroups = []string{"system:masters"} }},
		{"insecure-skip-tls-verify", "insecure-skip-tls-verify", true, func(c *c, _ *u) {
			c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
		}},
		{"proxy", "proxy-url", true, func(c *c, _ *u) { c.ProxyURL = proxyURL }},
		{"CA file", "certificate-authority", true, func(c *c, _ *u) { c.CertificateAuthority, c.CertificateAuthorityData = hubToken, nil }},
		{"no CA data", "certificate-authority-data", true, func(c *c, _ *u) { c.CertificateAuthorityData = nil }},
	}
}

// mutateKubeconfig returns data with its current cluster and user changed by mutate, and the
// names of that cluster and user.
func mutateKubeconfig(t *testing.T, data []byte, mutate func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) (out []byte, clusterName, userName string) {
	t.Helper()
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	mutate(cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo])
	out, err = clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out, ctx.Cluster, ctx.AuthInfo
}

// TestRefusedKubeconfigs runs the hub's provider and MemberCluster controller against a hub
// and a member API server. A member engaged from a working kubeconfig is disengaged as soon as
// its Secret is changed to one with any refused field, with Joined=False/KubeconfigRefused
// naming the Secret and the field and a Warning event; nothing on the member is deleted, the
// exec plugin never runs and the proxy gets no request. A member whose Secret is refused from
// the start is never engaged.
func TestRefusedKubeconfigs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds", "charts/rayfleet-spoke/crds"))
	hub, member := envs[0], envs[1]
	ns := labels.DefaultHubNamespace
	g.Expect(hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(proxy.Close)
	marker := filepath.Join(t.TempDir(), "plugin-ran")

	provider := NewProvider(ProviderOptions{Namespace: ns,
		ClusterOptions: []cluster.Option{func(o *cluster.Options) { o.Scheme = hub.Scheme }}})
	mgr, err := mcmanager.New(hub.Config, provider, mcmanager.Options{Scheme: hub.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// The package's tests each run the same controllers in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(ctx)
	g.Expect(provider.SetupWithManager(mgrCtx, mgr)).To(Succeed())
	recorder := eventrecorder.New(t, hub.Scheme)
	r, err := New(mgr.GetLocalManager().GetClient(), mgr, recorder, Options{
		HubNamespace: ns, ResyncInterval: testResync, Registerer: prometheus.NewRegistry()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.SetupWithManager(mgr.GetLocalManager())).To(Succeed())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mgrCtx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	// What the hub must never delete: the member's report and a namespace with a ConfigMap.
	g.Expect(member.Client.Create(ctx, &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: fleetv1alpha1.ClusterReportName}})).To(Succeed())
	g.Expect(member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})).To(Succeed())
	g.Expect(member.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: "team"}})).To(Succeed())

	setSecret := func(g Gomega, name string, kubeconfig []byte) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
		err := hub.Client.Get(ctx, client.ObjectKeyFromObject(s), s)
		if err != nil {
			g.Expect(client.IgnoreNotFound(err)).To(Succeed())
			s.Labels = map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}
			s.Data = map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: kubeconfig}
			g.Expect(hub.Client.Create(ctx, s)).To(Succeed())
			g.Expect(hub.Client.Create(ctx, &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: name}}})).To(Succeed())
			return
		}
		s.Data = map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: kubeconfig}
		g.Expect(hub.Client.Update(ctx, s)).To(Succeed())
	}
	joined := func(g Gomega, name string) *metav1.Condition {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(hub.Client.Get(ctx, client.ObjectKey{Name: name}, &mc)).To(Succeed())
		c := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionJoined)
		g.Expect(c).NotTo(BeNil())
		return c
	}
	engaged := func(g Gomega, name string) bool {
		_, err := provider.Get(ctx, multicluster.ClusterName(name))
		if err != nil {
			g.Expect(errors.Is(err, multicluster.ErrClusterNotFound)).To(BeTrue(), "provider.Get(%s): %v", name, err)
		}
		return err == nil
	}
	refusedEvents := func(name string) int {
		n := 0
		for _, e := range recorder.Events() {
			if e.Key.Reason == fleetv1alpha1.ReasonKubeconfigRefused && e.Key.Regarding.Name == name &&
				e.Key.EventType == corev1.EventTypeWarning {
				n++
			}
		}
		return n
	}

	for _, tt := range refusedKubeconfigCases(t, marker, proxy.URL) {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			setSecret(g, "m1", member.KubeConfig)
			g.Eventually(func(g Gomega) {
				g.Expect(joined(g, "m1").Status).To(Equal(metav1.ConditionTrue))
				g.Expect(engaged(g, "m1")).To(BeTrue())
			}, timeout, interval).Should(Succeed())

			// A refusal is one Warning; under load a reconcile whose status write conflicts may
			// repeat it, so the count must grow rather than reach an exact number.
			before := refusedEvents("m1")
			data, clusterName, userName := mutateKubeconfig(t, member.KubeConfig, tt.mutate)
			setSecret(g, "m1", data)
			field := "users[" + userName + "]." + tt.field
			if tt.onCluster {
				field = "clusters[" + clusterName + "]." + tt.field
			}
			g.Eventually(func(g Gomega) {
				c := joined(g, "m1")
				g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonKubeconfigRefused))
				g.Expect(c.Message).To(ContainSubstring("Secret " + ns + "/m1"))
				g.Expect(c.Message).To(ContainSubstring(field + ": "))
				g.Expect(engaged(g, "m1")).To(BeFalse(), "the provider still engages m1")
				g.Expect(refusedEvents("m1")).To(BeNumerically(">", before))
			}, timeout, interval).Should(Succeed())
			t.Logf("%s: Joined=False %s: %s", tt.name, fleetv1alpha1.ReasonKubeconfigRefused, joined(g, "m1").Message)
		})
	}

	t.Run("a Secret refused from the start is never engaged", func(t *testing.T) {
		g := NewWithT(t)
		// The MemberCluster first, so that Joined is already False when the Secret comes:
		// the change of reason is a Warning of its own.
		g.Expect(hub.Client.Create(ctx, &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m2"},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: "m2"}}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(joined(g, "m2").Reason).To(Equal(fleetv1alpha1.ReasonKubeconfigSecretNotFound))
		}, timeout, interval).Should(Succeed())
		data, _, _ := mutateKubeconfig(t, member.KubeConfig, refusedKubeconfigCases(t, marker, proxy.URL)[0].mutate)
		g.Expect(hub.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "m2", Namespace: ns, Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}},
			Data:       map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: data},
		})).To(Succeed())
		g.Eventually(func(g Gomega) {
			c := joined(g, "m2")
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonKubeconfigRefused))
			g.Expect(c.Message).To(ContainSubstring(".exec: runs a program"))
			g.Expect(refusedEvents("m2")).To(Equal(1))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) bool { return engaged(g, "m2") }, 5*testResync, interval).Should(BeFalse())
	})

	t.Run("nothing ran, was proxied or was deleted on the member", func(t *testing.T) {
		g := NewWithT(t)
		_, err := os.Stat(marker)
		g.Expect(os.IsNotExist(err)).To(BeTrue(), "the exec plugin ran: %v", err)
		g.Expect(proxied.Load()).To(BeZero())
		g.Expect(member.Client.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &fleetv1alpha1.ClusterReport{})).To(Succeed())
		g.Expect(member.Client.Get(ctx, client.ObjectKey{Name: "keep", Namespace: "team"}, &corev1.ConfigMap{})).To(Succeed())
		var ns corev1.Namespace
		g.Expect(member.Client.Get(ctx, client.ObjectKey{Name: "team"}, &ns)).To(Succeed())
		g.Expect(ns.DeletionTimestamp).To(BeNil())
	})

	t.Run("the member is engaged again once its Secret is fixed", func(t *testing.T) {
		g := NewWithT(t)
		setSecret(g, "m1", member.KubeConfig)
		g.Eventually(func(g Gomega) {
			g.Expect(joined(g, "m1").Status).To(Equal(metav1.ConditionTrue))
			g.Expect(engaged(g, "m1")).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})
}
