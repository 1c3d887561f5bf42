//go:build e2e

package bluegreen

import (
	"context"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/chaos"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// chaosFullEnv is `make chaos`'s switch for full-length faults (e2e/chaos's envFull).
const chaosFullEnv = "RAYFLEET_CHAOS_FULL"

// partitionSpan is how long the partition lasts: the 2 minutes at full length, and in
// `make e2e` long enough for the hub to find the member not Ready (its heartbeat timeout,
// 10 s here, and a membership probe every 10 s) and to keep it so for a while.
func partitionSpan() time.Duration {
	if os.Getenv(chaosFullEnv) != "" {
		return 2 * time.Minute
	}
	return 30 * time.Second
}

// partitionToleration is the policy's failover.tolerationSeconds: by default a third of the
// shortest partition, so that the member stays placed only because the hub's probe finds its
// serve endpoint answering. $RAYFLEET_E2E_PARTITION_TOLERATION (a duration) sets it.
func partitionToleration(t *testing.T) time.Duration {
	v := os.Getenv("RAYFLEET_E2E_PARTITION_TOLERATION")
	if v == "" {
		return 10 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("RAYFLEET_E2E_PARTITION_TOLERATION=%q: %v", v, err)
	}
	return d
}

// quietAfterHeal is how long after the member is Ready again nothing may move.
const quietAfterHeal = 10 * time.Second

// TestPartitionKeepsServingMember is chaos row 8: one of two members serving a RayService
// through the Gateway is cut off from the hub in the network (the proxy in front of its API
// server as the hub sees it drops everything silently), while it, its spoke and its serve
// endpoint run on. The hub finds it not Ready, yet keeps its weight, since the hub's probe of
// its serve address still succeeds (TrafficShifting says so): the route never changes, every
// request is answered, both members answering their halves; past the failover toleration
// nothing is placed elsewhere and no copy or RayCluster is replaced. Healed, the member is
// Ready again and nothing moves. At full length the member is then partitioned again with its
// serve endpoint failing too, and fails over (failoverWhilePartitioned).
func TestPartitionKeepsServingMember(t *testing.T) {
	const ns, name = "partition", "plum"
	waitMembersReady(t)
	began := time.Now()
	toleration := partitionToleration(t)
	setUp(t, ns, name, partitionSpec(toleration))
	routes := recordRoute(t, ns, name)
	x := &partitionRun{t: t, ns: ns, name: name, routes: routes}
	x.placed()
	both := map[string]int32{x.victim: 5000, x.other: 5000}
	served := waitAccepted(t, routes, both, time.Time{}, firstRevisionTimeout)
	eventually(t, func(g gomega.Gomega) { g.Expect(probeGateway(t.Context()).Err).NotTo(gomega.HaveOccurred()) })
	x.req = startRequests(t, gatewayURL())
	expectAnsweredBy(t, "both members serving", waitAnswers(t, x.req, waitApplied(t, routes, both, served), 100), x.other, x.victim)
	before := x.workloads()

	cut := time.Now()
	if err := fleet.Partition(x.victim); err != nil {
		t.Fatalf("partitioning %s from the hub: %v", x.victim, err)
	}
	t.Logf("%s: %s partitioned from the hub", cut.Format("15:04:05.000"), x.victim)
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = fleet.Heal(x.victim)
		}
	})
	notReady := x.waitReady(false, cut)
	t.Logf("%s not Ready on the hub %v after the partition: %s", x.victim,
		notReady.Sub(cut).Round(time.Millisecond), x.readyMessage())
	span := partitionSpan()
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		x.nothingMoved(g, before)
	}).WithTimeout(max(time.Until(cut.Add(span)), 5*time.Second)).WithPolling(time.Second).Should(gomega.Succeed())
	// The hub says why the member keeps its weight: the data plane's view won.
	shifting := trafficShifting(gomega.NewWithT(t), ns, name)
	switch {
	case shifting == nil:
		t.Errorf("no TrafficShifting condition on %s/%s during the partition", ns, name)
	case !strings.Contains(shifting.Message, x.victim+" keeps its traffic"):
		t.Errorf("TrafficShifting during the partition does not say %s keeps its traffic: %s %s", x.victim, shifting.Reason, shifting.Message)
	default:
		t.Logf("TrafficShifting during the partition: %s %s", shifting.Reason, shifting.Message)
	}
	heal := time.Now()
	if err := fleet.Heal(x.victim); err != nil {
		t.Fatalf("healing the partition of %s: %v", x.victim, err)
	}
	healed = true
	readyAgain := x.waitReady(true, heal)
	t.Logf("healed; %s Ready on the hub %v later", x.victim, readyAgain.Sub(heal).Round(time.Millisecond))
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		x.nothingMoved(g, before)
	}).WithTimeout(quietAfterHeal).WithPolling(time.Second).Should(gomega.Succeed())
	x.req.Close()

	changes := 0
	for _, s := range routes.snapshot() {
		if !s.at.After(served) {
			continue
		}
		changes++
		if !maps.Equal(s.weights, both) {
			t.Errorf("the route changed to %s after both members served; route:%s", weightsText(s.weights), routes.history())
			break
		}
	}
	during := x.req.Between(cut, heal)
	expectAnsweredBy(t, "during the partition", during, x.other, x.victim)
	share := count(during).share(x.victim)
	if math.Abs(share*100-50) > shareTolerance {
		t.Errorf("%s answered %.3f of the requests during the partition, want 0.5 ± %.2f: %s",
			x.victim, share, shareTolerance/100, count(during))
	}
	all := x.req.All()
	expectNoFailures(t, routes, all)
	f := x.failoverWhilePartitioned()
	t.Log(chaos.FigureLine("partition", "victim", x.victim, "detect_not_ready", notReady.Sub(cut), "partition", heal.Sub(cut),
		"recover_ready", readyAgain.Sub(heal), "requests", len(all), "failed", count(all).failed,
		"requests_during", len(during), "victim_share_during", math.Round(share*1000)/1000,
		"route_changes", changes, "toleration", toleration,
		"failover_after_endpoint_failed", f.failover, "purged_after_ready", f.purged, "test", time.Since(began)))
}

