package rollout

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// simCluster is a member in the simulated fleet.
type simCluster struct {
	Cluster
	// doneAt is when the member is done on Revision; zero means never.
	doneAt time.Time
}

// fleetSim runs Plan against a simulated fleet the way the hub does: it keeps only what the
// RayServiceBinding keeps (the status through JSON, each cluster's phase and phaseTime to the
// second), applies the decision, and lets members finish after a while, or never.
type fleetSim struct {
	t        *testing.T
	rng      *rand.Rand
	now      time.Time
	strategy Strategy
	target   string
	paused   bool
	approval string
	// keepStarted keeps ClusterPhase.Started across steps, as a binding with a field for it
	// would; without it the planner falls back to the soak's start.
	keepStarted bool
	status      *fleetv1alpha1.RolloutStatus
	phases      map[string]ClusterPhase
	clusters    []*simCluster
	// seen counts the rollout and cluster phases re-planned from the binding.
	seen map[string]int
}

// input is the Input the hub would build now.
func (s *fleetSim) input() Input {
	in := Input{Now: s.now, Strategy: s.strategy, Target: s.target, Previous: s.status, ClusterPhases: s.phases,
		Paused: s.paused, Approval: s.approval}
	for _, sc := range s.clusters {
		c := sc.Cluster
		c.Done = sc.Revision != "" && !sc.doneAt.IsZero() && !s.now.Before(sc.doneAt)
		c.NotDone = ""
		if !c.Done {
			c.NotDone = "application app is DEPLOYING"
		}
		in.Clusters = append(in.Clusters, c)
	}
	s.rng.Shuffle(len(in.Clusters), func(i, j int) { in.Clusters[i], in.Clusters[j] = in.Clusters[j], in.Clusters[i] })
	return in
}

// step plans once, checks the decision, stores what the binding would and applies it: an apply
// fails (or its result is not seen yet) with probability applyFails, a member takes up to
// maxDelay to be done with what it was given, and never is with probability stuck.
func (s *fleetSim) step(applyFails, stuck float64, maxDelay time.Duration) Decision {
	s.t.Helper()
	in := s.input()
	d := Plan(in)
	checkInvariants(s.t, in, d)
	s.store(d)
	s.replan(in, d)
	for _, sc := range s.clusters {
		rev := d.Apply[sc.Name]
		if rev == sc.Revision || s.rng.Float64() < applyFails {
			continue
		}
		sc.Revision = rev
		sc.doneAt = s.now.Add(time.Duration(s.rng.Int64N(int64(maxDelay) + 1)))
		if s.rng.Float64() < stuck {
			sc.doneAt = time.Time{}
		}
	}
	return d
}

// store keeps d the way the binding does.
func (s *fleetSim) store(d Decision) {
	raw, err := json.Marshal(d.Status)
	if err != nil {
		s.t.Fatal(err)
	}
	s.status = &fleetv1alpha1.RolloutStatus{}
	if err := json.Unmarshal(raw, s.status); err != nil {
		s.t.Fatal(err)
	}
	s.phases = map[string]ClusterPhase{}
	for name, p := range d.Phases {
		kept := ClusterPhase{Phase: p.Phase}
		if !p.Since.IsZero() {
			kept.Since = metav1.NewTime(p.Since).Rfc3339Copy().Time
		}
		if s.keepStarted {
			kept.Started = p.Started
		}
		s.phases[name] = kept
	}
}

// replan is a hub restarted right after d was stored: planning again at the same time from the
// binding gives the same decision and no Event twice.
func (s *fleetSim) replan(in Input, d Decision) {
	s.t.Helper()
	in.Previous, in.ClusterPhases = s.status, s.phases
	again := Plan(in)
	if len(again.Events) > 0 {
		s.t.Errorf("re-planned from the binding at %s: events again %v", s.now, again.Events)
	}
	if diff := cmp.Diff(d.Apply, again.Apply); diff != "" {
		s.t.Errorf("re-planned from the binding at %s: apply (-first +again):\n%s", s.now, diff)
	}
	if diff := cmp.Diff(*s.status, again.Status); diff != "" {
		s.t.Errorf("re-planned from the binding at %s: status (-first +again):\n%s", s.now, diff)
	}
	s.seen["rollout/"+string(again.Status.Phase)]++
	for _, p := range s.phases {
		s.seen["cluster/"+string(p.Phase)]++
	}
}

