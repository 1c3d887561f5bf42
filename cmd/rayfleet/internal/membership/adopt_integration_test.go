package membership

import (
	"slices"
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// Join labels allowed the namespaces holding this hub's copies that lack the label (an
// earlier hub created them unlabelled), and only those: the hub keeps writing there under
// the guard join applies, and is refused in a namespace it has no copy in.
func TestJoinAdoptsTheHubsNamespaces(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	const namespace = "fleet-agent"
	baseline := map[string]string{"pod-security.kubernetes.io/enforce": hubpolicy.LevelBaseline}
	for _, ns := range []string{"old", "theirs", "foreign"} {
		if err := member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: baseline}}); err != nil {
			t.Fatal(err)
		}
	}
	for ns, origin := range map[string]string{"old": labels.DefaultHubName, "theirs": "another-hub"} {
		rs := raybuilder.MakeRayService("svc", ns).Obj()
		rs.UID, rs.Labels = "", map[string]string{labels.OriginHub: origin}
		if err := member.Client.Create(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}

	res := mustJoin(ctx, t, hub, member, JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace})
	if !slices.Equal(res.Adopted, []string{"old"}) {
		t.Errorf("adopted %v, want [old]", res.Adopted)
	}
	for ns, want := range map[string]string{"old": labels.HubNamespaceAllowed, "theirs": "", "foreign": ""} {
		var got corev1.Namespace
		if err := member.Client.Get(ctx, client.ObjectKey{Name: ns}, &got); err != nil {
			t.Fatal(err)
		}
		if got.Labels[labels.HubNamespace] != want {
			t.Errorf("namespace %s: labels %v, want %s=%q", ns, got.Labels, labels.HubNamespace, want)
		}
	}

	hubOnMember := impersonate(t, envs[1], namespace)
	gomega.NewWithT(t).Eventually(func() string {
		rs := raybuilder.MakeRayService("next", "foreign").Obj()
		rs.UID = ""
		rule, _, _ := hubpolicy.ParseDenial(hubOnMember.Create(ctx, rs, client.DryRunAll))
		return rule
	}).WithTimeout(waitTimeout).Should(gomega.Equal(hubpolicy.RuleNamespaceOwner))
	rs := raybuilder.MakeRayService("next", "old").Obj()
	rs.UID = ""
	if err := hubOnMember.Create(ctx, rs, client.DryRunAll); err != nil {
		t.Errorf("the hub's RayService in the adopted namespace: %v, want it allowed", err)
	}

	// A second join has nothing left to adopt.
	if res = mustJoin(ctx, t, hub, member, JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace}); len(res.Adopted) != 0 {
		t.Errorf("second join adopted %v, want none", res.Adopted)
	}
}
