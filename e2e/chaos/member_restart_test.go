//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// spokeDeletionDelay is how long the spoke keeps a RayCluster its RayService no longer uses
// when rayClusterDeletionDelaySeconds is unset: KubeRay's default, which the spoke keeps
// (defaultDeletionDelay in spoke/rayservice/cleanup.go).
const spokeDeletionDelay = 60 * time.Second

// deletionSlack is how much earlier than the switch plus spokeDeletionDelay the old RayCluster
// may go without counting as early: the spoke records the deletion time in whole seconds
// (RFC 3339), and the test sees the switch by polling.
const deletionSlack = 2 * time.Second

// settleAfterFault is how long a recovered RayService must stay Ready after each fault.
const settleAfterFault = 10 * time.Second

// upgradeImage is the image the hub RayService is changed to: a change of rayClusterConfig
// that the spoke can only roll out with a new (pending) RayCluster.
const upgradeImage = "rayproject/ray:chaos-next"

// TestMemberRestarts is scenario 2: one member, ap, running a RayService, meets three faults
// in turn: its etcd restarted, its API server restarted, its spoke killed with SIGKILL in the
// middle of a RayService upgrade (while the pending RayCluster exists) and started again. In
// the full run each fault lasts until the hub shows ap not Ready (the detect figure); in the
// short run the component is started again at once. The upgrade must finish on the RayCluster
// that was pending when the spoke died, the old RayCluster must be deleted on the spoke's
// schedule (not before its deletion delay after the switch, and not never: KubeRay #2048), and
// nothing else may be lost.
func TestMemberRestarts(t *testing.T) {
	const ns, name, policy = "restarts", "svc", "ap-first"
	hold := "at once"
	if full() {
		hold = "once the hub shows ap not Ready"
	}
	r := scenario(t, 2, "member etcd, API server and spoke restarted",
		"a RayService running on ap (failover toleration 1h); in turn: (a) ap's etcd stopped and started again, "+
			"(b) ap's kube-apiserver stopped and started again, (c) the hub RayService's image changed and ap's spoke "+
			"killed with SIGKILL while the pending RayCluster exists (its dashboard held at 503 until then), then started "+
			"again; each started "+hold,
		fmt.Sprintf("after each fault ap Ready on the hub with a fresh heartbeat, its copy and the hub RayService Ready (and still "+
			"so %v later), nothing moved; the "+
			"upgrade finishes on the RayCluster pending at the kill (member copy's activeServiceStatus, the binding, the "+
			"hub RayService Ready at the new generation); the old RayCluster deleted by the spoke no earlier than %v "+
			"after the switch (less %v of rounding) and not never; no third RayCluster; nothing else lost (ledger)",
			settleAfterFault, spokeDeletionDelay, deletionSlack))
	// A pending RayCluster's Serve applications take this long to run: room for the test to
	// see the cluster pending and hold it before the upgrade can finish.
	m := startMemberFaultFleet(t, func(o *localfleet.Options) { o.DashboardDeployDelay = 3 * time.Second })
	p := m.placeOnAP(ns, name, policy)
	l := snapshot(t.Context(), t, m.f)

	m.restartMember(r, "etcd", func() error { return m.f.StopMemberEtcd(memberAP) },
		func(ctx context.Context) error { return m.f.StartMemberEtcd(ctx, memberAP) }, p)
	m.restartMember(r, "API server", func() error { return m.f.StopMemberAPIServer(memberAP) },
		func(ctx context.Context) error { return m.f.StartMemberAPIServer(ctx, memberAP) }, p)
	old := m.upgradeThroughSpokeKill(r, p)

	l.allowGone(memberAP, "RayCluster", ns, old)
	l.count(t.Context(), t, m.f, r)
}

// placeOnAP creates the RayService ns/name on ap alone and waits until it is Ready there;
// then its policy is widened to us too, so that a failover would have somewhere to go. The
// toleration (an hour) keeps it on ap through every fault.
func (m *memberFaults) placeOnAP(ns, name, policy string) placedRayService {
	m.t.Helper()
	m.createNamespace(ns)
	m.createPolicy(ns, policy, fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: selectRegions(memberAP),
		Failover:        &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](3600)},
		Rollout:         &fleetv1alpha1.RolloutStrategy{SoakSeconds: ptr.To[int32](2)},
	})
	m.createRayService(ns, name, policy)
	p := placedRayService{ns: ns, name: name, clusters: []string{memberAP}}
	m.eventually(timeout, func(g gomega.Gomega) { m.expectServing(g, p) })
	m.setPolicySelector(ns, policy, selectRegions(memberAP, memberUS))
	consistently(m.t, 3*time.Second, func(g gomega.Gomega) { m.expectPlaced(g, p) })
	return p
}

