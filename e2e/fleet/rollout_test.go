//go:build e2e

package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// The rollout tests place one RayService on us and eu (ap is stopped and started by the outage
// tests) and order the clusters by their region label, so that eu is always updated first and
// us second.
const (
	firstMember  = memberEU
	secondMember = memberUS
	// rolloutTimeout bounds a whole rollout: two member-side upgrades, each soaked, or a
	// progress deadline and a rollback.
	rolloutTimeout = 4 * time.Minute
	// newImage is the image of the second revision: a RayCluster spec change, so that each
	// member brings up a new RayCluster next to the one serving.
	newImage = "rayproject/ray:e2e-next"
	// phaseTimeSlack covers the binding's times being kept in whole seconds.
	phaseTimeSlack = time.Second
)

// A rolling upgrade goes one member at a time: eu's copy gets the new revision, and us's copy
// changes only once eu has been done (its new RayCluster active, every application RUNNING,
// Ready) for the whole soak; the rollout then completes with the new revision good. The change
// comes as soon as the hub says the first revision is Ready, long before its own soak ends: it
// rolls out from the revision that runs all the same.
func TestRolloutOneMemberAtATime(t *testing.T) {
	t.Parallel()
	const ns, name = "rollout-rolling", "svc"
	const soak = 15 * time.Second
	rev1 := setUpRolloutServing(t, ns, name, &fleetv1alpha1.RolloutStrategy{
		SoakSeconds:            ptr.To(int32(soak / time.Second)),
		MaxUnavailableClusters: ptr.To(intstr.FromInt32(1)),
		SortingLabelKey:        regionKey,
	})
	tl := watchRollout(t, ns, name, firstMember, secondMember)

	changedAt := time.Now()
	if ro := binding(gomega.NewWithT(t), ns, name).Status.Rollout; ro.GoodRevision != "" {
		t.Fatalf("the first revision %s is good already (%s): the change would not come within its soak", rev1, ro.Message)
	}
	updateHubRayService(t, ns, name, func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, newImage) })
	var rev2 string
	eventuallyFor(t, rolloutTimeout, func(g gomega.Gomega) {
		rev2 = expectRolledOut(g, ns, name)
		g.Expect(rev2).NotTo(gomega.Equal(rev1), "still the first revision")
	})
	completedAt := time.Now()

	b := binding(gomega.NewWithT(t), ns, name)
	ro := b.Status.Rollout
	t.Logf("spec change to Complete: %v as seen by the test; status.rollout startTime %v, completionTime %v (%v)",
		completedAt.Sub(changedAt).Round(time.Millisecond), ro.StartTime, ro.CompletionTime,
		ro.CompletionTime.Sub(ro.StartTime.Time))
	g := gomega.NewWithT(t)
	g.Expect(ro.Stages).To(gomega.HaveLen(1), "stages")
	g.Expect(ro.Stages[0].Clusters).To(gomega.Equal([]string{firstMember, secondMember}), "update order")
	for _, m := range []string{firstMember, secondMember} {
		writes := hubWrites(t, m, ns, name, changedAt, completedAt)
		t.Logf("hub writes of the copy on %s during the rollout: %s", m, writes)
		g.Expect(writes.accepted).To(gomega.BeNumerically(">=", 1), "the hub's writes on %s", m)
	}

	states := tl.snapshot()
	expectOneAtATime(t, states, rev2)
	expectSecondAfterFirstSoaked(t, states, rev2, soak)
}

// expectOneAtATime checks that no binding state of the rollout to rev had both clusters in
// flight (maxUnavailableClusters 1).
func expectOneAtATime(t *testing.T, states []observed, rev string) {
	t.Helper()
	for _, s := range of(states, sourceBinding) {
		b := bindingOf(s)
		if b.Status.Rollout == nil || b.Status.Rollout.TargetRevision != rev {
			continue
		}
		var inFlight []string
		for _, cs := range b.Status.Clusters {
			if cs.RolloutPhase == fleetv1alpha1.ClusterUpdating || cs.RolloutPhase == fleetv1alpha1.ClusterSoaking {
				inFlight = append(inFlight, cs.Name)
			}
		}
		if len(inFlight) > 1 {
			t.Errorf("binding (resourceVersion %s) has %v in flight at once", b.ResourceVersion, inFlight)
		}
	}
}

