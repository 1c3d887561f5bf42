//go:build e2e

package bluegreen

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/chaos"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// frozenMessage is what the member's API server answers a write that takes a frozen serve
// address off the copy.
const frozenMessage = "e2e: the serve address is frozen"

// grantWithin bounds how long after the hub's admin changes a MemberCluster's serve address
// grant the gateway may accept a route that follows it: one reconcile and the gateway's
// pickup, well short of the hub's resync (10 s, or 10 min for a settled RayService).
const grantWithin = 5 * time.Second

// TestServeAddressRefused has one member of a RayService served on two report a serve address
// its MemberCluster does not allow, as a compromised member would: first a name inside the
// traffic cluster (kubernetes.default.svc.cluster.local), then a private address outside the
// CIDR it is granted (another member's serve IP); then, with its own address reported again,
// the hub's admin narrows its grant to leave that address out. Each time the route ends up
// without that member, every request through the gateway is answered by the other one, the hub
// RayService's TrafficShifting says why, no backend object carries the address, and the
// member's copy and placement stay as they were; once the address is allowed again, its backend
// comes back.
//
// The spoke puts its annotation right within a Serve poll (10 s when settled), and a spoke
// stopped for longer than the hub's heartbeat timeout (10 s here) makes the member not Ready,
// which would hide the refusal behind another reason. So the spoke keeps running and the member's
// API server is told to keep the address written: a ValidatingAdmissionPolicy refuses any
// update that takes it off the copy, as a member under someone else's control would do, and the
// spoke's own write comes back when the policy goes.
func TestServeAddressRefused(t *testing.T) {
	const ns, name = "serve-address", "kiwi"
	const victim, other, elsewhere = memberEU, memberUS, memberAP
	waitMembersReady(t)
	began := time.Now()
	granted := &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{serveIPs[victim] + "/32"}}
	grantServeAddresses(t, victim, granted)
	setUp(t, ns, name, twoMemberSpec(victim, other))
	routes := recordRoute(t, ns, name)
	x := &refusal{t: t, ns: ns, name: name, victim: victim, other: other, routes: routes}

	served := waitAccepted(t, routes, x.both(), time.Time{}, firstRevisionTimeout)
	eventually(t, func(g gomega.Gomega) { g.Expect(probeGateway(t.Context()).Err).NotTo(gomega.HaveOccurred()) })
	x.req = startRequests(t, gatewayURL())
	expectAnsweredBy(t, "both members serving", waitAnswers(t, x.req, waitApplied(t, routes, x.both(), served), 100), other, victim)
	before := memberCopy(gomega.NewWithT(t), victim, ns, name)
	honest := before.Annotations[labels.ServeAddress]
	_, port, err := net.SplitHostPort(honest)
	if err != nil {
		t.Fatalf("serve address %q of the copy on %s: %v", honest, victim, err)
	}
	t.Logf("both members serve; %s reports %s, within the %s its MemberCluster grants", victim, honest, granted.CIDRs[0])

	inCluster := net.JoinHostPort("kubernetes.default.svc.cluster.local", port)
	outside := net.JoinHostPort(serveIPs[elsewhere], port)
	lift := freezeServeAddress(t, victim, ns, name, inCluster, outside)
	var patched time.Time
	off := x.refused(inCluster, "is under .", func() time.Time {
		patched = writeFrozenServeAddress(t, victim, ns, name, inCluster)
		return patched
	}, time.Time{})
	x.refused(outside, fmt.Sprintf("is in none of the CIDRs its MemberCluster grants (%s)", granted.CIDRs[0]), func() time.Time {
		return writeFrozenServeAddress(t, victim, ns, name, outside)
	}, off)
	expectCopyKept(t, victim, ns, name, before)
	lifted := time.Now()
	lift()
	back := x.servedAgain("the spoke put its serve address back", lifted)

	narrow := &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"10.98.0.0/16"}}
	var narrowed time.Time
	offByGrant := x.refused(honest, "is in none of the CIDRs its MemberCluster grants (10.98.0.0/16)", func() time.Time {
		setServeAddresses(t, victim, narrow)
		narrowed = time.Now()
		return narrowed
	}, time.Time{})
	expectCopyKept(t, victim, ns, name, before)
	regranted := time.Now()
	setServeAddresses(t, victim, granted)
	backByGrant := x.servedAgain("its grant was widened again", regranted)

	for what, took := range map[string]time.Duration{
		"a route without it after its grant was narrowed": offByGrant.Sub(narrowed),
		"a route with it after its grant was widened":     backByGrant.Sub(regranted),
	} {
		if took > grantWithin {
			t.Errorf("the gateway accepted %s %v later, want within %v", what, took.Round(time.Millisecond), grantWithin)
		}
	}
	x.req.Close()
	all := x.req.All()
	t.Log(chaos.FigureLine("serveaddress", "refused_to_off", off.Sub(patched), "put_right_to_back", back.Sub(lifted),
		"narrowed_to_off", offByGrant.Sub(narrowed), "regranted_to_back", backByGrant.Sub(regranted),
		"test", time.Since(began), "requests", len(all), "failed", count(all).failed))
	expectNoFailures(t, routes, all)
}