// checkInvariants checks what must hold of every decision.
func checkInvariants(t *testing.T, in Input, d Decision) {
	t.Helper()
	prev := fleetv1alpha1.RolloutStatus{}
	if in.Previous != nil {
		prev = *in.Previous
	}
	good := d.Status.GoodRevision
	if good != prev.GoodRevision && prev.GoodRevision != "" {
		// The good revision changes only to a target every cluster is done on.
		if d.Status.Phase != fleetv1alpha1.RolloutComplete || good != in.Target {
			t.Errorf("good revision %s -> %s in phase %s, target %s", prev.GoodRevision, good, d.Status.Phase, in.Target)
		}
		for name, p := range d.Phases {
			if p.Phase != fleetv1alpha1.ClusterDone {
				t.Errorf("good revision moved to %s with %s %s", good, name, p.Phase)
			}
		}
		good = prev.GoodRevision
	}
	if len(d.Apply) != len(in.Clusters) || len(d.Phases) != len(in.Clusters) {
		t.Fatalf("%d clusters, %d applies, %d phases", len(in.Clusters), len(d.Apply), len(d.Phases))
	}
	if d.RequeueAfter < 0 {
		t.Errorf("requeue %s", d.RequeueAfter)
	}
	// Until a revision is good, the baseline (what runs) is what clusters fall back to.
	back := cmpOr(good, d.Status.BaselineRevision)
	checkBaseline(t, in, d)
	staged := in.Strategy.Type == fleetv1alpha1.RolloutRolling && back != "" && !firstComingUp(in, d)
	for _, c := range in.Clusters {
		rev, ok := d.Apply[c.Name]
		switch {
		case !ok || rev == "":
			t.Errorf("cluster %s gets no revision", c.Name)
		case rev != back && rev != in.Target && rev != c.Revision:
			t.Errorf("cluster %s on %s gets %s: a third revision (good %s, baseline %s, target %s)", c.Name, c.Revision, rev, good,
				d.Status.BaselineRevision, in.Target)
		case staged && d.Status.FailedRevision == in.Target && rev != back:
			t.Errorf("cluster %s gets the failed target %s", c.Name, rev)
		}
	}
	if staged {
		checkStaging(t, in, d)
	}
}

// firstComingUp reports whether the decision is of a first revision still coming up or
// soaking: nothing is good, the target is the baseline, and no cluster runs another revision.
func firstComingUp(in Input, d Decision) bool {
	if d.Status.GoodRevision != "" || d.Status.BaselineRevision != in.Target {
		return false
	}
	return !slices.ContainsFunc(in.Clusters, func(c Cluster) bool { return c.Revision != "" && c.Revision != in.Target })
}

// checkBaseline checks that the baseline only moves to a revision every placed cluster is done
// on (or, while there is none, to one some cluster is done on). Once a baseline runs, a Rolling
// decision is staged: checkStaging holds it to its stages' concurrency.
func checkBaseline(t *testing.T, in Input, d Decision) {
	t.Helper()
	var prev string
	if in.Previous != nil {
		prev = cmpOr(in.Previous.BaselineRevision, in.Previous.GoodRevision)
	}
	base := d.Status.BaselineRevision
	if base != prev && base != "" && d.Status.Phase != fleetv1alpha1.RolloutComplete {
		everywhere := len(in.Clusters) > 0 && !slices.ContainsFunc(in.Clusters, func(c Cluster) bool { return c.Revision != base || !c.Done })
		some := prev == "" && slices.ContainsFunc(in.Clusters, func(c Cluster) bool { return c.Revision == base && c.Done })
		if !everywhere && !some {
			t.Errorf("baseline %s -> %s, which not every cluster is done on", prev, base)
		}
	}
}

