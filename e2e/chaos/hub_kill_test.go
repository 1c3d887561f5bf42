//go:build e2e

package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// killRolloutTimeout bounds one rollout after the kill: member-side upgrades, soaks, a
// progress deadline and a rollback, or a blue/green shift and retirement, on a loaded machine.
const killRolloutTimeout = 5 * time.Minute

// killServeIPs are the members' serve IPs for the traffic path. They are not assigned to any
// interface here (no network namespace), so requests to them fail; the route, its backends
// and the weights the hub shifts are what the scenario checks.
var killServeIPs = map[string]string{memberUS: "10.99.0.1", memberEU: "10.99.0.2", memberAP: "10.99.0.3"}

// killServeConfig is the blue/green RayService's one application, served at / (what its
// route's pathPrefix routes).
const killServeConfig = `applications:
  - name: chaos
    import_path: chaos.app
    route_prefix: /
    deployments:
      - name: Chaos
        num_replicas: 1
`

// killCase is one rollout phase the hub is killed in.
type killCase struct {
	// phase names it in the row's figures.
	phase string
	ns    string
	spec  fleetv1alpha1.PlacementPolicySpec
	// blueGreen: the RayService gets a LoadBalancer serve Service and is rolled out blue/green.
	blueGreen bool
	// rollsBack: the first cluster's new RayCluster never serves, so the rollout rolls back
	// and ends with the new revision failed.
	rollsBack bool
	// down is how long the hub stays dead before it is started again (a crash-looping Pod
	// waits too): long enough, when soaking, that a soak restarted at the restart would show.
	down time.Duration
	// reached says whether the binding shows the phase the hub is killed in.
	reached func(b *fleetv1alpha1.RayServiceBinding) bool
	// afterRestart runs once the hub is ready again (e.g. approve a stage); nil for none.
	afterRestart func(t *testing.T, x *killRun)
	// check asserts what is particular to the phase once the rollout completed; nil for none.
	check func(t *testing.T, x *killRun)
}

// killRun is one case's run: what it saw before the kill and after.
type killRun struct {
	c                  *killCase
	f                  *localfleet.Fleet
	rev1, rev2         string
	before             map[string]*rayv1.RayService // copies before the change, by member
	atKill             *fleetv1alpha1.RayServiceBinding
	changedAt, killed  time.Time
	ready, completedAt time.Time
	// gate is when the rollout could move again after the restart: the hub ready, or later the
	// end of the soak or the approval it waits for.
	gate   time.Time
	rec    *bRecorder
	routes *bRouteRecorder // blue/green: the HTTPRoute's generations
	faulty *raydashboard.Cluster
}

// killName is the RayService every case rolls out, each in its own namespace.
const killName = "svc"