// expectSecondAfterFirstSoaked checks, on the timeline, that the second member's copy got rev
// only after the first member's copy had it and the binding had shown the first member
// Soaking for soak, and that the binding states around that write show the first member
// Soaking or Done before and Done after. The hub writes the next copy and then its status in
// one reconcile, so the binding may show the first member Done only just after the copy.
func expectSecondAfterFirstSoaked(t *testing.T, states []observed, rev string, soak time.Duration) {
	t.Helper()
	at := -1
	for i, s := range states {
		if s.source == secondMember && rayServiceOf(s).Annotations[labels.Revision] == rev {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatalf("no state of the copy on %s with revision %s recorded", secondMember, rev)
	}
	secondAt := states[at].at
	var firstCopy *rayv1.RayService
	var before, after *fleetv1alpha1.RayServiceBinding
	var soakStart *metav1.Time
	for i, s := range states {
		switch {
		case i < at && s.source == firstMember:
			firstCopy = rayServiceOf(s)
		case i < at && s.source == sourceBinding && bindingOf(s).Status.Rollout != nil &&
			bindingOf(s).Status.Rollout.TargetRevision == rev:
			before = bindingOf(s)
			if cs := clusterStatus(before, firstMember); cs != nil && cs.RolloutPhase == fleetv1alpha1.ClusterSoaking {
				soakStart = cs.PhaseTime
			}
		case i > at && s.source == sourceBinding && after == nil:
			after = bindingOf(s)
		}
	}
	g := gomega.NewWithT(t)
	g.Expect(firstCopy).NotTo(gomega.BeNil(), "no state of the copy on %s before %s's changed", firstMember, secondMember)
	g.Expect(firstCopy.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, rev),
		"%s's copy changed to %s while %s's did not carry it", secondMember, rev, firstMember)
	g.Expect(hubReady(firstCopy)).To(gomega.BeTrue(), "%s's copy not Ready when %s's changed", firstMember, secondMember)
	g.Expect(before).NotTo(gomega.BeNil(), "no binding state for %s before %s's copy changed", rev, secondMember)
	g.Expect(clusterStatus(before, firstMember).RolloutPhase).To(gomega.BeElementOf(fleetv1alpha1.ClusterSoaking, fleetv1alpha1.ClusterDone),
		"%s's phase in the last binding state before %s's copy changed", firstMember, secondMember)
	g.Expect(soakStart).NotTo(gomega.BeNil(), "the binding never showed %s Soaking before %s's copy changed", firstMember, secondMember)
	g.Expect(secondAt).To(gomega.BeTemporally(">=", soakStart.Add(soak-phaseTimeSlack)),
		"%s's copy changed before %s soaked for %v (soak started %v)", secondMember, firstMember, soak, soakStart)
	g.Expect(after).NotTo(gomega.BeNil(), "no binding state after %s's copy changed", secondMember)
	g.Expect(clusterStatus(after, firstMember).RolloutPhase).To(gomega.Equal(fleetv1alpha1.ClusterDone),
		"%s's phase in the first binding state after %s's copy changed", firstMember, secondMember)
	t.Logf("%s's copy got %s %v after %s started soaking", secondMember, rev, secondAt.Sub(soakStart.Time).Round(time.Millisecond), firstMember)
}