// expectServing checks that p is where it was placed, its copies and the hub RayService Ready.
func (m *memberFaults) expectServing(g gomega.Gomega, p placedRayService) {
	m.expectPlaced(g, p)
	for _, member := range p.clusters {
		g.Expect(rayServiceIsReady(m.memberRayService(g, member, p.ns, p.name))).To(gomega.BeTrue(), "copy of %s on %s Ready", p.name, member)
	}
	g.Expect(rayServiceIsReady(m.hubRayService(g, p.ns, p.name))).To(gomega.BeTrue(), "hub RayService %s Ready", p.name)
	g.Expect(m.failoverEvents(g, p.ns)).To(gomega.BeZero(), "FailedOver or Moving events in %s", p.ns)
}

// restartMember stops one of ap's components with stop and starts it again with start: at
// once in the short run, once the hub shows ap not Ready in the full run (detect). It then
// waits until ap is back on the hub with a fresh heartbeat and p serves as before (recover),
// and adds the figures, named after what, to r.
func (m *memberFaults) restartMember(r *Result, what string, stop func() error, start func(context.Context) error, p placedRayService) {
	m.t.Helper()
	m.down = memberAP
	stoppedAt := time.Now()
	if err := stop(); err != nil {
		m.t.Fatalf("stopping the %s of %s: %v", what, memberAP, err)
	}
	if full() {
		r.Add(what+": detect (ap NotReady on the hub)", m.waitNotReady(memberAP, hubHeartbeatTimeout+timeout).Sub(stoppedAt))
	}
	restartedAt := time.Now()
	if err := start(m.t.Context()); err != nil {
		m.t.Fatalf("starting the %s of %s again: %v", what, memberAP, err)
	}
	m.down = ""
	servingAt := time.Now()
	backAt := m.waitBack(memberAP, restartedAt, timeout)
	m.eventually(timeout, func(g gomega.Gomega) { m.expectServing(g, p) })
	recoveredAt := time.Now()
	// and stays so: a member's control plane back from an outage must not drop its Pods.
	consistently(m.t, settleAfterFault, func(g gomega.Gomega) { m.expectServing(g, p) })
	r.Add(what+": down", servingAt.Sub(stoppedAt))
	r.Add(what+": recover (ap Ready on the hub)", backAt.Sub(restartedAt))
	r.Add(what+": recover (copy and hub RayService Ready)", recoveredAt.Sub(restartedAt))
}

