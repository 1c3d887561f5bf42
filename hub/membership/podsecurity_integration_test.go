package membership

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// TestPodSecurityUpgrade starts a hub and a member whose namespaces a hub without Pod Security
// labels created: one holding a copy and no Pod, one holding a copy and a privileged Pod, and
// one holding a RayService that is not the hub's. The member's real API server answers the dry
// runs with Pod Security admission's warnings. The clean namespace is labelled; the violating
// one is not, and the MemberCluster names its Pod and the checks it fails, with nothing deleted;
// once the Pod is gone it is labelled too. The namespace that is not the hub's is left alone.
func TestPodSecurityUpgrade(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds", "charts/rayfleet-spoke/crds"))
	hub, member := envs[0], envs[1]
	ns := labels.DefaultHubNamespace
	g.Expect(hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	// What the previous hub left: bare namespaces with its copies; the Pod is the spoke's.
	for _, name := range []string{"clean", "dirty", "foreign"} {
		g.Expect(member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
		g.Expect(member.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: name}})).To(Succeed())
		rs := raybuilder.MakeRayService("rs", name).Obj()
		if name != "foreign" {
			rs.Labels = map[string]string{labels.OriginHub: labels.DefaultHubName}
		}
		g.Expect(member.Client.Create(ctx, rs)).To(Succeed())
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rs-head-abcde", Namespace: "dirty"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray",
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}},
	}
	g.Expect(member.Client.Create(ctx, pod)).To(Succeed())

	provider := kubeconfig.New(kubeconfig.Options{
		Namespace:             ns,
		KubeconfigSecretLabel: fleetv1alpha1.KubeconfigSecretLabel,
		KubeconfigSecretKey:   fleetv1alpha1.DefaultKubeconfigKey,
		ClusterOptions:        []cluster.Option{func(o *cluster.Options) { o.Scheme = hub.Scheme }},
	})
	// TestMembership registers controllers of the same names in this process.
	mgr, err := mcmanager.New(hub.Config, provider, mcmanager.Options{Scheme: hub.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(ctx)
	g.Expect(provider.SetupWithManager(mgrCtx, mgr)).To(Succeed())
	r, err := New(mgr.GetLocalManager().GetClient(), mgr, nil, Options{
		HubNamespace: ns, ResyncInterval: testResync, PodSecurityRecheck: testResync, Registerer: prometheus.NewRegistry()})
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

	g.Expect(hub.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: ns, Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}},
		Data:       map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: member.KubeConfig},
	})).To(Succeed())
	g.Expect(hub.Client.Create(ctx, &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m1"},
		Spec:       fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: "m1"}},
	})).To(Succeed())
	report := &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: fleetv1alpha1.ClusterReportName}}
	g.Expect(member.Client.Create(ctx, report)).To(Succeed())
	report.Status = fleetv1alpha1.ClusterReportStatus{HeartbeatTime: metav1.Now(), PodSecurityLevel: podsecurity.Baseline}
	g.Expect(member.Client.Status().Update(ctx, report)).To(Succeed())

	namespaceLabels := func(g Gomega, name string) map[string]string {
		var got corev1.Namespace
		g.Expect(member.Client.Get(ctx, client.ObjectKey{Name: name}, &got)).To(Succeed())
		return got.Labels
	}
	enforcesBaseline := And(HaveKeyWithValue(podsecurity.EnforceLabel, podsecurity.Baseline),
		HaveKeyWithValue(podsecurity.EnforceVersionLabel, podsecurity.VersionLatest))
	memberStatus := func(g Gomega) fleetv1alpha1.MemberClusterStatus {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(hub.Client.Get(ctx, client.ObjectKey{Name: "m1"}, &mc)).To(Succeed())
		return mc.Status
	}

	t.Run("the clean namespace is labelled, the violating one listed with its Pod and checks", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(namespaceLabels(g, "clean")).To(enforcesBaseline)
			st := memberStatus(g)
			g.Expect(st.PodSecurityLevel).To(Equal(podsecurity.Baseline))
			g.Expect(st.UnenforcedNamespaces).To(HaveLen(1))
			u := st.UnenforcedNamespaces[0]
			g.Expect(u.Name).To(Equal("dirty"))
			g.Expect(u.Violations).To(ConsistOf(And(HavePrefix("rs-head-abcde: "), ContainSubstring("privileged"))))
			c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionPodSecurityEnforced)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonPodsViolateLevel))
			g.Expect(c.Message).To(ContainSubstring("namespace dirty: rs-head-abcde: privileged"))
		}, timeout, interval).Should(Succeed())
		t.Logf("MemberCluster condition: %s", meta.FindStatusCondition(memberStatus(g).Conditions, fleetv1alpha1.ConditionPodSecurityEnforced).Message)
		g.Expect(namespaceLabels(g, "dirty")).NotTo(HaveKey(podsecurity.EnforceLabel))
		g.Expect(namespaceLabels(g, "foreign")).NotTo(HaveKey(podsecurity.EnforceLabel))
		// Nothing was moved or deleted.
		g.Expect(member.Client.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})).To(Succeed())
		for _, name := range []string{"clean", "dirty", "foreign"} {
			g.Expect(member.Client.Get(ctx, client.ObjectKey{Namespace: name, Name: "rs"}, raybuilder.MakeRayService("rs", name).Obj())).To(Succeed())
		}
	})

	t.Run("once the Pod is gone the namespace is labelled", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(member.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(namespaceLabels(g, "dirty")).To(enforcesBaseline)
			st := memberStatus(g)
			g.Expect(st.UnenforcedNamespaces).To(BeEmpty())
			g.Expect(meta.IsStatusConditionTrue(st.Conditions, fleetv1alpha1.ConditionPodSecurityEnforced)).To(BeTrue())
		}, timeout, interval).Should(Succeed())
		g.Expect(namespaceLabels(g, "foreign")).NotTo(HaveKey(podsecurity.EnforceLabel))
	})
}