// A new revision whose RayCluster never serves on the first member (its Serve deploys fail on
// the new cluster) misses the progress deadline; with autoRollback the first member goes back
// to the good revision, the revision is marked failed, and the second member never gets it.
func TestRolloutFailedMemberRollsBack(t *testing.T) {
	t.Parallel()
	const ns, name = "rollout-rollback", "svc"
	const deadline = 20 * time.Second
	rev1 := setUpRollout(t, ns, name, &fleetv1alpha1.RolloutStrategy{
		SoakSeconds:             ptr.To[int32](2),
		ProgressDeadlineSeconds: ptr.To(int32(deadline / time.Second)),
		AutoRollback:            true,
		SortingLabelKey:         regionKey,
	})
	before := memberRayService(gomega.NewWithT(t), firstMember, ns, name)
	tl := watchRollout(t, ns, name, firstMember, secondMember)

	changedAt := time.Now()
	updateHubRayService(t, ns, name, func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, newImage) })
	// The new RayCluster is named in the copy's status before its head is up, so the fault is
	// in place before the spoke can submit the Serve config to it.
	var held *raydashboard.Cluster
	var heldName string
	eventually(t, func(g gomega.Gomega) {
		m := memberRayService(g, firstMember, ns, name)
		g.Expect(m).NotTo(gomega.BeNil(), "copy on %s", firstMember)
		heldName = m.Status.PendingServiceStatus.RayClusterName
		g.Expect(heldName).NotTo(gomega.BeEmpty(), "%s's new RayCluster", firstMember)
		held = fleet.Dashboards[firstMember].Cluster(ns, heldName)
		held.SetFault(raydashboard.Fault{DeployFailed: true})
	})
	t.Cleanup(func() { held.SetFault(raydashboard.Fault{}) })

	var rev2 string
	eventuallyFor(t, rolloutTimeout, func(g gomega.Gomega) {
		b := binding(g, ns, name)
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		rev2 = ro.TargetRevision
		g.Expect(rev2).NotTo(gomega.Equal(rev1), "still the first revision")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "phase: %s", ro.Message)
		g.Expect(ro.FailedRevision).To(gomega.Equal(rev2), "failedRevision")
		g.Expect(ro.GoodRevision).To(gomega.Equal(rev1), "goodRevision")
		hub := hubRayService(g, ns, name)
		g.Expect(hubReady(hub)).To(gomega.BeTrue(), "hub Ready")
		expectCondition(g, hub.Status.Conditions, "RolloutProgressing", metav1.ConditionFalse, "RevisionFailed")
		for _, m := range []string{firstMember, secondMember} {
			c := memberRayService(g, m, ns, name)
			g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", m)
			g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, rev1), "revision of the copy on %s", m)
			g.Expect(hubReady(c)).To(gomega.BeTrue(), "copy on %s Ready", m)
			g.Expect(clusterStatus(b, m).Revision).To(gomega.Equal(rev1), "binding: revision on %s", m)
		}
		// Like KubeRay's NewCluster upgrade, the spoke does not return to the RayCluster that
		// served before: a spec that differs from the pending cluster's gets a new pending
		// cluster, here one built from the good revision again.
		first := memberRayService(g, firstMember, ns, name)
		g.Expect(first.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty(), "%s's pending RayCluster", firstMember)
		g.Expect(first.Status.ActiveServiceStatus.RayClusterName).NotTo(gomega.Equal(heldName), "%s serves the failed RayCluster", firstMember)
		g.Expect(first.Annotations).To(gomega.HaveKeyWithValue(labels.RunningClusterHash, before.Annotations[labels.RunningClusterHash]),
			"%s's running RayCluster spec", firstMember)
	})
	gomega.NewWithT(t).Expect(held.Submissions()).To(gomega.BeNumerically(">=", 1), "Serve configs submitted to %s's failed RayCluster", firstMember)
	t.Logf("spec change to rolled back: %v; %s's serving RayCluster went %s → %s", time.Since(changedAt).Round(time.Millisecond),
		firstMember, before.Status.ActiveServiceStatus.RayClusterName,
		memberRayService(gomega.NewWithT(t), firstMember, ns, name).Status.ActiveServiceStatus.RayClusterName)

	expectRollbackHistory(t, tl.snapshot(), ns, name, rev2, deadline, changedAt)
}