// The hub killed with SIGKILL and started again in every phase of a rollout: each case drives
// one RayService's rollout to its phase, kills bin/hub, starts it again, and checks that the
// rollout completes as it would have: every cluster ends on the revision it should, phases
// only move forward, no copy is written more than its revision changes need, an approval is
// still waited for, a soak keeps its start, traffic weights only move towards green.
func TestHubKilledAtEveryRolloutPhase(t *testing.T) {
	r := scenario(t, 3, "hub killed at every rollout phase",
		"bin/hub killed with SIGKILL and started again once per rollout phase, each phase a RayService of its own: applying (first cluster Updating), soaking, awaiting approval, shifting traffic (blue/green with a Gateway route), rolling back (progress deadline missed, autoRollback)",
		"each rollout completes on the same revision on every cluster; cluster phases never go back and keep their start times (soak neither restarted nor skipped); copies' generations moved exactly as the revisions need (no cluster updated twice) and the hub did not write a copy already updated before the kill; the approval is still awaited after the restart; green's traffic percent and weights never go back; finished rollouts not written again; no member workload lost")
	f := startFleet(t, func(o *localfleet.Options) {
		o.Traffic = &localfleet.TrafficOptions{ServeIPs: killServeIPs}
	})
	bWaitMembersReady(t, f)

	cases := killCases()
	for _, c := range cases {
		bSetUp(t, f, c.spec, killRayService(c))
	}
	runs := make([]*killRun, len(cases))
	for i, c := range cases {
		runs[i] = &killRun{c: c, f: f}
		bEventually(t, f, killRolloutTimeout, func(g gomega.Gomega) {
			b := bBinding(g, f, c.ns, killName)
			g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "status.rollout of %s", c.ns)
			runs[i].rev1 = b.Status.Rollout.TargetRevision
			bExpectComplete(g, f, c.ns, killName, runs[i].rev1, false)
		})
	}
	l := snapshot(t.Context(), t, f)

	var resumes, extras []string
	totalExtra := 0
	for _, x := range runs {
		if !t.Run(x.c.phase, func(t *testing.T) { x.run(t, l) }) || x.completedAt.IsZero() {
			continue // failed, or not selected by -run
		}
		writes := bHubWrites(t, f, x.c.ns, x.changedAt, x.completedAt.Add(time.Second))
		extra := len(writes) - x.neededWrites()
		totalExtra += extra
		fromReady, fromGate := x.resume(t)
		resume := fmt.Sprintf("%s %v", x.c.phase, fromReady.Round(time.Millisecond))
		if !x.gate.Equal(x.ready) {
			what := "approval"
			if x.c.phase == "soaking" {
				what = "soak's end"
			}
			resume += fmt.Sprintf(" (%v after the %s)", fromGate.Round(time.Millisecond), what)
		}
		resumes = append(resumes, resume)
		extras = append(extras, fmt.Sprintf("%s %d (%d writes, %d needed)", x.c.phase, extra, len(writes), x.neededWrites()))
		t.Logf("%s: the hub's writes of the copies from the change to Complete: %s", x.c.phase, bWritesText(writes))
	}
	// A rollout that completed is not touched again by the later kills.
	for _, x := range runs {
		if x.completedAt.IsZero() {
			continue
		}
		if w := bHubWrites(t, f, x.c.ns, x.completedAt.Add(time.Second), time.Now()); len(w) > 0 {
			t.Errorf("%s: the hub wrote copies again after the rollout completed: %s", x.c.phase, bWritesText(w))
		}
	}
	r.Add("restart to the hub's first write for the rollout", strings.Join(resumes, ", "))
	r.Add("extra copy writes vs none (per phase)", strings.Join(extras, ", "))
	r.Add("extra copy writes in all", totalExtra)
	l.count(t.Context(), t, f, r)
}