// checkStaging checks a Rolling decision: a cluster starts only within the concurrency of its
// stage, only in the first stage not done, never while paused, and a stage with approval only
// starts on the target's approval.
func checkStaging(t *testing.T, in Input, d Decision) {
	t.Helper()
	rebased := in.Previous == nil || in.Previous.TargetRevision != in.Target
	byName := map[string]Cluster{}
	for _, c := range in.Clusters {
		byName[c.Name] = c
	}
	for i, st := range d.Status.Stages {
		def := stageDef(in.Strategy, st.Name)
		newlyStarted := rebased || !slices.ContainsFunc(in.Previous.Stages, func(p fleetv1alpha1.StageStatus) bool { return p.Name == st.Name })
		if newlyStarted && def.Approval && (!st.Approved || in.Approval != in.Target+"/"+st.Name) {
			t.Errorf("stage %s started with approval %q for target %s", st.Name, in.Approval, in.Target)
		}
		starts, busy := 0, 0
		for _, name := range st.Clusters {
			p, c := d.Phases[name], byName[name]
			old := in.ClusterPhases[name]
			if p.Phase == fleetv1alpha1.ClusterUpdating && c.Revision != "" &&
				(rebased || (old.Phase != fleetv1alpha1.ClusterUpdating && old.Phase != fleetv1alpha1.ClusterSoaking)) {
				starts++
			}
			if c.Revision != "" && (p.Phase == fleetv1alpha1.ClusterUpdating || p.Phase == fleetv1alpha1.ClusterSoaking ||
				(p.Phase == fleetv1alpha1.ClusterPending && !p.Since.IsZero()) || !c.Ready) {
				busy++
			}
		}
		if starts == 0 {
			continue
		}
		if in.Paused {
			t.Errorf("stage %s: %d clusters started while paused", st.Name, starts)
		}
		limit := scaled(in.Strategy.MaxUnavailable, len(in.Clusters))
		if def.MaxConcurrency != nil {
			limit = scaled(*def.MaxConcurrency, len(st.Clusters))
		}
		if busy > limit {
			t.Errorf("stage %s: %d clusters in flight or not Ready after %d started, at most %d", st.Name, busy, starts, limit)
		}
		for _, before := range d.Status.Stages[:i] {
			for _, name := range before.Clusters {
				if d.Phases[name].Phase != fleetv1alpha1.ClusterDone {
					t.Errorf("stage %s started a cluster while %s of stage %s is %s", st.Name, name, before.Name, d.Phases[name].Phase)
				}
			}
		}
	}
}

// stageDef is the strategy's stage of that name; the implicit stage has no settings.
func stageDef(s Strategy, name string) Stage {
	for _, st := range s.Stages {
		if st.Name == name {
			return st
		}
	}
	return Stage{Name: name}
}

// simStrategies are the strategies the simulation draws from.
func simStrategies() []Strategy {
	deadline := func(s *Strategy) { s.Deadline = 120 * time.Second }
	staged := withStages(stage("canary", "env=canary"),
		stage("eu", "region=eu").approval().concurrency(intstr.FromString("100%")).soakFor(0),
		stage("us", "region=us").approval())
	return []Strategy{
		strategy(deadline, soak(30*time.Second)),
		strategy(deadline, autoRollback, maxUnavailable(intstr.FromInt32(2))),
		strategy(deadline, maxUnavailable(intstr.FromString("50%")), soak(0)),
		strategy(deadline, staged, sortBy("order")),
		strategy(deadline, staged, autoRollback, soak(10*time.Second)),
		strategy(deadline, typeNone),
	}
}

