package membership

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// createNamespaces makes the namespaces on c.
func createNamespaces(t *testing.T, c client.Client, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
}

// trafficRBAC reads the traffic Role and RoleBinding in namespace.
func trafficRBAC(t *testing.T, c client.Client, namespace string) (*rbacv1.Role, *rbacv1.RoleBinding) {
	t.Helper()
	key := client.ObjectKey{Namespace: namespace, Name: TrafficRoleName}
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	if err := c.Get(t.Context(), key, &role); err != nil {
		t.Fatalf("Role %s: %v", key, err)
	}
	if err := c.Get(t.Context(), key, &binding); err != nil {
		t.Fatalf("RoleBinding %s: %v", key, err)
	}
	return &role, &binding
}

// Join --traffic-namespace gives the hub exactly hubaccess.TrafficRules in that namespace and
// nowhere else; a namespace that does not exist fails the join before anything is written;
// unjoin removes the rights.
func TestJoinGrantsTrafficRights(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	const namespace = "fleet-agent"
	createNamespaces(t, member.Client, "gw", "apps")
	opts := JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace,
		TrafficNamespaces: []string{"missing"}}

	_, err := Join(ctx, hub, member, opts)
	if err == nil || !strings.Contains(err.Error(), "traffic namespace missing does not exist on the member") {
		t.Fatalf("join into a missing traffic namespace: %v", err)
	}
	var sa corev1.ServiceAccount
	if err = member.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ServiceAccountName}, &sa); !apierrors.IsNotFound(err) {
		t.Errorf("after the failed join, the hub's ServiceAccount: %v, want NotFound", err)
	}

	opts.TrafficNamespaces = []string{"gw"}
	res := mustJoin(ctx, t, hub, member, opts)
	if len(res.TrafficRoles) != 1 || res.TrafficRoles[0].Key != (client.ObjectKey{Namespace: "gw", Name: TrafficRoleName}) || res.TrafficRoles[0].ManagedBy != ManagedByValue {
		t.Errorf("join's TrafficRoles = %+v, want join's Role gw/%s", res.TrafficRoles, TrafficRoleName)
	}
	role, binding := trafficRBAC(t, member.Client, "gw")
	if diff := cmp.Diff(hubaccess.TrafficRules(), role.Rules); diff != "" {
		t.Errorf("traffic Role rules (-contract +got):\n%s", diff)
	}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: namespace}}
	if diff := cmp.Diff(wantSubjects, binding.Subjects); diff != "" || binding.RoleRef.Kind != "Role" || binding.RoleRef.Name != TrafficRoleName {
		t.Errorf("traffic RoleBinding roleRef %+v, subjects (-want +got):\n%s", binding.RoleRef, diff)
	}

	// As the hub: a backend Service in gw, but neither one in apps nor gw's Secrets.
	hubOnMember := impersonate(t, envs[1], namespace)
	svc := func(ns string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-us"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "lb.us.example.com"}}
	}
	if err = hubOnMember.Create(ctx, svc("gw"), client.DryRunAll); err != nil {
		t.Errorf("the hub creating a Service in gw: %v", err)
	}
	if err = hubOnMember.Create(ctx, svc("apps"), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Errorf("the hub creating a Service in apps: %v, want Forbidden", err)
	}
	if err = hubOnMember.List(ctx, &corev1.SecretList{}, client.InNamespace("gw")); !apierrors.IsForbidden(err) {
		t.Errorf("the hub listing Secrets in gw: %v, want Forbidden", err)
	}

	unjoined, err := Unjoin(ctx, hub.Client, member.Client, UnjoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace})
	if err != nil || len(unjoined.Kept) != 0 {
		t.Fatalf("unjoin: %+v, %v", unjoined, err)
	}
	for _, obj := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		if err = member.Client.Get(ctx, client.ObjectKey{Namespace: "gw", Name: TrafficRoleName}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, the traffic %T: %v, want NotFound", obj, err)
		}
	}
}