// upgradeThroughSpokeKill changes the hub RayService p so that ap's spoke upgrades it through a
// pending RayCluster, kills the spoke while that cluster exists, and starts it again; it checks
// that the upgrade finishes on that cluster and that the old one is deleted on schedule, and
// returns the old one's name.
func (m *memberFaults) upgradeThroughSpokeKill(r *Result, p placedRayService) string {
	m.t.Helper()
	t := m.t
	g := gomega.NewWithT(t)
	before := m.memberRayService(g, memberAP, p.ns, p.name)
	g.Expect(before.Spec.RayClusterDeletionDelaySeconds).To(gomega.BeNil(), "rayClusterDeletionDelaySeconds of the copy")
	old := before.Status.ActiveServiceStatus.RayClusterName
	g.Expect(old).NotTo(gomega.BeEmpty(), "active RayCluster on %s", memberAP)

	generation := m.updateRayService(p.ns, p.name, func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, upgradeImage) })
	// The pending RayCluster is named in the copy's status before its head is up; its dashboard
	// then answers 503, so that the upgrade cannot finish before the spoke is killed.
	var pending string
	var held *raydashboard.Cluster
	m.eventually(timeout, func(g gomega.Gomega) {
		c := m.memberRayService(g, memberAP, p.ns, p.name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", memberAP)
		pending = c.Status.PendingServiceStatus.RayClusterName
		g.Expect(pending).NotTo(gomega.BeEmpty(), "pending RayCluster on %s", memberAP)
		held = m.f.Dashboards[memberAP].Cluster(p.ns, pending)
		held.SetFault(raydashboard.Fault{HTTPStatus: 503})
	})
	t.Cleanup(func() { held.SetFault(raydashboard.Fault{}) })
	var pendingRC rayv1.RayCluster
	m.eventually(timeout, func(g gomega.Gomega) {
		g.Expect(m.f.Members[memberAP].Client.Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: pending}, &pendingRC)).
			To(gomega.Succeed(), "pending RayCluster %s on %s", pending, memberAP)
	})
	sw := m.watchSwitch(p.ns, p.name, old, pending)

	killedAt := time.Now()
	if err := m.f.KillSpoke(memberAP); err != nil {
		t.Fatalf("killing the spoke of %s: %v", memberAP, err)
	}
	held.SetFault(raydashboard.Fault{})
	c := m.memberRayService(g, memberAP, p.ns, p.name)
	g.Expect(c.Status.PendingServiceStatus.RayClusterName).To(gomega.Equal(pending), "pending RayCluster when the spoke died")
	g.Expect(c.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(old), "active RayCluster when the spoke died")
	t.Logf("spoke of %s killed with %s active and %s pending", memberAP, old, pending)
	if full() {
		r.Add("spoke: detect (ap NotReady on the hub)", m.waitNotReady(memberAP, hubHeartbeatTimeout+timeout).Sub(killedAt))
	}
	restartedAt := time.Now()
	if err := m.f.StartSpoke(t.Context(), memberAP); err != nil {
		t.Fatalf("starting the spoke of %s again: %v", memberAP, err)
	}
	m.eventually(timeout, func(g gomega.Gomega) { m.expectUpgraded(g, p, pending, generation) })
	r.Add("spoke: recover (upgrade finished, the hub reports it)", time.Since(restartedAt))
	backAt := m.waitBack(memberAP, restartedAt, timeout)
	r.Add("spoke: recover (ap Ready on the hub)", backAt.Sub(restartedAt))
	var now rayv1.RayCluster
	g.Expect(m.f.Members[memberAP].Client.Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: pending}, &now)).To(gomega.Succeed())
	g.Expect(now.UID).To(gomega.Equal(pendingRC.UID), "the RayCluster pending when the spoke died was replaced")

	m.expectDeletedOnSchedule(r, p, old, pending, sw)
	return old
}

// expectUpgraded checks that the upgrade of p on ap finished on the RayCluster pending and that
// the hub reports it: the copy serves from it and has nothing pending, the binding's entry for
// ap names it, and the hub RayService is Ready at generation with no upgrade in progress.
func (m *memberFaults) expectUpgraded(g gomega.Gomega, p placedRayService, pending string, generation int64) {
	c := m.memberRayService(g, memberAP, p.ns, p.name)
	g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", memberAP)
	g.Expect(c.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(pending), "active RayCluster on %s", memberAP)
	g.Expect(c.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty(), "pending RayCluster on %s", memberAP)
	g.Expect(rayServiceIsReady(c)).To(gomega.BeTrue(), "copy on %s Ready", memberAP)
	var entry *fleetv1alpha1.ClusterStatus
	b := m.binding(g, p.ns, p.name)
	for i := range b.Status.Clusters {
		if b.Status.Clusters[i].Name == memberAP {
			entry = &b.Status.Clusters[i]
		}
	}
	g.Expect(entry).NotTo(gomega.BeNil(), "binding status of %s", memberAP)
	g.Expect(entry.ActiveRayCluster).To(gomega.Equal(pending), "binding: active RayCluster of %s", memberAP)
	g.Expect(entry.PendingRayCluster).To(gomega.BeEmpty(), "binding: pending RayCluster of %s", memberAP)
	g.Expect(entry.SpecHash).NotTo(gomega.BeEmpty(), "binding: %s has observed the current spec", memberAP)
	hub := m.hubRayService(g, p.ns, p.name)
	g.Expect(hub.Status.ObservedGeneration).To(gomega.Equal(generation), "hub RayService's observed generation")
	g.Expect(rayServiceIsReady(hub)).To(gomega.BeTrue(), "hub RayService Ready")
	g.Expect(meta.IsStatusConditionTrue(hub.Status.Conditions, string(rayv1.UpgradeInProgress))).To(gomega.BeFalse(),
		"hub RayService UpgradeInProgress")
	m.expectPlaced(g, p)
}

