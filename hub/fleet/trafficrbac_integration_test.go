package fleet

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// hubAccessUser is the hub's identity on a member, as its API server sees the ServiceAccount
// token `rayfleet join` and the spoke chart give the hub.
var hubAccessUser = rest.ImpersonationConfig{
	UserName: "system:serviceaccount:" + hubaccess.DefaultNamespace + ":" + hubaccess.ServiceAccountName,
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + hubaccess.DefaultNamespace, "system:authenticated"},
}

// The hub holds on its members only what `rayfleet join` gives it: hubaccess.HubRules, and the
// traffic rules in the Gateway's namespace, as releases that wrote routes there were told to
// grant. A RayService routed through that Gateway then gets TrafficShifting=False, reason
// Forbidden, in the API server's words and naming the settings that grant the rights; its
// copy and the earlier route stay. Rights on routes without their backends' Services are
// Forbidden too; once the admin grants the RayService's namespace all of them, the route is
// written there.
func TestFleetTrafficForbidden(t *testing.T) {
	h, tc, legacy := startTrafficOnMember(t)
	g := NewWithT(t)
	ctx := context.Background()
	key := traffic.Key(types.NamespacedName{Namespace: ns, Name: "svc"})

	t.Log("no rights in the RayService's namespace on the traffic cluster: Forbidden, saying which and where to grant them")
	g.Eventually(func(g Gomega) {
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonTrafficForbidden), c.Message)
		g.Expect(c.Message).To(And(
			ContainSubstring("the hub holds no rights on routes in namespace "+ns+" of the traffic cluster"),
			MatchRegexp(`cannot \w+ resource "httproutes" in API group "gateway.networking.k8s.io" in the namespace "`+ns+`"`),
			ContainSubstring(hubAccessUser.UserName),
			ContainSubstring("traffic.namespaces"), ContainSubstring("--traffic-namespace"), ContainSubstring("hubTraffic.namespaces")))
	}, timeout, interval).Should(Succeed())

	t.Log("nothing else goes: the copy, its placement and the earlier route stay")
	g.Consistently(func(g Gomega) {
		g.Expect(h.binding(g, "svc").Spec.Clusters).To(Equal([]string{"a"}))
		g.Expect(h.memberCopy(g, "a", "svc")).NotTo(BeNil())
		g.Expect(tc.Get(ctx, legacy, &gwv1.HTTPRoute{})).To(Succeed())
		g.Expect(trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)).To(HaveField("Reason", fleetv1alpha1.ReasonTrafficForbidden))
	}, settle, interval).Should(Succeed())
	g.Expect(h.writes.verbs("delete")).To(BeEmpty())

	t.Log("rights on routes but not on their backends in the RayService's namespace: Forbidden on the Services")
	if err := tc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	routesOnly := slices.DeleteFunc(hubaccess.TrafficRules(), func(r rbacv1.PolicyRule) bool { return !slices.Contains(r.Resources, "httproutes") })
	grantTraffic(g, tc, ns, routesOnly)
	g.Eventually(func(g Gomega) {
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonTrafficForbidden), c.Message)
		g.Expect(c.Message).To(And(ContainSubstring("traffic.namespaces"),
			MatchRegexp(`cannot \w+ resource "services" in API group "" in the namespace "`+ns+`"`)))
	}, timeout, interval).Should(Succeed())
	g.Expect(h.memberCopy(g, "a", "svc")).NotTo(BeNil())
	g.Expect(tc.Get(ctx, legacy, &gwv1.HTTPRoute{})).To(Succeed())

	t.Log("the admin grants the RayService's namespace all of it: the route is written there, the earlier one stays")
	var role rbacv1.Role
	g.Expect(tc.Get(ctx, types.NamespacedName{Namespace: ns, Name: hubaccess.TrafficRoleName}, &role)).To(Succeed())
	role.Rules = hubaccess.TrafficRules()
	g.Expect(tc.Update(ctx, &role)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tc.Get(ctx, key.Route, &gwv1.HTTPRoute{})).To(Succeed())
		g.Expect(tc.Get(ctx, types.NamespacedName{Namespace: ns, Name: traffic.BackendName(key, "a")}, &corev1.Service{})).To(Succeed())
		c := trafficShiftingOf(h.hubRayService(g, "svc").Status.Conditions)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).NotTo(Equal(fleetv1alpha1.ReasonTrafficForbidden), c.Message)
	}, timeout, interval).Should(Succeed())
	g.Expect(tc.Get(ctx, legacy, &gwv1.HTTPRoute{})).To(Succeed())
}