// killCases are the five phases, in order.
func killCases() []*killCase {
	usOrEU := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: regionKey, Operator: metav1.LabelSelectorOpIn, Values: []string{memberUS, memberEU}}}}
	rolling := func(ro fleetv1alpha1.RolloutStrategy) fleetv1alpha1.PlacementPolicySpec {
		ro.SortingLabelKey = regionKey // eu first, then us
		return fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), ClusterSelector: usOrEU, Rollout: &ro}
	}
	region := func(r string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{regionKey: r}}
	}
	soak := span(60*time.Second, 12*time.Second)
	return []*killCase{
		{
			phase: "applying", ns: "kill-applying", down: 3 * time.Second,
			spec: rolling(fleetv1alpha1.RolloutStrategy{SoakSeconds: ptr.To[int32](5)}),
			reached: func(b *fleetv1alpha1.RayServiceBinding) bool {
				cs := bClusterStatus(b, memberEU)
				return cs != nil && cs.RolloutPhase == fleetv1alpha1.ClusterUpdating
			},
			check: expectNotRewrittenAfterKill(memberEU),
		},
		{
			phase: "soaking", ns: "kill-soaking", down: soak / 2,
			spec: rolling(fleetv1alpha1.RolloutStrategy{SoakSeconds: ptr.To(int32(soak / time.Second))}),
			reached: func(b *fleetv1alpha1.RayServiceBinding) bool {
				cs := bClusterStatus(b, memberEU)
				return cs != nil && cs.RolloutPhase == fleetv1alpha1.ClusterSoaking
			},
			check: expectSoakKept(soak),
		},
		{
			phase: "awaiting approval", ns: "kill-approval", down: 3 * time.Second,
			spec: rolling(fleetv1alpha1.RolloutStrategy{SoakSeconds: ptr.To[int32](5), Stages: []fleetv1alpha1.RolloutStage{
				{Name: "canary", ClusterSelector: region(memberEU)},
				{Name: "prod", ClusterSelector: region(memberUS), Approval: true},
			}}),
			reached: func(b *fleetv1alpha1.RayServiceBinding) bool {
				return b.Status.Rollout.Phase == fleetv1alpha1.RolloutAwaitingApproval
			},
			afterRestart: approveAfterWaiting("prod"),
			check:        expectNotRewrittenAfterKill(memberEU),
		},
		{
			phase: "shifting traffic", ns: "kill-shifting", blueGreen: true, down: 3 * time.Second,
			spec: fleetv1alpha1.PlacementPolicySpec{
				Clusters: ptr.To[int32](1),
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
					StepPercent:        ptr.To(int32(span(25, 50))),
					IntervalSeconds:    ptr.To(int32(span(20*time.Second, 6*time.Second) / time.Second)),
					RetireAfterSeconds: ptr.To[int32](10),
				}},
				Traffic: &fleetv1alpha1.TrafficSpec{
					ParentRef:  fleetv1alpha1.TrafficParentRef{Namespace: localfleet.GatewayNamespace, Name: localfleet.GatewayName},
					PathPrefix: "/",
				},
			},
			reached: func(b *fleetv1alpha1.RayServiceBinding) bool {
				bg := b.Status.Rollout.BlueGreen
				return bg != nil && bg.Step == fleetv1alpha1.BlueGreenShifting && bg.GreenPercent > 0 && bg.GreenPercent < 100
			},
			check: expectWeightsForward,
		},
		{
			phase: "rolling back", ns: "kill-rollback", rollsBack: true, down: 3 * time.Second,
			spec: rolling(fleetv1alpha1.RolloutStrategy{
				SoakSeconds: ptr.To[int32](2), ProgressDeadlineSeconds: ptr.To[int32](20), AutoRollback: true,
			}),
			reached: func(b *fleetv1alpha1.RayServiceBinding) bool {
				return b.Status.Rollout.Phase == fleetv1alpha1.RolloutRollingBack
			},
			check: expectRolledBackOnce,
		},
	}
}

// killRayService is a case's hub RayService; a blue/green one serves at / through a
// LoadBalancer Service, whose address the hub routes to.
func killRayService(c *killCase) *rayv1.RayService {
	rs := bRayService(c.ns, killName, "policy")
	if c.blueGreen {
		rs.Spec.ServeConfigV2 = killServeConfig
		rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	}
	return rs
}

