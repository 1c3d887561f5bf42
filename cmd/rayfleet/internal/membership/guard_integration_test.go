package membership

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// waitTimeout bounds waits on the API servers; generous for a busy 2-core machine.
const waitTimeout = 60 * time.Second

// Join guards the identity it creates with shared/hubpolicy's defaults for that identity's
// username, so the hub's token is refused a privileged RayService while the member's admin is
// not; unjoin removes the guard with the identity. A member whose chart made the identity gets
// no second guard from join.
func TestJoinGuardsTheHubIdentity(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	const namespace = "fleet-agent"
	opts := JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace}

	mustJoin(ctx, t, hub, member, opts)
	objs, err := guardObjects(namespace, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range objs {
		got := want.DeepCopyObject().(client.Object)
		if getErr := member.Client.Get(ctx, client.ObjectKeyFromObject(want), got); getErr != nil {
			t.Fatalf("after join: %v", getErr)
		}
		if got.GetLabels()[ManagedByLabel] != ManagedByValue || len(got.GetManagedFields()) != 1 || got.GetManagedFields()[0].Manager != FieldManager {
			t.Errorf("%s: labels %v, managed fields %v; want join's", got.GetName(), got.GetLabels(), got.GetManagedFields())
		}
		if p, ok := got.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
			want := hubpolicy.HubMatchExpression([]string{"system:serviceaccount:" + namespace + ":" + ServiceAccountName})
			if len(p.Spec.MatchConditions) != 1 || p.Spec.MatchConditions[0].Expression != want {
				t.Errorf("%s match conditions %+v, want %s", p.Name, p.Spec.MatchConditions, want)
			}
		}
	}

	// The hub's token, impersonated: refused a privileged RayService with the guard's rule.
	if err = member.Client.Create(ctx, appsNamespace()); err != nil {
		t.Fatal(err)
	}
	hubOnMember := impersonate(t, envs[1], namespace)
	rs := raybuilder.MakeRayService("demo", "apps").Obj()
	rs.UID = ""
	rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	gomega.NewWithT(t).Eventually(func() string {
		rule, _, _ := hubpolicy.ParseDenial(hubOnMember.Create(ctx, rs.DeepCopy(), client.DryRunAll))
		return rule
	}).WithTimeout(waitTimeout).Should(gomega.Equal(hubpolicy.RulePrivileged))
	if err = member.Client.Create(ctx, rs.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("the admin's privileged RayService: %v, want it allowed", err)
	}

	res, err := Unjoin(ctx, hub.Client, member.Client, UnjoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace})
	if err != nil || len(res.Kept) != 0 {
		t.Fatalf("unjoin: %+v, %v", res, err)
	}
	for _, obj := range objs {
		if err := member.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, %s: %v, want NotFound", obj.GetName(), err)
		}
	}
}

// JoinOptions.AllowNodePorts loosens join's guard to let the hub's RayServices have a
// LoadBalancer serve Service, and each join applies the guard anew: with the option the
// hub's token may create one, after a join without it no longer, and with it again once more.
func TestJoinAllowNodePorts(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	opts := JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: DefaultMemberNamespace, AllowNodePorts: true}
	mustJoin(ctx, t, hub, member, opts)
	if err := member.Client.Create(ctx, appsNamespace()); err != nil {
		t.Fatal(err)
	}
	hubOnMember := impersonate(t, envs[1], DefaultMemberNamespace)
	rs := raybuilder.MakeRayService("demo", "apps").Obj()
	rs.UID = ""
	privileged := rs.DeepCopy()
	privileged.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	// refusal is the rule the guard refuses the hub's RayService with; "" when it admits it.
	refusal := func(rs *rayv1.RayService) func() string {
		return func() string {
			rule, _, _ := hubpolicy.ParseDenial(hubOnMember.Create(ctx, rs.DeepCopy(), client.DryRunAll))
			return rule
		}
	}
	// Admitted before the API server has loaded the guard at all proves nothing.
	gomega.NewWithT(t).Eventually(refusal(privileged)).WithTimeout(waitTimeout).Should(gomega.Equal(hubpolicy.RulePrivileged))

	for i, allow := range []bool{true, false, true} {
		if i > 0 {
			opts.AllowNodePorts = allow
			if _, err := Join(ctx, hub, member, opts); err != nil {
				t.Fatalf("join %d (AllowNodePorts %v): %v", i+1, allow, err)
			}
		}
		want := hubpolicy.RuleNodePorts
		if allow {
			want = ""
		}
		// The API server's admission reads its policies through an informer: wait for it.
		gomega.NewWithT(t).Eventually(refusal(rs)).WithTimeout(waitTimeout).Should(gomega.Equal(want),
			"join %d (AllowNodePorts %v): the hub's LoadBalancer RayService", i+1, allow)
		vap := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := member.Client.Get(ctx, client.ObjectKey{Name: hubpolicy.DefaultName + hubpolicy.RayServicesSuffix}, vap); err != nil {
			t.Fatal(err)
		}
		if len(vap.ManagedFields) != 1 || vap.ManagedFields[0].Manager != FieldManager {
			t.Errorf("join %d: guard managed fields %+v, want join's alone", i+1, vap.ManagedFields)
		}
	}
}