// With the spoke chart's identity (possibly renamed), join uses a traffic Role the chart made
// as is, binds its own in another namespace to the chart's ServiceAccount, and unjoin removes
// only its own.
func TestJoinTrafficWithTheChartsIdentity(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	const namespace = "fleet-agent"
	createNamespaces(t, member.Client, namespace, "gw", "edge")
	helm := map[string]string{ManagedByLabel: "Helm"}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "hub", Labels: helm}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName, Labels: helm},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "hub"}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: TrafficRoleName, Labels: helm}, Rules: hubaccess.TrafficRules()},
	} {
		if err := member.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	opts := JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace, TrafficNamespaces: []string{"gw"}}

	res, err := Join(ctx, hub, member, opts)
	if err != nil || res.Existing == nil || len(res.TrafficRoles) != 1 || res.TrafficRoles[0].ManagedBy != "Helm" {
		t.Fatalf("join with the chart's traffic Role: %+v, %v; want it used as is", res, err)
	}
	if err = member.Client.Get(ctx, client.ObjectKey{Namespace: "gw", Name: TrafficRoleName}, &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("join made a RoleBinding next to the chart's Role: %v", err)
	}

	opts.TrafficNamespaces = []string{"edge"}
	if res, err = Join(ctx, hub, member, opts); err != nil || len(res.TrafficRoles) != 1 || res.TrafficRoles[0].ManagedBy != ManagedByValue {
		t.Fatalf("join with a new traffic namespace: %+v, %v", res, err)
	}
	_, binding := trafficRBAC(t, member.Client, "edge")
	if len(binding.Subjects) != 1 || binding.Subjects[0].Name != "hub" || binding.Subjects[0].Namespace != namespace {
		t.Errorf("traffic RoleBinding subjects %+v, want the chart's ServiceAccount %s/hub", binding.Subjects, namespace)
	}

	unjoined, err := Unjoin(ctx, hub.Client, member.Client, UnjoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, ref := range unjoined.Kept {
		kept = append(kept, ref.Kind+" "+ref.Key.String())
	}
	if diff := cmp.Diff([]string{"Role gw/" + TrafficRoleName, "ClusterRoleBinding /" + ClusterRoleName}, kept); diff != "" {
		t.Errorf("kept by unjoin (-want +got):\n%s", diff)
	}
	for _, obj := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		if err = member.Client.Get(ctx, client.ObjectKey{Namespace: "edge", Name: TrafficRoleName}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, join's traffic %T in edge: %v, want NotFound", obj, err)
		}
	}
}

// Join --traffic-all-namespaces gives the hub exactly hubaccess.TrafficRules in every namespace
// through one ClusterRole, and nothing more; unjoin removes it. The guard still holds the
// hub's traffic objects to the namespaces it created or was allowed into.
func TestJoinGrantsTrafficEverywhere(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := Cluster{Client: envs[0].Client, Config: envs[0].Config}, Cluster{Client: envs[1].Client, Config: envs[1].Config}
	ctx := t.Context()
	const namespace = "fleet-agent"
	createNamespaces(t, member.Client, "team-b")
	if err := member.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a",
		Labels: map[string]string{labels.HubNamespace: labels.HubNamespaceAllowed}}}); err != nil {
		t.Fatal(err)
	}
	opts := JoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace, TrafficAllNamespaces: true}
	res := mustJoin(ctx, t, hub, member, opts)
	if len(res.TrafficRoles) != 1 || res.TrafficRoles[0].Kind != "ClusterRole" || res.TrafficRoles[0].Key != (client.ObjectKey{Name: TrafficRoleName}) {
		t.Fatalf("join's TrafficRoles = %+v, want join's ClusterRole %s", res.TrafficRoles, TrafficRoleName)
	}
	var role rbacv1.ClusterRole
	if err := member.Client.Get(ctx, client.ObjectKey{Name: TrafficRoleName}, &role); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hubaccess.TrafficRules(), role.Rules); diff != "" {
		t.Errorf("traffic ClusterRole rules (-contract +got):\n%s", diff)
	}
	hubOnMember := impersonate(t, envs[1], namespace)
	svc := func(ns string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo-us"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "lb.us.example.com"}}
	}
	if err := hubOnMember.Create(ctx, svc("team-a"), client.DryRunAll); err != nil {
		t.Errorf("the hub creating a Service in team-a: %v", err)
	}
	// Join waits for the guard's RayService and Namespace policies; this one may load a moment later.
	gomega.NewWithT(t).Eventually(func() string {
		rule, _, _ := hubpolicy.ParseDenial(hubOnMember.Create(ctx, svc("team-b"), client.DryRunAll))
		return rule
	}).WithTimeout(waitTimeout).Should(gomega.Equal(hubpolicy.RuleNamespaceOwner),
		"the hub creating a Service in team-b, which it did not create and was not allowed into")
	if err := hubOnMember.List(ctx, &corev1.SecretList{}, client.InNamespace("team-a")); !apierrors.IsForbidden(err) {
		t.Errorf("the hub listing Secrets in team-a: %v, want Forbidden", err)
	}
	if _, err := Unjoin(ctx, hub.Client, member.Client, UnjoinOptions{Name: "m1", HubNamespace: "rayfleet-system", MemberNamespace: namespace}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
		if err := member.Client.Get(ctx, client.ObjectKey{Name: TrafficRoleName}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, the traffic %T: %v, want NotFound", obj, err)
		}
	}
}