// run drives the case's rollout to its phase, kills the hub, starts it again and waits for
// the rollout to complete, then checks it.
func (x *killRun) run(t *testing.T, l *ledger) {
	f, c := x.f, x.c
	x.before = map[string]*rayv1.RayService{}
	g := gomega.NewWithT(t)
	for _, m := range bHolders(g, f, c.ns, killName) {
		x.before[m] = bCopy(g, f, m, c.ns, killName)
	}
	x.rec = bRecord(t, f, c.ns, killName)
	if c.blueGreen {
		x.routes = bRecordRoute(t, f, c.ns, killName)
	}
	x.changedAt = bSetImage(t, f, c.ns, killName, bNewImage)
	if c.rollsBack {
		x.holdFirstCluster(t)
	}
	bEventually(t, f, killRolloutTimeout, func(g gomega.Gomega) {
		b := bBinding(g, f, c.ns, killName)
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(b.Status.Rollout.TargetRevision).NotTo(gomega.Equal(x.rev1), "still the first revision")
		g.Expect(c.reached(b)).To(gomega.BeTrue(), "phase %s not reached: %s", c.phase, b.Status.Rollout.Message)
		x.atKill = b
	})
	x.rev2 = x.atKill.Status.Rollout.TargetRevision
	x.killed = time.Now()
	if err := f.KillHub(); err != nil {
		t.Fatal(err)
	}
	// Nothing writes the binding while the hub is dead.
	frozen := bBinding(gomega.NewWithT(t), f, c.ns, killName).ResourceVersion
	consistently(t, c.down, func(g gomega.Gomega) {
		g.Expect(bBinding(g, f, c.ns, killName).ResourceVersion).To(gomega.Equal(frozen), "binding written while the hub was dead")
	})
	if err := f.RestartHub(t.Context()); err != nil {
		t.Fatal(err)
	}
	x.ready = time.Now()
	x.gate = x.ready
	t.Logf("%s: bin/hub killed with the binding at %s (%s), dead for %v and ready again %v after the kill", c.phase,
		x.atKill.Status.Rollout.Phase, x.atKill.Status.Rollout.Message, c.down, x.ready.Sub(x.killed).Round(time.Millisecond))
	if c.afterRestart != nil {
		c.afterRestart(t, x)
	}
	var placed []string
	bEventually(t, f, killRolloutTimeout, func(g gomega.Gomega) {
		placed = bExpectComplete(g, f, c.ns, killName, x.rev2, c.rollsBack)
	})
	x.completedAt = time.Now()
	x.rec.stop()
	if x.routes != nil {
		x.routes.stop()
	}
	t.Logf("%s: kill to Complete %v; placed on %v", c.phase, x.completedAt.Sub(x.killed).Round(time.Millisecond), placed)
	if c.rollsBack {
		x.expectRollbackForward(t)
	} else {
		phases := bExpectPhasesForward(t, x.rec.snapshot(), x.rev2)
		t.Logf("%s: cluster phases for %s: %v", c.phase, x.rev2, phases)
	}
	x.expectGenerations(t, placed)
	x.allowReplaced(l, placed)
	if c.check != nil {
		c.check(t, x)
	}
}

// holdFirstCluster makes eu's new RayCluster fail its Serve deploys, so that eu misses the
// progress deadline and the rollout rolls back. The fault is set once the RayCluster is named
// in the copy's status, before its head is up and the spoke can submit the config.
func (x *killRun) holdFirstCluster(t *testing.T) {
	bEventually(t, x.f, killRolloutTimeout, func(g gomega.Gomega) {
		c := bCopy(g, x.f, memberEU, x.c.ns, killName)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", memberEU)
		pending := c.Status.PendingServiceStatus.RayClusterName
		g.Expect(pending).NotTo(gomega.BeEmpty(), "%s's new RayCluster", memberEU)
		x.faulty = x.f.Dashboards[memberEU].Cluster(x.c.ns, pending)
		x.faulty.SetFault(raydashboard.Fault{DeployFailed: true})
	})
	t.Cleanup(func() { x.faulty.SetFault(raydashboard.Fault{}) })
}

// expectGenerations checks that every copy's spec changed exactly as often as the rollout
// needs: once per cluster updated, twice on a cluster rolled back, never on a cluster that
// kept its revision; a copy made by the rollout (green) was made once.
func (x *killRun) expectGenerations(t *testing.T, placed []string) {
	g := gomega.NewWithT(t)
	for _, m := range placed {
		c := bCopy(g, x.f, m, x.c.ns, killName)
		old := x.before[m]
		if old == nil {
			g.Expect(c.Generation).To(gomega.Equal(int64(1)), "generation of the new copy on %s", m)
			continue
		}
		g.Expect(c.UID).To(gomega.Equal(old.UID), "the copy on %s was replaced", m)
		g.Expect(c.Generation-old.Generation).To(gomega.Equal(x.specChanges(m)), "spec changes of the copy on %s", m)
	}
}

// specChanges is how many times the rollout needs the copy on m written: once for the new
// revision, and once more back on the cluster rolled back (eu); none on a cluster the
// rollback kept on the old revision (us).
func (x *killRun) specChanges(m string) int64 {
	switch {
	case x.c.rollsBack && m == memberEU:
		return 2
	case x.c.rollsBack:
		return 0
	default:
		return 1
	}
}