// twoMemberSpec places a RayService on members a and b at once (no rollout, no soak) and routes
// it through the fleet's Gateway at /.
func twoMemberSpec(a, b string) fleetv1alpha1.PlacementPolicySpec {
	return fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](2),
		ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: regionKey, Operator: metav1.LabelSelectorOpIn, Values: []string{a, b},
		}}},
		Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone, SoakSeconds: ptr.To[int32](0)},
		Traffic: &fleetv1alpha1.TrafficSpec{
			ParentRef:  fleetv1alpha1.TrafficParentRef{Namespace: localfleet.GatewayNamespace, Name: localfleet.GatewayName},
			PathPrefix: "/",
		},
	}
}

// refusal is TestServeAddressRefused's state while the victim's address is refused.
type refusal struct {
	t             *testing.T
	ns, name      string
	victim, other string
	routes        *routeRecorder
	req           *requester
	// checkedUntil is when the answers last checked to come from the other member only end.
	checkedUntil time.Time
}

// both are the route's weights with both members serving.
func (x *refusal) both() map[string]int32 {
	return map[string]int32{x.other: 5000, x.victim: 5000}
}

// refused runs act (which returns when it acted), after which the victim's address may not be
// routed to, and checks that the gateway accepts a route giving the other member everything
// (since off when an earlier refusal already had it so; zero for none), that TrafficShifting
// says address was refused and why (whyPart), that no backend object carries it, and that
// requests are answered by the other member only. It returns when the gateway accepted the
// route without the victim.
func (x *refusal) refused(address, whyPart string, act func() time.Time, off time.Time) time.Time {
	t := x.t
	t.Helper()
	host, _, _ := net.SplitHostPort(address)
	acted := act()
	if off.IsZero() {
		off = waitAccepted(t, x.routes, map[string]int32{x.other: 10000}, acted, timeout)
		t.Logf("%s's %s refused: the gateway accepted a route without it %v later",
			x.victim, address, off.Sub(acted).Round(time.Millisecond))
	}
	want := fmt.Sprintf("%s takes no traffic: serve address refused: %s %s", x.victim, host, whyPart)
	eventually(t, func(g gomega.Gomega) {
		c := trafficShifting(g, x.ns, x.name)
		g.Expect(c).NotTo(gomega.BeNil(), "TrafficShifting")
		g.Expect(c.Message).To(gomega.ContainSubstring(want), "TrafficShifting")
		s, err := readRoute(context.Background(), x.ns, x.name)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(s.weights).To(gomega.Equal(map[string]int32{x.other: 10000}), "route")
		g.Expect(backendHosts(g, x.ns, x.name)).NotTo(gomega.ContainElement(host), "addresses of the route's backends")
	})
	t.Logf("TrafficShifting: %s", trafficShifting(gomega.NewWithT(t), x.ns, x.name).Message)
	from := waitApplied(t, x.routes, map[string]int32{x.other: 10000}, off)
	if x.checkedUntil.After(from) {
		from = x.checkedUntil
	}
	answers := waitAnswers(t, x.req, from, 50)
	x.checkedUntil = time.Now()
	expectAnsweredBy(t, x.victim+"'s "+address+" refused", answers, x.other)
	return off
}