// expectRollbackHistory checks how the rollout to rev, started at changedAt, got rolled back:
// the hub said RollingBack (not before the deadline), the binding showed the first member
// Failed, the hub's Events say the first member stalled the rollout and quote the member, and
// the second member's copy never carried rev.
func expectRollbackHistory(t *testing.T, states []observed, ns, name, rev string, deadline time.Duration, changedAt time.Time) {
	t.Helper()
	g := gomega.NewWithT(t)
	var rollingBackAt time.Time
	var reasons []string
	for _, s := range of(states, sourceHub) {
		c := meta.FindStatusCondition(rayServiceOf(s).Status.Conditions, "RolloutProgressing")
		if c == nil {
			continue
		}
		if r := string(c.Status) + "/" + c.Reason; len(reasons) == 0 || reasons[len(reasons)-1] != r {
			reasons = append(reasons, r)
		}
		if c.Reason == "RollingBack" && rollingBackAt.IsZero() {
			rollingBackAt = s.at
			g.Expect(c.Message).To(gomega.ContainSubstring(firstMember), "RollingBack message")
		}
	}
	t.Logf("RolloutProgressing of the hub RayService went %s", strings.Join(reasons, " → "))
	g.Expect(rollingBackAt.IsZero()).To(gomega.BeFalse(), "RolloutProgressing never RollingBack: %v", reasons)
	g.Expect(rollingBackAt).To(gomega.BeTemporally(">=", changedAt.Add(deadline-phaseTimeSlack)),
		"rolled back before the progress deadline")

	failed := false
	for _, s := range of(states, sourceBinding) {
		b := bindingOf(s)
		if b.Status.Rollout != nil && b.Status.Rollout.Phase == fleetv1alpha1.RolloutRollingBack {
			failed = failed || clusterStatus(b, firstMember).RolloutPhase == fleetv1alpha1.ClusterFailed
		}
	}
	g.Expect(failed).To(gomega.BeTrue(), "no binding state RollingBack with %s Failed", firstMember)

	for _, s := range of(states, secondMember) {
		g.Expect(rayServiceOf(s).Annotations[labels.Revision]).NotTo(gomega.Equal(rev),
			"%s's copy got the failed revision", secondMember)
	}

	events := hubEvents(g, ns, name)
	stalled := events["RolloutStalled"]
	g.Expect(stalled).NotTo(gomega.BeEmpty(), "no RolloutStalled event; events: %v", events)
	// The member's own words: its new RayCluster's application failed to deploy.
	g.Expect(stalled[0]).To(gomega.And(gomega.ContainSubstring("cluster "+firstMember), gomega.ContainSubstring(rev),
		gomega.ContainSubstring("within "+deadline.String()), gomega.ContainSubstring("DEPLOY_FAILED")), "RolloutStalled event")
	g.Expect(events).To(gomega.HaveKey("RollingBack"), "events")
	g.Expect(events).To(gomega.HaveKey("RolloutRolledBack"), "events")
	t.Logf("RolloutStalled event: %s", stalled[0])
}