// neededWrites is how many copy writes the rollout needs with no fault: a spec change per
// cluster (see specChanges), or for blue/green the green copy's creation and the blue copy's
// deletion.
func (x *killRun) neededWrites() int {
	if x.c.blueGreen {
		return 2
	}
	n := 0
	for m := range x.before {
		n += int(x.specChanges(m))
	}
	return n
}

// allowReplaced tells the ledger what the rollout replaces: an updated member's serving
// RayCluster (a zero-downtime upgrade makes a new one), and blue's copy once green took over.
func (x *killRun) allowReplaced(l *ledger, placed []string) {
	for m, old := range x.before {
		if !slices.Contains(placed, m) {
			l.allowGone(m, "RayService", x.c.ns, killName)
		}
		if active := old.Status.ActiveServiceStatus.RayClusterName; active != "" && (x.specChanges(m) > 0 || !slices.Contains(placed, m)) {
			l.allowGone(m, "RayCluster", x.c.ns, active)
		}
	}
}

// resume is the time from the hub ready again, and from the moment the rollout could move
// again (gate), to the hub's first write for this rollout: a new state of the binding or a
// write of a copy.
func (x *killRun) resume(t *testing.T) (fromReady, fromGate time.Duration) {
	first := x.rec.firstAfter(x.ready)
	if w := bHubWrites(t, x.f, x.c.ns, x.ready, x.completedAt.Add(time.Second)); len(w) > 0 && (first.IsZero() || w[0].at.Before(first)) {
		first = w[0].at
	}
	if first.IsZero() {
		return 0, 0
	}
	return first.Sub(x.ready), max(first.Sub(x.gate), 0)
}

// expectNotRewrittenAfterKill checks that the hub did not write the copy on member again
// after the restart: it carried the new revision before the kill.
func expectNotRewrittenAfterKill(member string) func(t *testing.T, x *killRun) {
	return func(t *testing.T, x *killRun) {
		if cs := bClusterStatus(x.atKill, member); cs == nil || cs.Revision != x.rev2 {
			t.Logf("%s: %s did not carry %s yet at the kill; nothing to check", x.c.phase, member, x.rev2)
			return
		}
		if w := bHubWrites(t, x.f, x.c.ns, x.killed, x.completedAt.Add(time.Second)); slices.ContainsFunc(w, func(w bWrite) bool { return w.member == member }) {
			t.Errorf("%s: the hub wrote the copy on %s again after the restart: %s", x.c.phase, member, bWritesText(w))
		}
	}
}