// partitionSpec places a RayService on two of the three members at once (no rollout, no soak),
// the third left for a failover after toleration, and routes it through the fleet's Gateway
// at /.
func partitionSpec(toleration time.Duration) fleetv1alpha1.PlacementPolicySpec {
	return fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](2),
		Rollout:  &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone, SoakSeconds: ptr.To[int32](0)},
		Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To(int64(toleration / time.Second))},
		Traffic: &fleetv1alpha1.TrafficSpec{
			ParentRef:  fleetv1alpha1.TrafficParentRef{Namespace: localfleet.GatewayNamespace, Name: localfleet.GatewayName},
			PathPrefix: "/",
		},
	}
}

// partitionRun is TestPartitionKeepsServingMember's state.
type partitionRun struct {
	t        *testing.T
	ns, name string
	routes   *routeRecorder
	req      *requester
	// victim is the placed member partitioned, other the placed one that is not, spare the
	// member a failover would go to.
	victim, other, spare string
}

// placed waits until the binding places two members with their copies Ready and names them.
func (x *partitionRun) placed() {
	var clusters []string
	eventuallyFor(x.t, firstRevisionTimeout, func(g gomega.Gomega) {
		b := binding(g, x.ns, x.name)
		g.Expect(b.Spec.Clusters).To(gomega.HaveLen(2), "placed clusters")
		for _, m := range b.Spec.Clusters {
			c := memberCopy(g, m, x.ns, x.name)
			g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", m)
			g.Expect(ready(c)).To(gomega.BeTrue(), "copy on %s Ready", m)
		}
		clusters = slices.Sorted(slices.Values(b.Spec.Clusters))
	})
	x.victim, x.other = clusters[0], clusters[1]
	for _, m := range members {
		if !slices.Contains(clusters, m) {
			x.spare = m
		}
	}
}

// workloadUIDs are the UIDs and generations of the placed members' copies and of the
// RayClusters on them, keyed "member kind name".
type workloadUIDs map[string]string

// workloads reads the copies and RayClusters of ns/name on the placed members.
func (x *partitionRun) workloads() workloadUIDs {
	g := gomega.NewWithT(x.t)
	out := workloadUIDs{}
	for _, m := range []string{x.victim, x.other} {
		c := memberCopy(g, m, x.ns, x.name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", m)
		out[m+" RayService "+c.Name] = string(c.UID) + "/" + strconv.FormatInt(c.Generation, 10)
		var rcs rayv1.RayClusterList
		g.Expect(fleet.Members[m].Client.List(context.Background(), &rcs, client.InNamespace(x.ns))).To(gomega.Succeed())
		g.Expect(rcs.Items).NotTo(gomega.BeEmpty(), "RayClusters on %s", m)
		for _, rc := range rcs.Items {
			out[m+" RayCluster "+rc.Name] = string(rc.UID)
		}
	}
	return out
}

// nothingMoved checks that the placement, the copies and the RayClusters are as before: the
// same two members placed and none leaving, no copy on the spare, every workload of before
// there with its UID (and a copy's generation: the hub did not rewrite it).
func (x *partitionRun) nothingMoved(g gomega.Gomega, before workloadUIDs) {
	b := binding(g, x.ns, x.name)
	g.Expect(slices.Sorted(slices.Values(b.Spec.Clusters))).To(gomega.Equal([]string{x.victim, x.other}), "placed clusters")
	for _, m := range []string{x.victim, x.other} {
		cs := clusterStatus(b, m)
		g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s", m)
		g.Expect(cs.Leaving).To(gomega.BeNil(), "%s leaving", m)
	}
	g.Expect(memberCopy(g, x.spare, x.ns, x.name)).To(gomega.BeNil(), "a copy on %s, the spare", x.spare)
	now := workloadUIDs{}
	for _, m := range []string{x.victim, x.other} {
		if c := memberCopy(g, m, x.ns, x.name); c != nil {
			now[m+" RayService "+c.Name] = string(c.UID) + "/" + strconv.FormatInt(c.Generation, 10)
		}
		var rcs rayv1.RayClusterList
		g.Expect(fleet.Members[m].Client.List(context.Background(), &rcs, client.InNamespace(x.ns))).To(gomega.Succeed())
		for _, rc := range rcs.Items {
			if rc.DeletionTimestamp == nil {
				now[m+" RayCluster "+rc.Name] = string(rc.UID)
			}
		}
	}
	g.Expect(now).To(gomega.Equal(before), "copies and RayClusters (UID/generation)")
}

// waitReady waits until the hub shows the victim's MemberCluster Ready (or not) and returns
// when it first saw it so, after since.
func (x *partitionRun) waitReady(want bool, since time.Time) time.Time {
	var at time.Time
	eventuallyFor(x.t, 2*time.Minute, func(g gomega.Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Name: x.victim}, &mc)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.Equal(want),
			"%s Ready", x.victim)
		at = time.Now()
	})
	if at.Before(since) {
		at = since
	}
	return at
}

// readyMessage is the victim's Ready condition as the hub shows it.
func (x *partitionRun) readyMessage() string {
	var mc fleetv1alpha1.MemberCluster
	if err := fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Name: x.victim}, &mc); err != nil {
		return err.Error()
	}
	c := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
	if c == nil {
		return "no Ready condition"
	}
	return string(c.Status) + " " + c.Reason + ": " + c.Message
}