// bin/hub killed (SIGKILL) while the first member soaks and started again: the rollout goes on
// from the binding and completes, and the first member is not updated again. Not parallel: the
// hub is down for a moment, which the other tests must not see (a test that calls
// t.Parallel waits for every test that does not to finish).
func TestRolloutSurvivesHubRestart(t *testing.T) {
	const ns, name = "rollout-hub-restart", "svc"
	rev1 := setUpRollout(t, ns, name, &fleetv1alpha1.RolloutStrategy{
		SoakSeconds:     ptr.To[int32](10),
		SortingLabelKey: regionKey,
	})
	tl := watchRollout(t, ns, name, firstMember, secondMember)
	updateHubRayService(t, ns, name, func(rs *rayv1.RayService) { raybuilder.SetImage(&rs.Spec.RayClusterSpec, newImage) })

	var soaking *rayv1.RayService
	var stage fleetv1alpha1.StageStatus
	eventuallyFor(t, rolloutTimeout, func(g gomega.Gomega) {
		b := binding(g, ns, name)
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(b.Status.Rollout.TargetRevision).NotTo(gomega.Equal(rev1), "still the first revision")
		g.Expect(b.Status.Rollout.Stages).To(gomega.HaveLen(1), "stages")
		g.Expect(clusterStatus(b, firstMember).RolloutPhase).To(gomega.Equal(fleetv1alpha1.ClusterSoaking), "%s's phase", firstMember)
		stage = b.Status.Rollout.Stages[0]
		soaking = memberRayService(g, firstMember, ns, name)
		g.Expect(soaking.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, b.Status.Rollout.TargetRevision))
	})
	killedAt := time.Now()
	if err := fleet.KillHub(); err != nil {
		t.Fatal(err)
	}
	if err := fleet.RestartHub(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("bin/hub killed and ready again in %v", time.Since(killedAt).Round(time.Millisecond))

	var rev2 string
	eventuallyFor(t, rolloutTimeout, func(g gomega.Gomega) {
		rev2 = expectRolledOut(g, ns, name)
		g.Expect(rev2).NotTo(gomega.Equal(rev1), "still the first revision")
	})
	g := gomega.NewWithT(t)
	g.Expect(soaking.Annotations[labels.Revision]).To(gomega.Equal(rev2), "the revision %s soaked on", firstMember)
	after := memberRayService(g, firstMember, ns, name)
	g.Expect(after.Generation).To(gomega.Equal(soaking.Generation), "%s's copy updated again after the restart", firstMember)
	g.Expect(after.UID).To(gomega.Equal(soaking.UID), "%s's copy replaced", firstMember)
	b := binding(g, ns, name)
	g.Expect(b.Status.Rollout.Stages).To(gomega.HaveLen(1), "stages")
	g.Expect(b.Status.Rollout.Stages[0].Clusters).To(gomega.Equal(stage.Clusters), "stage order")
	g.Expect(b.Status.Rollout.Stages[0].StartTime).To(gomega.Equal(stage.StartTime), "stage restarted")
	writes := hubWrites(t, firstMember, ns, name, killedAt, time.Now())
	t.Logf("hub writes of the copy on %s after the kill: %s", firstMember, writes)
	g.Expect(writes.accepted).To(gomega.BeZero(), "the hub wrote %s's copy again after the restart", firstMember)

	// After the kill the binding never shows the first member back at the start, and the
	// second member's copy changes revision once.
	changes := 0
	last := rev1
	for _, s := range tl.snapshot() {
		switch {
		case s.source == sourceBinding && s.at.After(killedAt):
			phase := clusterStatus(bindingOf(s), firstMember).RolloutPhase
			g.Expect(phase).To(gomega.BeElementOf(fleetv1alpha1.ClusterSoaking, fleetv1alpha1.ClusterDone),
				"%s's phase after the restart (binding %s)", firstMember, bindingOf(s).ResourceVersion)
		case s.source == secondMember:
			if rev := rayServiceOf(s).Annotations[labels.Revision]; rev != last {
				changes++
				last = rev
			}
		}
	}
	g.Expect(changes).To(gomega.Equal(1), "revision changes of %s's copy", secondMember)
}

// setUpRollout creates the namespace, a policy placing on us and eu with the rollout ro, and
// the RayService, and waits until its first revision is rolled out; it returns that revision.
func setUpRollout(t *testing.T, ns, name string, ro *fleetv1alpha1.RolloutStrategy) string {
	t.Helper()
	placeForRollout(t, ns, name, ro)
	var rev string
	eventuallyFor(t, rolloutTimeout, func(g gomega.Gomega) { rev = expectRolledOut(g, ns, name) })
	return rev
}

// setUpRolloutServing is setUpRollout waiting only until the hub says the first revision is
// Ready on both members, its soak not over: the binding names it the baseline, not yet good.
func setUpRolloutServing(t *testing.T, ns, name string, ro *fleetv1alpha1.RolloutStrategy) string {
	t.Helper()
	placeForRollout(t, ns, name, ro)
	var rev string
	eventuallyFor(t, rolloutTimeout, func(g gomega.Gomega) {
		ro := binding(g, ns, name).Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.TargetRevision).NotTo(gomega.BeEmpty(), "targetRevision")
		g.Expect(ro.BaselineRevision).To(gomega.Equal(ro.TargetRevision), "baselineRevision: %s", ro.Message)
		g.Expect(hubReady(hubRayService(g, ns, name))).To(gomega.BeTrue(), "hub Ready")
		rev = ro.TargetRevision
	})
	return rev
}