// servedAgain waits, after the victim's address was allowed again at since (why), for the
// gateway to accept a route with both members, both to answer, and TrafficShifting to name no
// member that takes no traffic. It returns when the gateway accepted that route.
func (x *refusal) servedAgain(why string, since time.Time) time.Time {
	t := x.t
	t.Helper()
	back := waitAccepted(t, x.routes, x.both(), since, timeout)
	t.Logf("%s: the gateway accepted a route with %s %v later", why, x.victim, back.Sub(since).Round(time.Millisecond))
	expectAnsweredBy(t, "after "+why, waitAnswers(t, x.req, waitApplied(t, x.routes, x.both(), back), 100), x.other, x.victim)
	eventually(t, func(g gomega.Gomega) {
		c := trafficShifting(g, x.ns, x.name)
		g.Expect(c).NotTo(gomega.BeNil(), "TrafficShifting")
		g.Expect(c.Message).NotTo(gomega.ContainSubstring("takes no traffic"), "TrafficShifting")
	})
	return back
}

// expectAnsweredBy checks that the answers among answers came from clusters only, each of
// them answering at least once.
func expectAnsweredBy(t *testing.T, what string, answers []answer, clusters ...string) {
	t.Helper()
	tl := count(answers)
	for _, c := range clusters {
		if tl.byCluster[c] == 0 {
			t.Errorf("%s: no answer from %s: %s", what, c, tl)
		}
	}
	for c := range tl.byCluster {
		if !strings.Contains(" "+strings.Join(clusters, " ")+" ", " "+c+" ") {
			t.Errorf("%s: %d answers from %s, want only %v: %s", what, tl.byCluster[c], c, clusters, answersFrom(answers, c))
		}
	}
}

// expectCopyKept checks that member's copy of ns/name is the one it had before (same UID and
// generation: the hub neither replaced nor rewrote it), still Ready, and that the binding still
// places the member without it leaving.
func expectCopyKept(t *testing.T, member, ns, name string, before *rayv1.RayService) {
	t.Helper()
	g := gomega.NewWithT(t)
	c := memberCopy(g, member, ns, name)
	if c == nil {
		t.Fatalf("the copy of %s/%s on %s is gone", ns, name, member)
	}
	if c.UID != before.UID || c.Generation != before.Generation {
		t.Errorf("the copy of %s/%s on %s is uid %s generation %d, was uid %s generation %d",
			ns, name, member, c.UID, c.Generation, before.UID, before.Generation)
	}
	if !ready(c) {
		t.Errorf("the copy of %s/%s on %s is not Ready", ns, name, member)
	}
	b := binding(g, ns, name)
	if !strings.Contains(" "+strings.Join(b.Spec.Clusters, " ")+" ", " "+member+" ") {
		t.Errorf("the binding of %s/%s places %v, not %s", ns, name, b.Spec.Clusters, member)
	}
	if cs := clusterStatus(b, member); cs == nil || cs.Leaving != nil {
		t.Errorf("the binding of %s/%s: status of %s %+v, want it placed and not leaving", ns, name, member, cs)
	}
}

// backendHosts are the addresses the hub's backend objects for ns/name point at: ExternalName
// Services' names and EndpointSlices' addresses.
func backendHosts(g gomega.Gomega, ns, name string) []string {
	origin := client.MatchingLabels{labels.OriginNamespace: ns, labels.OriginName: name}
	var services corev1.ServiceList
	g.Expect(fleet.Hub.Client.List(context.Background(), &services, client.InNamespace(ns), origin)).To(gomega.Succeed())
	var eps discoveryv1.EndpointSliceList
	g.Expect(fleet.Hub.Client.List(context.Background(), &eps, client.InNamespace(ns), origin)).To(gomega.Succeed())
	var out []string
	for _, s := range services.Items {
		if s.Spec.ExternalName != "" {
			out = append(out, strings.TrimSuffix(s.Spec.ExternalName, "."))
		}
	}
	for _, s := range eps.Items {
		for _, e := range s.Endpoints {
			out = append(out, e.Addresses...)
		}
	}
	return out
}

// grantServeAddresses sets member's MemberCluster spec.serveAddresses to ranges until the test
// ends, when what it had comes back.
func grantServeAddresses(t *testing.T, member string, ranges *fleetv1alpha1.ServeAddressRanges) {
	t.Helper()
	had := setServeAddresses(t, member, ranges)
	t.Cleanup(func() { setServeAddresses(t, member, had) })
}