// expectSoakKept checks the soak on the binding's times: eu's Soaking phaseTime is the one
// from before the kill (bExpectPhasesForward checks it stays while eu soaks), eu turned Done
// and the hub wrote us's copy no earlier than a whole soak after that start, so the soak was
// neither skipped nor, had us been written a whole soak after the restart, restarted.
func expectSoakKept(soak time.Duration) func(t *testing.T, x *killRun) {
	return func(t *testing.T, x *killRun) {
		started := bClusterStatus(x.atKill, memberEU).PhaseTime
		if started == nil {
			t.Fatalf("no phaseTime for %s Soaking at the kill", memberEU)
		}
		earliest := started.Add(soak - time.Second) // phase times are whole seconds
		if end := started.Add(soak); end.After(x.gate) {
			x.gate = end
		}
		var done, usStart time.Time
		for _, s := range x.rec.snapshot() {
			if ro := s.b.Status.Rollout; ro == nil || ro.TargetRevision != x.rev2 {
				continue
			}
			if cs := bClusterStatus(s.b, memberEU); done.IsZero() && cs != nil && cs.RolloutPhase == fleetv1alpha1.ClusterDone && cs.PhaseTime != nil {
				done = cs.PhaseTime.Time
			}
		}
		for _, w := range bHubWrites(t, x.f, x.c.ns, x.changedAt, x.completedAt.Add(time.Second)) {
			if w.member == memberUS && usStart.IsZero() {
				usStart = w.at
			}
		}
		switch {
		case done.IsZero():
			t.Errorf("soaking: the binding never showed %s Done on %s", memberEU, x.rev2)
		case done.Before(earliest):
			t.Errorf("soaking: %s Done at %s, before its soak of %v from %s ended", memberEU, done.Format(time.TimeOnly), soak, started.Format(time.TimeOnly))
		}
		switch {
		case usStart.IsZero():
			t.Errorf("soaking: the hub never wrote %s's copy", memberUS)
		case usStart.Before(earliest):
			t.Errorf("soaking: the hub wrote %s's copy at %s, before %s's soak of %v from %s ended", memberUS,
				usStart.Format(time.TimeOnly), memberEU, soak, started.Format(time.TimeOnly))
		}
		// A soak started again at the restart would hold us until a whole soak after it; the
		// hub resumes within a few seconds, so this tells only when the restart took longer.
		if late := x.ready.Add(soak); x.ready.Sub(started.Time) > 5*time.Second && !usStart.IsZero() && !usStart.Before(late) {
			t.Errorf("soaking: %s written at %s, a whole soak after the restart (%s): the soak started again",
				memberUS, usStart.Format(time.TimeOnly), x.ready.Format(time.TimeOnly))
		}
		t.Logf("soaking: soak started %s (kill at %s, hub ready %s), %s Done %s, %s written %s (%v after the soak started; a soak restarted at the restart would end %s)",
			started.Format(time.TimeOnly), x.killed.Format(time.TimeOnly), x.ready.Format(time.TimeOnly), memberEU,
			done.Format(time.TimeOnly), memberUS, usStart.Format(time.TimeOnly), usStart.Sub(started.Time).Round(time.Millisecond),
			x.ready.Add(soak).Format(time.TimeOnly))
	}
}

// approveAfterWaiting checks that the restarted hub still waits for the approval of stage
// (phase AwaitingApproval, us not updated) for a while, then approves it as `rayfleet rollout
// approve` does.
func approveAfterWaiting(stage string) func(t *testing.T, x *killRun) {
	return func(t *testing.T, x *killRun) {
		consistently(t, span(30*time.Second, 8*time.Second), func(g gomega.Gomega) {
			b := bBinding(g, x.f, x.c.ns, killName)
			g.Expect(b.Status.Rollout.Phase).To(gomega.Equal(fleetv1alpha1.RolloutAwaitingApproval), "phase after the restart: %s", b.Status.Rollout.Message)
			c := bCopy(g, x.f, memberUS, x.c.ns, killName)
			g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, x.rev1), "%s's copy before the approval", memberUS)
		})
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			labels.ApprovedStage: x.rev2 + "/" + stage}}})
		if err != nil {
			t.Fatal(err)
		}
		b := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: x.c.ns, Name: killName}}
		if err := x.f.Hub.Client.Patch(t.Context(), b, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatalf("approving stage %s of %s: %v", stage, x.rev2, err)
		}
		x.gate = time.Now()
		t.Logf("awaiting approval: still awaited after the restart; approved stage %s", stage)
	}
}