// A guard object of the same name that join did not create (a chart installed with
// fullnameOverride "rayfleet", say) is neither taken over nor deleted.
func TestJoinLeavesAForeignGuard(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	objs, err := hubpolicy.Build(hubpolicy.DefaultName, hubpolicy.Default())
	if err != nil {
		t.Fatal(err)
	}
	helmPolicy := objs.Policies[0]
	helmPolicy.Labels = map[string]string{ManagedByLabel: "Helm"}
	if err = member.Client.Create(ctx, helmPolicy); err != nil {
		t.Fatal(err)
	}
	_, err = Join(ctx, hub, member, JoinOptions{Name: "m1", HubNamespace: "rayfleet-system"})
	want := "ValidatingAdmissionPolicy rayfleet-hub-guard-rayservices (managed by Helm) exists but ClusterRoleBinding rayfleet-hub-access does not"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("join: %v, want an error containing %q", err, want)
	}
	res, err := Unjoin(ctx, hub.Client, member.Client, UnjoinOptions{Name: "m1", HubNamespace: "rayfleet-system"})
	if err != nil || len(res.Kept) != 1 || res.Kept[0].Key.Name != helmPolicy.Name {
		t.Errorf("unjoin: %+v, %v; want the Helm policy kept", res, err)
	}
}

// mustJoin runs Join and fails the test on an error.
func mustJoin(ctx context.Context, t *testing.T, hub, member Cluster, opts JoinOptions) *JoinResult {
	t.Helper()
	res, err := Join(ctx, hub, member, opts)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	return res
}

// impersonate is a client of env acting as the hub's ServiceAccount in namespace.
func impersonate(t *testing.T, env *envtest.Env, namespace string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: hubpolicy.HubUsername(namespace, ServiceAccountName),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// appsNamespace is where the tests write the hub's RayServices: it enforces Pod Security
// baseline and lets the hub in, as the guard requires of the namespaces the hub writes
// RayServices in.
func appsNamespace() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": hubpolicy.LevelBaseline, labels.HubNamespace: labels.HubNamespaceAllowed}}}
}

// Join returns only once the member's API server enforces the guard on the hub: its dry runs
// are refused as soon as join returns, without waiting. A chart's guard that does not take
// effect (here: no binding) fails join, naming the policy, before anything is written on the
// hub; with its binding, join waits for it too.
func TestJoinWaitsForTheGuard(t *testing.T) {
	envs := envtest.StartN(t, 3, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	res := mustJoin(ctx, t, hub, member, JoinOptions{Name: "m1", HubNamespace: "rayfleet-system"})
	want := []string{hubpolicy.DefaultName + hubpolicy.NamespacesSuffix, hubpolicy.DefaultName + hubpolicy.RayServicesSuffix}
	if !slices.Equal(res.Guard.Enforced, want) && !slices.Equal(res.Guard.Enforced, []string{want[1], want[0]}) {
		t.Errorf("join's guard check %+v, want %v enforced", res.Guard, want)
	}
	if err := member.Client.Create(ctx, appsNamespace()); err != nil {
		t.Fatal(err)
	}
	hubOnMember := impersonate(t, envs[1], DefaultMemberNamespace)
	rs := raybuilder.MakeRayService("demo", "apps").Obj()
	rs.UID = ""
	rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	if rule, _, _ := hubpolicy.ParseDenial(hubOnMember.Create(ctx, rs, client.DryRunAll)); rule != hubpolicy.RulePrivileged {
		t.Errorf("the hub's privileged RayService right after join: rule %q, want %q", rule, hubpolicy.RulePrivileged)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hub-made", Labels: map[string]string{"pod-security.kubernetes.io/enforce": hubpolicy.LevelPrivileged}}}
	if rule, _, _ := hubpolicy.ParseDenial(hubOnMember.Create(ctx, ns, client.DryRunAll)); rule != hubpolicy.RulePodSecurityLabels {
		t.Errorf("the hub's privileged Namespace right after join: rule %q, want %q", rule, hubpolicy.RulePodSecurityLabels)
	}

	// A member whose chart installed the identity and a guard without its binding.
	chartMember := Cluster{Client: envs[2].Client, Config: envs[2].Config}
	const namespace = "fleet-agent"
	helm := map[string]string{ManagedByLabel: "Helm"}
	cfg := hubpolicy.Default()
	cfg.HubUsernames = []string{hubpolicy.HubUsername(namespace, "hub")}
	guard, err := hubpolicy.Build("spoke-hub-guard", cfg)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hub", Labels: helm}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName, Labels: helm}, Rules: hubaccess.HubRules()},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName, Labels: helm},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "hub"}}},
		guard.Policies[0], guard.Policies[1], guard.Bindings[1],
	}
	for _, obj := range objs {
		if err = chartMember.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	opts := JoinOptions{Name: "m2", HubNamespace: "rayfleet-system", MemberNamespace: namespace, GuardTimeout: 3 * time.Second}
	_, err = Join(ctx, hub, chartMember, opts)
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy spoke-hub-guard-rayservices (a dry-run rayservices as the hub: admitted)") {
		t.Fatalf("join with an unbound guard: %v, want it to name spoke-hub-guard-rayservices", err)
	}
	if err = hub.Client.Get(ctx, client.ObjectKey{Namespace: "rayfleet-system", Name: "m2"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hub's kubeconfig Secret after the failed join: %v, want NotFound", err)
	}
	if err = chartMember.Client.Create(ctx, guard.Bindings[0]); err != nil {
		t.Fatal(err)
	}
	// A binding takes the API server a moment to enforce, longer on a busy machine; join waits
	// only until it does.
	opts.GuardTimeout = time.Minute
	res, err = Join(ctx, hub, chartMember, opts)
	if err != nil || res.Existing == nil || len(res.Guard.Enforced) != 2 {
		t.Fatalf("join with the chart's bound guard: %+v, %v; want both policies enforced", res, err)
	}
}