// setServeAddresses sets member's MemberCluster spec.serveAddresses to ranges and returns what
// it had.
func setServeAddresses(t *testing.T, member string, ranges *fleetv1alpha1.ServeAddressRanges) *fleetv1alpha1.ServeAddressRanges {
	t.Helper()
	var had *fleetv1alpha1.ServeAddressRanges
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var mc fleetv1alpha1.MemberCluster
		if err := fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Name: member}, &mc); err != nil {
			return err
		}
		had, mc.Spec.ServeAddresses = mc.Spec.ServeAddresses, ranges
		return fleet.Hub.Client.Update(context.Background(), &mc)
	})
	if err != nil {
		t.Errorf("setting serve addresses %+v on MemberCluster %s: %v", ranges, member, err)
	}
	return had
}

// freezeServeAddress makes member's API server refuse any update of its copy of ns/name that
// takes the serve-address annotation from one of frozen to anything else (the spoke's write of
// the address it finds, to begin with). It returns a func that lifts this, which also runs when
// the test ends.
func freezeServeAddress(t *testing.T, member, ns, name string, frozen ...string) func() {
	t.Helper()
	quoted := make([]string, len(frozen))
	for i, f := range frozen {
		quoted[i] = strconv.Quote(f)
	}
	annotation := func(obj string) string {
		key := strconv.Quote(labels.ServeAddress)
		return fmt.Sprintf("has(%[1]s.metadata.annotations) && %[2]s in %[1]s.metadata.annotations ? %[1]s.metadata.annotations[%[2]s] : ''", obj, key)
	}
	policyName := "e2e-freeze-serve-address-" + ns + "-" + name
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{name},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{"ray.io"}, APIVersions: []string{"v1"}, Resources: []string{"rayservices"},
					},
				},
			}}},
			Variables: []admissionregistrationv1.Variable{
				{Name: "old", Expression: annotation("oldObject")},
				{Name: "new", Expression: annotation("object")},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("!(variables.old in [%[1]s]) || variables.new in [%[1]s]", strings.Join(quoted, ", ")),
				Message:    frozenMessage,
			}},
		},
	}
	policyBinding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
			}},
		},
	}
	c := fleet.Members[member].Client
	for _, obj := range []client.Object{policy, policyBinding} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T %s on %s: %v", obj, obj.GetName(), member, err)
		}
	}
	lifted := false
	lift := func() {
		if lifted {
			return
		}
		lifted = true
		for _, obj := range []client.Object{policyBinding, policy} {
			if err := c.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s on %s: %v", obj, obj.GetName(), member, err)
			}
		}
	}
	t.Cleanup(lift)
	return lift
}

// writeFrozenServeAddress writes address as the serve address of member's copy of ns/name and
// returns once the member's API server keeps it there (freezeServeAddress in force: a dry run
// taking it off is refused), writing it again if the spoke put its own back meanwhile. It
// returns when the address was last written.
func writeFrozenServeAddress(t *testing.T, member, ns, name, address string) time.Time {
	t.Helper()
	c := fleet.Members[member].Client
	patch := func(value string, opts ...client.PatchOption) error {
		body := fmt.Sprintf(`{"metadata":{"annotations":{%s:%s}}}`, strconv.Quote(labels.ServeAddress), strconv.Quote(value))
		rs := memberCopy(gomega.NewWithT(t), member, ns, name)
		if rs == nil {
			return fmt.Errorf("no copy of %s/%s on %s", ns, name, member)
		}
		return c.Patch(context.Background(), rs, client.RawPatch(types.MergePatchType, []byte(body)), opts...)
	}
	var written time.Time
	eventually(t, func(g gomega.Gomega) {
		rs := memberCopy(g, member, ns, name)
		g.Expect(rs).NotTo(gomega.BeNil(), "copy on %s", member)
		if rs.Annotations[labels.ServeAddress] != address {
			g.Expect(patch(address)).To(gomega.Succeed(), "writing serve address %s on %s", address, member)
			written = time.Now()
		}
		err := patch("10.0.0.1:1", client.DryRunAll)
		g.Expect(err).To(gomega.HaveOccurred(), "a dry run taking serve address %s off the copy on %s", address, member)
		g.Expect(err.Error()).To(gomega.ContainSubstring(frozenMessage))
	})
	return written
}