// TestPlanSimulated runs random fleets through random sequences of target changes, pauses,
// approvals, placement changes, slow, stuck, blocked and not-Ready members, checking the
// invariants at every step and that a restarted hub re-plans the same decision; then it calms
// the fleet and checks that every rollout ends Complete.
func TestPlanSimulated(t *testing.T) {
	seen := map[string]int{}
	strategies := simStrategies()
	for seed := range uint64(300) {
		s := newSim(t, seed, strategies[seed%uint64(len(strategies))], seen)
		for range 150 {
			s.disturb()
			d := s.step(0.1, 0.05, 200*time.Second)
			if t.Failed() {
				t.Fatalf("seed %d at %s: %s", seed, s.now, d.Status.Message)
			}
			s.advance(d)
		}
		s.calm()
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
	t.Logf("re-planned phases: %v", seen)
	for _, want := range []string{"rollout/Progressing", "rollout/Paused", "rollout/AwaitingApproval", "rollout/Stalled",
		"rollout/RollingBack", "rollout/Complete", "cluster/Pending", "cluster/Updating", "cluster/Soaking",
		"cluster/Done", "cluster/Failed"} {
		if seen[want] == 0 {
			t.Errorf("the simulation never re-planned from %s: %v", want, seen)
		}
	}
}

func newSim(t *testing.T, seed uint64, rollout Strategy, seen map[string]int) *fleetSim {
	s := &fleetSim{t: t, rng: rand.New(rand.NewPCG(seed, 13)), now: t0, strategy: rollout, target: "r1",
		keepStarted: seed%2 == 0, seen: seen}
	for i := range 2 + s.rng.IntN(6) {
		s.clusters = append(s.clusters, s.newCluster(fmt.Sprintf("m%d", i)))
	}
	return s
}

func (s *fleetSim) newCluster(name string) *simCluster {
	w := c(name, "").label("region", []string{"eu", "us", "ap"}[s.rng.IntN(3)]).label("order", fmt.Sprint(s.rng.IntN(4))).
		ep(int32(s.rng.IntN(3)))
	if s.rng.IntN(4) == 0 {
		w.label("env", "canary")
	}
	return &simCluster{Cluster: w.Cluster}
}

// disturb changes the world at random: the target, the pause, approvals, placement, readiness,
// members that stop being done or block.
func (s *fleetSim) disturb() {
	r := s.rng.Float64
	if r() < 0.04 {
		s.target = fmt.Sprintf("r%d", 1+s.rng.IntN(5))
	}
	if r() < 0.03 {
		s.paused = !s.paused
	}
	if s.status != nil && s.status.Phase == fleetv1alpha1.RolloutAwaitingApproval && r() < 0.3 {
		s.approval = s.target + "/" + s.status.Stage
		if r() < 0.3 {
			s.approval = "r0/" + s.status.Stage // an approval of another revision
		}
	}
	if r() < 0.03 && len(s.clusters) < 8 {
		s.clusters = append(s.clusters, s.newCluster(fmt.Sprintf("n%d", s.rng.IntN(100))))
		slices.SortFunc(s.clusters, func(a, b *simCluster) int { return strings.Compare(a.Name, b.Name) })
		s.clusters = slices.CompactFunc(s.clusters, func(a, b *simCluster) bool { return a.Name == b.Name })
	}
	if r() < 0.02 && len(s.clusters) > 1 {
		s.clusters = slices.Delete(s.clusters, 0, 1)
	}
	for _, sc := range s.clusters {
		switch x := r(); {
		case x < 0.02:
			sc.Ready = !sc.Ready
		case x < 0.03:
			sc.doneAt = s.now.Add(time.Duration(s.rng.IntN(100)) * time.Second)
		case x < 0.035:
			sc.Blocked = !sc.Blocked
		}
	}
}

// advance moves the clock: to the requeue, or by a random step.
func (s *fleetSim) advance(d Decision) {
	steps := []time.Duration{0, time.Second, 30 * time.Second, 90 * time.Second, d.RequeueAfter}
	s.now = s.now.Add(steps[s.rng.IntN(len(steps))])
}

// calm makes every member Ready, unblocked and done soon, unpauses and approves, and expects
// the rollout to end Complete: on the target, or rolled back with the target failed.
func (s *fleetSim) calm() {
	s.t.Helper()
	s.paused = false
	for _, sc := range s.clusters {
		sc.Ready, sc.Blocked = true, false
		if sc.doneAt.IsZero() || sc.doneAt.After(s.now) {
			sc.doneAt = s.now
		}
	}
	var d Decision
	for range 200 {
		if s.status != nil && s.status.Phase == fleetv1alpha1.RolloutAwaitingApproval {
			s.approval = s.target + "/" + s.status.Stage
		}
		d = s.step(0, 0, 0)
		if d.Status.Phase == fleetv1alpha1.RolloutComplete && s.settled(d) {
			return
		}
		s.now = s.now.Add(max(d.RequeueAfter, time.Second))
		for _, sc := range s.clusters {
			if sc.doneAt.IsZero() {
				sc.doneAt = s.now
			}
		}
	}
	s.t.Errorf("the calm fleet did not complete: %s %s (%s)", d.Status.Phase, d.Status.Updated, d.Status.Message)
}

// settled reports whether every cluster runs what d applies.
func (s *fleetSim) settled(d Decision) bool {
	for _, sc := range s.clusters {
		if d.Apply[sc.Name] != sc.Revision {
			return false
		}
	}
	want := s.target
	if d.Status.FailedRevision == s.target {
		want = cmpOr(d.Status.GoodRevision, d.Status.BaselineRevision)
	}
	for _, rev := range d.Apply {
		if rev != want {
			s.t.Errorf("complete with %v, want every cluster on %s", d.Apply, want)
			return true
		}
	}
	return true
}

// TestPlanRestartAtEveryPhase walks one RayService through every rollout phase, each decision
// stored as the binding keeps it and fed back as the next input; at every step a restarted
// hub planning from the binding alone gives the same decision without repeating an Event.
func TestPlanRestartAtEveryPhase(t *testing.T) {
	rollout := strategy(autoRollback, func(s *Strategy) { s.Deadline = 120 * time.Second },
		withStages(stage("canary", "env=canary"), stage("prod", "").approval()))
	s := &fleetSim{t: t, rng: rand.New(rand.NewPCG(1, 2)), now: t0, strategy: rollout, target: "r1", seen: map[string]int{}}
	for _, w := range []*clusterWrapper{c("can", "").label("env", "canary"), c("p1", "").ep(1), c("p2", "").ep(2)} {
		s.clusters = append(s.clusters, &simCluster{Cluster: w.Cluster})
	}
	can, p1 := s.clusters[0], s.clusters[1]
	steps := []struct {
		name   string
		before func()
		after  time.Duration // the clock moves by this after the step
		phase  fleetv1alpha1.RolloutPhase
		apply  string // can,p1,p2
	}{
		{name: "first revision, everywhere at once", phase: progressing, apply: "r1,r1,r1"},
		{name: "done everywhere: soaking", after: 60 * time.Second, phase: progressing, apply: "r1,r1,r1"},
		{name: "soaked: complete", phase: complete, apply: "r1,r1,r1"},
		{name: "a new target: the canary first", before: func() { s.target = "r2" }, phase: progressing, apply: "r2,r1,r1"},
		{name: "the canary soaks", after: 60 * time.Second, phase: progressing, apply: "r2,r1,r1"},
		{name: "the canary is done: prod awaits approval", phase: awaitingApproval, apply: "r2,r1,r1"},
		{name: "paused, then approved", before: func() { s.paused, s.approval = true, "r2/prod" }, phase: pausedPhase, apply: "r2,r1,r1"},
		{name: "resumed: p1 starts", before: func() { s.paused = false }, phase: progressing, apply: "r2,r2,r1"},
		{name: "p1 never gets done", before: func() { p1.doneAt = time.Time{} }, after: 120 * time.Second, phase: progressing, apply: "r2,r2,r1"},
		{name: "past the deadline: rolling back", phase: rollingBack, apply: "r1,r1,r1"},
		{name: "rolled back", phase: complete, apply: "r1,r1,r1"},
		{name: "the failed target is not tried again", after: time.Hour, phase: complete, apply: "r1,r1,r1"},
		{name: "without autoRollback or stages a new target starts on the cluster with the fewest endpoints", before: func() {
			s.target, s.strategy.AutoRollback, s.strategy.Stages = "r3", false, nil
		}, phase: progressing, apply: "r3,r1,r1"},
		{name: "it never gets done", before: func() { can.doneAt = time.Time{} }, after: 120 * time.Second, phase: progressing, apply: "r3,r1,r1"},
		{name: "stalled", phase: stalled, apply: "r3,r1,r1"},
		{name: "still stalled", after: time.Minute, phase: stalled, apply: "r3,r1,r1"},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		d := s.step(0, 0, 0)
		got := d.Apply["can"] + "," + d.Apply["p1"] + "," + d.Apply["p2"]
		if d.Status.Phase != st.phase || got != st.apply {
			t.Fatalf("%s: phase %s, apply %s; want %s, %s (%s)", st.name, d.Status.Phase, got, st.phase, st.apply, d.Status.Message)
		}
		s.now = s.now.Add(st.after)
	}
	for _, want := range []string{"rollout/Progressing", "rollout/Paused", "rollout/AwaitingApproval", "rollout/Stalled",
		"rollout/RollingBack", "rollout/Complete", "cluster/Pending", "cluster/Updating", "cluster/Soaking",
		"cluster/Done", "cluster/Failed"} {
		if s.seen[want] == 0 {
			t.Errorf("never re-planned from %s: %v", want, s.seen)
		}
	}
}

// cmpOr is the first non-empty string (the standard library's cmp is shadowed by go-cmp here).
func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