// expectDeletedOnSchedule waits until the old RayCluster is gone and checks, from ap's audit
// log, that the spoke deleted it no earlier than its deletion delay after the switch and not
// before the deletion time it recorded on the cluster, and that only the new RayCluster is
// left.
func (m *memberFaults) expectDeletedOnSchedule(r *Result, p placedRayService, old, current string, sw *switchWatch) {
	m.t.Helper()
	t := m.t
	m.eventually(spokeDeletionDelay+timeout, func(g gomega.Gomega) {
		var rc rayv1.RayCluster
		err := m.f.Members[memberAP].Client.Get(t.Context(), client.ObjectKey{Namespace: p.ns, Name: old}, &rc)
		g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "old RayCluster %s on %s still there (err %v)", old, memberAP, err)
	})
	switchedAt, deleteAfter := sw.stop()
	g := gomega.NewWithT(t)
	g.Expect(switchedAt.IsZero()).To(gomega.BeFalse(), "the switch to %s was never seen", current)
	writes := memberWrites(t, m.f, switchedAt.Add(-time.Minute), time.Now().Add(time.Second))
	deletedAt, ok := firstMemberDelete(writes, memberAP, localfleet.SpokeUser, "rayclusters", p.ns, old)
	g.Expect(ok).To(gomega.BeTrue(), "no delete of RayCluster %s by the spoke in %s's audit log", old, memberAP)
	after := deletedAt.Sub(switchedAt)
	r.Add("old RayCluster deleted after the switch", after)
	t.Logf("switch to %s seen at %s; %s scheduled for deletion at %s, deleted at %s (%v after the switch)", current,
		switchedAt.Format(time.RFC3339Nano), old, deleteAfter, deletedAt.Format(time.RFC3339Nano), after.Round(time.Millisecond))
	g.Expect(after).To(gomega.BeNumerically(">=", spokeDeletionDelay-deletionSlack),
		"old RayCluster %s deleted %v after the switch, before the deletion delay %v", old, after, spokeDeletionDelay)
	g.Expect(after).To(gomega.BeNumerically("<=", spokeDeletionDelay+timeout), "old RayCluster %s deleted late", old)
	if deleteAfter != "" {
		at, err := time.Parse(time.RFC3339, deleteAfter)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%s annotation of %s", labels.DeleteAfter, old)
		g.Expect(deletedAt).To(gomega.BeTemporally(">=", at), "%s deleted before its %s", old, labels.DeleteAfter)
	}
	var list rayv1.RayClusterList
	g.Expect(m.f.Members[memberAP].Client.List(t.Context(), &list, client.InNamespace(p.ns))).To(gomega.Succeed())
	names := make([]string, 0, len(list.Items))
	for _, rc := range list.Items {
		names = append(names, rc.Name)
	}
	g.Expect(names).To(gomega.Equal([]string{current}), "RayClusters left on %s", memberAP)
}

// switchWatch polls ap's copy of a RayService and its old RayCluster in the background: when
// the copy first named the new cluster active, and the deletion time the spoke recorded on the
// old one.
type switchWatch struct {
	cancel      context.CancelFunc
	done        chan struct{}
	mu          sync.Mutex
	switchedAt  time.Time
	deleteAfter string
}

// watchSwitch starts polling until stop (or the end of the test).
func (m *memberFaults) watchSwitch(ns, name, old, current string) *switchWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &switchWatch{cancel: cancel, done: make(chan struct{})}
	m.t.Cleanup(func() { w.stop() })
	member := m.f.Members[memberAP].Client
	go func() {
		defer close(w.done)
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			var rs rayv1.RayService
			if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rs); err == nil &&
				rs.Status.ActiveServiceStatus.RayClusterName == current {
				w.record(func() {
					if w.switchedAt.IsZero() {
						w.switchedAt = time.Now()
					}
				})
			}
			var rc rayv1.RayCluster
			if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: old}, &rc); err == nil && rc.Annotations[labels.DeleteAfter] != "" {
				w.record(func() { w.deleteAfter = rc.Annotations[labels.DeleteAfter] })
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// record applies one observation under the lock.
func (w *switchWatch) record(apply func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	apply()
}

// stop ends the polling and returns when the switch was first seen (zero if never) and the
// last deletion time seen on the old cluster ("" if none).
func (w *switchWatch) stop() (switchedAt time.Time, deleteAfter string) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.switchedAt, w.deleteAfter
}