// expectWeightsForward checks the traffic split: in the HTTPRoute (what the gateway is
// told) and in the binding's report, green's share never went down and blue's never up.
func expectWeightsForward(t *testing.T, x *killRun) {
	var lastPercent int32 = -1
	last := map[string]int32{}
	var steps, history []string
	for _, s := range x.rec.snapshot() {
		ro := s.b.Status.Rollout
		if ro == nil || ro.TargetRevision != x.rev2 || ro.BlueGreen == nil {
			continue
		}
		var ws []string
		for _, cs := range s.b.Status.Clusters {
			if cs.Weight == nil {
				continue
			}
			ws = append(ws, fmt.Sprintf("%s(%s)=%d", cs.Name, cs.Color, *cs.Weight))
			w, had := last[cs.Name]
			switch {
			case had && cs.Color == fleetv1alpha1.ColorGreen && *cs.Weight < w:
				t.Errorf("the binding reports green %s's weight down from %d to %d (binding %s)", cs.Name, w, *cs.Weight, s.b.ResourceVersion)
			case had && cs.Color == fleetv1alpha1.ColorBlue && *cs.Weight > w:
				t.Errorf("the binding reports blue %s's weight up from %d to %d (binding %s)", cs.Name, w, *cs.Weight, s.b.ResourceVersion)
			}
			last[cs.Name] = *cs.Weight
		}
		history = append(history, fmt.Sprintf("%d%% %v rv %s @%s", ro.BlueGreen.GreenPercent, ws, s.b.ResourceVersion, s.at.Format("15:04:05.000")))
		if p := ro.BlueGreen.GreenPercent; p != lastPercent {
			if p < lastPercent {
				t.Errorf("green's percent went back from %d to %d (binding %s)", lastPercent, p, s.b.ResourceVersion)
			}
			steps = append(steps, fmt.Sprintf("%d%%@%s", p, s.at.Format(time.TimeOnly)))
			lastPercent = p
		}
	}
	if lastPercent < 0 {
		t.Errorf("no blue/green state of %s recorded", x.rev2)
	}
	blue, green := x.atKill.Status.Rollout.BlueGreen.Blue, x.atKill.Status.Rollout.BlueGreen.Green
	routes, errs := x.routes.snapshot()
	var routeText []string
	var prev *bRoute
	for i := range routes {
		s := &routes[i]
		routeText = append(routeText, s.String())
		if prev != nil && s.generation != 0 && prev.generation != 0 {
			for _, m := range green {
				if s.weights[m] < prev.weights[m] {
					t.Errorf("the route gave green %s less: %s, then %s", m, prev, s)
				}
			}
			for _, m := range blue {
				if s.weights[m] > prev.weights[m] {
					t.Errorf("the route gave blue %s more: %s, then %s", m, prev, s)
				}
			}
		}
		prev = s
	}
	if len(errs) > 0 {
		t.Errorf("reading the route: %v", errs)
	}
	t.Logf("shifting traffic: green's percent went %s (killed at %s, ready %s)", strings.Join(steps, " → "),
		x.killed.Format("15:04:05.000"), x.ready.Format("15:04:05.000"))
	t.Logf("shifting traffic: the route went %s", strings.Join(routeText, " → "))
	t.Logf("shifting traffic: the binding's weights went %s", strings.Join(history, " → "))
}

// expectRollbackForward checks the rollout's phases after the kill: RollingBack until
// Complete, never Progressing again (which would try the failed revision once more).
func (x *killRun) expectRollbackForward(t *testing.T) {
	var seen []fleetv1alpha1.RolloutPhase
	for _, s := range x.rec.snapshot() {
		ro := s.b.Status.Rollout
		if ro == nil || ro.TargetRevision != x.rev2 {
			continue
		}
		if len(seen) == 0 || seen[len(seen)-1] != ro.Phase {
			seen = append(seen, ro.Phase)
		}
		if s.at.After(x.killed) && ro.Phase != fleetv1alpha1.RolloutRollingBack && ro.Phase != fleetv1alpha1.RolloutComplete {
			t.Errorf("rolling back: the rollout was %s after the restart (binding %s): %s", ro.Phase, s.b.ResourceVersion, ro.Message)
		}
	}
	t.Logf("rolling back: rollout phases for %s: %v", x.rev2, seen)
}

// expectRolledBackOnce checks the rolled-back rollout: us never got the failed revision, and
// the hub did not try the failed revision on eu again after the restart.
func expectRolledBackOnce(t *testing.T, x *killRun) {
	for _, w := range bHubWrites(t, x.f, x.c.ns, x.changedAt, x.completedAt.Add(time.Second)) {
		if w.member == memberUS {
			t.Errorf("rolling back: the hub wrote %s's copy (%s at %s), which never was to get %s", memberUS, w.verb, w.at.Format(time.TimeOnly), x.rev2)
		}
	}
	if x.faulty != nil && x.faulty.Submissions() == 0 {
		t.Errorf("rolling back: no Serve config was submitted to %s's failed RayCluster", memberEU)
	}
}