// placeForRollout creates the namespace, a policy placing on us and eu with the rollout ro,
// and the RayService.
func placeForRollout(t *testing.T, ns, name string, ro *fleetv1alpha1.RolloutStrategy) {
	t.Helper()
	createNamespace(t, ns)
	// Placement on two clusters needs both Ready: the non-parallel test runs first, right
	// after the fleet started.
	eventually(t, func(g gomega.Gomega) {
		for _, m := range []string{memberUS, memberEU} {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Name: m}, &mc)).To(gomega.Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeTrue(), "%s Ready", m)
		}
	})
	createPolicy(t, ns, "rollout", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](2), ClusterSelector: usOrEU, Rollout: ro,
	})
	createHubRayService(t, ns, name, "rollout")
}

// expectRolledOut checks that the rollout of ns/name is Complete with its target good, both
// copies carry the target and are done on it, and everything is Ready; it returns the target.
func expectRolledOut(g gomega.Gomega, ns, name string) string {
	b := binding(g, ns, name)
	ro := b.Status.Rollout
	g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
	g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "phase: %s", ro.Message)
	g.Expect(ro.TargetRevision).NotTo(gomega.BeEmpty(), "targetRevision")
	g.Expect(ro.GoodRevision).To(gomega.Equal(ro.TargetRevision), "goodRevision")
	g.Expect(ro.FailedRevision).To(gomega.BeEmpty(), "failedRevision")
	hub := hubRayService(g, ns, name)
	g.Expect(hubReady(hub)).To(gomega.BeTrue(), "hub Ready")
	expectCondition(g, hub.Status.Conditions, "RolloutProgressing", metav1.ConditionTrue, "RolloutComplete")
	for _, m := range []string{firstMember, secondMember} {
		cs := clusterStatus(b, m)
		g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s", m)
		g.Expect(cs.Revision).To(gomega.Equal(ro.TargetRevision), "binding: revision on %s", m)
		g.Expect(cs.RolloutPhase).To(gomega.Equal(fleetv1alpha1.ClusterDone), "binding: phase of %s", m)
		c := memberRayService(g, m, ns, name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", m)
		g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, ro.TargetRevision), "revision of the copy on %s", m)
		g.Expect(hubReady(c)).To(gomega.BeTrue(), "copy on %s Ready", m)
	}
	return ro.TargetRevision
}

// clusterStatus is the binding's status of one cluster, nil when it has none.
func clusterStatus(b *fleetv1alpha1.RayServiceBinding, cluster string) *fleetv1alpha1.ClusterStatus {
	for i := range b.Status.Clusters {
		if b.Status.Clusters[i].Name == cluster {
			return &b.Status.Clusters[i]
		}
	}
	return nil
}

// expectCondition checks a condition's status and reason.
func expectCondition(g gomega.Gomega, conds []metav1.Condition, typ string, status metav1.ConditionStatus, reason string) {
	c := meta.FindStatusCondition(conds, typ)
	g.Expect(c).NotTo(gomega.BeNil(), "%s condition", typ)
	g.Expect(string(c.Status)+"/"+c.Reason).To(gomega.Equal(string(status)+"/"+reason), "%s: %s", typ, c.Message)
}

// hubEvents are the messages of the hub's Events about the hub RayService ns/name, by reason,
// oldest first.
func hubEvents(g gomega.Gomega, ns, name string) map[string][]string {
	var list corev1.EventList
	g.Expect(fleet.Hub.Client.List(context.Background(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "RayService" && e.InvolvedObject.Name == name {
			out[e.Reason] = append(out[e.Reason], e.Message)
		}
	}
	return out
}

// updateHubRayService changes the hub RayService ns/name, retrying on conflicts with the hub's
// own writes.
func updateHubRayService(t *testing.T, ns, name string, change func(*rayv1.RayService)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs rayv1.RayService
		if err := fleet.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return err
		}
		change(&rs)
		return fleet.Hub.Client.Update(t.Context(), &rs)
	})
	if err != nil {
		t.Fatalf("updating RayService %s/%s on the hub: %v", ns, name, err)
	}
}

// eventuallyFor is eventually with its own timeout, for waits longer than one step.
func eventuallyFor(t *testing.T, timeout time.Duration, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := fleet.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}