// startTrafficOnMember starts members a and c, where the reconciler acts as hubAccessUser with
// HubRules and the traffic rules in the Gateway's namespace gw on c, and places team/svc on a,
// serving, routed through c's Gateway gw/gw. It returns the harness, c's admin client and the
// route an earlier hub wrote in gw.
func startTrafficOnMember(t *testing.T) (*fleetHarness, client.Client, types.NamespacedName) {
	t.Helper()
	members := []string{"a", "c"}
	users := map[string]rest.ImpersonationConfig{}
	for _, m := range members {
		users[m] = hubAccessUser
	}
	h := startFleetWith(t, fleetOptions{members: members, hubUsers: users})
	g := NewWithT(t)
	ctx := context.Background()
	tc := h.members["c"]
	for _, m := range members {
		grantHubAccess(g, h.members[m])
	}
	g.Expect(tc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gw"}})).To(Succeed())
	grantTraffic(g, tc, "gw", hubaccess.TrafficRules())

	spec := &fleetv1alpha1.TrafficSpec{Cluster: "c", ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}, PathPrefix: "/"}
	legacy, _ := traffic.LegacyKey(types.NamespacedName{Namespace: ns, Name: "svc"}, spec)
	earlier := &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: legacy.Route.Namespace, Name: legacy.Route.Name,
			Labels: map[string]string{labels.OriginNamespace: ns, labels.OriginName: "svc", labels.OriginHub: labels.DefaultHubName}},
		Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}}},
	}
	g.Expect(tc.Create(ctx, earlier)).To(Succeed())
	h.createPolicy(g, "routed", fleetv1alpha1.PlacementPolicySpec{ClusterNames: []string{"a"}, Clusters: ptr.To[int32](1), Traffic: spec})
	h.createRayService(g, "svc", "routed")
	h.serve(g, "a", "svc")
	g.Eventually(func(g Gomega) {
		rs := h.memberCopy(g, "a", "svc")
		g.Expect(rs).NotTo(BeNil())
		rs.Annotations[labels.ServeAddress] = "10.0.0.1:8000"
		g.Expect(h.members["a"].Update(ctx, rs)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	return h, tc, legacy.Route
}

// grantHubAccess gives hubAccessUser HubRules on the member, as `rayfleet join` does.
func grantHubAccess(g Gomega, member client.Client) {
	ctx := context.Background()
	g.Expect(member.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName},
		Rules: hubaccess.HubRules()})).To(Succeed())
	g.Expect(member.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hubaccess.ClusterRoleName},
		Subjects: []rbacv1.Subject{hubAccessSubject()}})).To(Succeed())
}

// grantTraffic gives hubAccessUser rules in namespace: hubaccess.TrafficRules, as `rayfleet
// join --traffic-namespace` does, or fewer.
func grantTraffic(g Gomega, member client.Client, namespace string, rules []rbacv1.PolicyRule) {
	ctx := context.Background()
	g.Expect(member.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: hubaccess.TrafficRoleName},
		Rules: rules})).To(Succeed())
	g.Expect(member.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: hubaccess.TrafficRoleName},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hubaccess.TrafficRoleName},
		Subjects: []rbacv1.Subject{hubAccessSubject()}})).To(Succeed())
}

func hubAccessSubject() rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: hubaccess.DefaultNamespace, Name: hubaccess.ServiceAccountName}
}
