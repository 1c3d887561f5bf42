//go:build e2e

package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// TestMemberAPIServerOutage is scenario 1: in a steady fleet, ap's API server is stopped for
// span(2m, 30s) (at least until the hub notices), then started again. The hub must show ap not
// Ready within its heartbeat timeout; nothing may move (the outage is within the policies'
// failover toleration) nor be deleted anywhere; ap must be Ready again afterwards, and during a
// quiet span(60s, 20s) after that the hub must write nothing on the members but status.
func TestMemberAPIServerOutage(t *testing.T) {
	const ns = "outage"
	outage := span(2*time.Minute, 30*time.Second)
	quiet := span(60*time.Second, 20*time.Second)
	// Well past the outage and its detection: the hub must ride the outage out in place.
	toleration := outage + 2*time.Minute
	r := scenario(t, 1, "member API server outage",
		fmt.Sprintf("ap's kube-apiserver stopped for %v (or until the hub noticed, if later) in a steady fleet of 4 "+
			"RayServices, 3 of them with a copy on ap (failover toleration %v), then started again", outage, toleration),
		fmt.Sprintf("ap NotReady on the hub within its heartbeat timeout (%v); no failover and no copy moved or added "+
			"during the outage; nothing deleted anywhere (ledger); ap Ready again, and every copy and hub RayService "+
			"Ready throughout a quiet %v after recovery, during which the hub writes no spec on any member", hubHeartbeatTimeout, quiet))
	m := startMemberFaultFleet(t, nil)
	placed := m.placeSteadyFleet(ns, toleration)
	l := snapshot(t.Context(), t, m.f)

	m.down = memberAP
	stoppedAt := time.Now()
	if err := m.f.StopMemberAPIServer(memberAP); err != nil {
		t.Fatalf("stopping the API server of %s: %v", memberAP, err)
	}
	detect := m.waitNotReady(memberAP, hubHeartbeatTimeout+timeout).Sub(stoppedAt)
	r.Add("detect (ap NotReady on the hub)", detect)
	if detect > hubHeartbeatTimeout {
		t.Errorf("the hub showed %s not Ready %v after its API server stopped, later than its heartbeat timeout %v",
			memberAP, detect.Round(time.Millisecond), hubHeartbeatTimeout)
	}
	// The rest of the outage, at least a few polls: nothing moves, nothing goes.
	consistently(t, max(outage-time.Since(stoppedAt), 5*time.Second), func(g gomega.Gomega) {
		m.expectSteady(g, ns, placed)
	})

	restoredAt := time.Now()
	r.Add("outage", restoredAt.Sub(stoppedAt))
	if err := m.f.StartMemberAPIServer(t.Context(), memberAP); err != nil {
		t.Fatalf("starting the API server of %s again: %v", memberAP, err)
	}
	m.down = ""
	backAt := m.waitBack(memberAP, restoredAt, timeout)
	r.Add("recover (ap Ready on the hub)", backAt.Sub(restoredAt))
	m.eventually(timeout, func(g gomega.Gomega) { m.expectServingAll(g, ns, placed) })
	r.Add("recover (every hub RayService Ready)", time.Since(restoredAt))

	// The quiet span after recovery: nothing moves, everything stays Ready, and the hub writes
	// no spec on any member.
	consistently(t, max(quiet-time.Since(backAt), poll), func(g gomega.Gomega) { m.expectServingAll(g, ns, placed) })
	during := tallyMemberWrites(memberWrites(t, m.f, stoppedAt, backAt))
	after := tallyMemberWrites(memberWrites(t, m.f, backAt, backAt.Add(quiet)))
	r.Add("writes from the stop to Ready again", during)
	r.Add(fmt.Sprintf("writes in the quiet %v after", quiet), after)
	t.Logf("member writes from the stop to ap Ready again: %s; in the quiet %v after: %s", during, quiet, after)
	for _, w := range after.hubSpec {
		t.Errorf("spec write by the hub during the quiet span after recovery: %s", w)
	}
	l.count(t.Context(), t, m.f, r)
}

// placeSteadyFleet places four RayServices in ns and waits until every copy is Ready: two on
// ap alone, one on ap and eu, one on us alone. The policies of those on ap are widened
// afterwards (ap or us; two of ap, eu and us), so that a failover would have somewhere to go:
// only the failover toleration (toleration) keeps them on ap while it is not Ready.
func (m *memberFaults) placeSteadyFleet(ns string, toleration time.Duration) []placedRayService {
	m.t.Helper()
	m.createNamespace(ns)
	failover := &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To(int64(toleration / time.Second))}
	m.createPolicy(ns, "ap-or-us", fleetv1alpha1.PlacementPolicySpec{ClusterSelector: selectRegions(memberAP), Failover: failover})
	m.createPolicy(ns, "two-with-ap", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](2), ClusterSelector: selectRegions(memberAP, memberEU), Failover: failover,
	})
	m.createPolicy(ns, "us-only", fleetv1alpha1.PlacementPolicySpec{ClusterSelector: selectRegions(memberUS), Failover: failover})
	placed := []placedRayService{
		{ns: ns, name: "ap-1", clusters: []string{memberAP}},
		{ns: ns, name: "ap-2", clusters: []string{memberAP}},
		{ns: ns, name: "ap-eu", clusters: []string{memberAP, memberEU}},
		{ns: ns, name: "us-1", clusters: []string{memberUS}},
	}
	policies := map[string]string{"ap-1": "ap-or-us", "ap-2": "ap-or-us", "ap-eu": "two-with-ap", "us-1": "us-only"}
	for _, p := range placed {
		m.createRayService(ns, p.name, policies[p.name])
	}
	m.eventually(timeout, func(g gomega.Gomega) { m.expectServingAll(g, ns, placed) })
	// Widened only now that ap holds them: a member holding a RayService keeps it.
	m.setPolicySelector(ns, "ap-or-us", selectRegions(memberAP, memberUS))
	m.setPolicySelector(ns, "two-with-ap", selectRegions(memberAP, memberEU, memberUS))
	consistently(m.t, 3*time.Second, func(g gomega.Gomega) { m.expectSteady(g, ns, placed) })
	return placed
}

// expectSteady checks that every RayService of placed is where it was, with no copy elsewhere,
// and that the hub announced no failover or move in ns.
func (m *memberFaults) expectSteady(g gomega.Gomega, ns string, placed []placedRayService) {
	for _, p := range placed {
		m.expectPlaced(g, p)
	}
	g.Expect(m.failoverEvents(g, ns)).To(gomega.BeZero(), "FailedOver or Moving events in %s", ns)
}

// expectServingAll checks expectServing (placed where they were, copies and hub RayServices
// Ready, no failover announced) for every RayService of placed.
func (m *memberFaults) expectServingAll(g gomega.Gomega, ns string, placed []placedRayService) {
	for _, p := range placed {
		m.expectServing(g, p)
	}
}
