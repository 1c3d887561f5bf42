package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// member is one placed cluster while a decision is made.
type member struct {
	Cluster
	// phase is the cluster's rollout phase, updated as the decision goes.
	phase ClusterPhase
	// stage is the stage the cluster belongs to (Rolling rollouts only).
	stage *stagePlan
	// landed is set when the cluster left flight in this decision, done with the revision it
	// was updating to when the target changed: it goes on to the target before the clusters
	// that were waiting, room permitting.
	landed bool
}

// applyMode is how the decision's Apply map is filled.
type applyMode int

const (
	// applyStaged: a cluster not started keeps what it runs (the good revision when it runs
	// nothing or the failed revision), the others get the target.
	applyStaged applyMode = iota
	// applyTarget: every cluster gets the target.
	applyTarget
	// applyGood: every cluster gets the good revision (a rollback).
	applyGood
	// applyBlueGreen: green clusters get the target, the others the good revision.
	applyBlueGreen
)

// planner holds one decision while it is made.
type planner struct {
	in   Input
	prev fleetv1alpha1.RolloutStatus
	// status is the new rollout status; Stages, Updated and the message are set by finish.
	status fleetv1alpha1.RolloutStatus
	// rebased is set when the target differs from the previous decision's: the per-cluster
	// phases and the stages start over.
	rebased bool
	members []*member
	stages  []*stagePlan
	mode    applyMode
	events  []Event
	requeue time.Duration
	// progressing and paused are the conditions; paused is filled by finish unless set.
	progressing metav1.Condition
	paused      *metav1.Condition
	// colors, leaving and shift are a BlueGreen rollout's colours, leaving clusters and
	// TrafficShifting condition (shift's Type is empty for other rollouts).
	colors  map[string]fleetv1alpha1.Color
	leaving map[string]fleetv1alpha1.LeaveReason
	shift   metav1.Condition
	// greenKeeps is set while a capacity-following rollout moves back to blue: the green
	// clusters keep the revision they run, whatever the target now is.
	greenKeeps bool
}

// Plan decides, for one hub RayService, which revision each placed cluster gets now and the
// new rollout status. It reads nothing but in, so the same input always gives the same
// decision, and a decision's Status and Phases fed back as the next input continue the
// rollout: that is how a restarted hub resumes.
func Plan(in Input) Decision {
	p := newPlanner(in)
	switch {
	case len(p.members) == 0:
		p.notPlaced()
	case in.Strategy.Type == fleetv1alpha1.RolloutBlueGreen:
		p.blueGreen()
	case in.Strategy.Type == fleetv1alpha1.RolloutNone || p.runsNowhere():
		p.allAtOnce()
	case p.status.FailedRevision != "" && p.status.FailedRevision == in.Target:
		p.rollingBack()
	default:
		p.rolling()
	}
	return p.finish()
}

// newPlanner reads the previous status and phases, starting over when the target changed.
func newPlanner(in Input) *planner {
	p := &planner{in: in}
	if in.Previous != nil {
		p.prev = *in.Previous.DeepCopy()
	}
	p.rebased = p.prev.TargetRevision != in.Target
	p.status = fleetv1alpha1.RolloutStatus{
		TargetRevision:   in.Target,
		BaselineRevision: Baseline(in.Previous, in.Clusters),
		GoodRevision:     p.prev.GoodRevision,
		FailedRevision:   p.prev.FailedRevision,
		StartTime:        p.prev.StartTime,
		CompletionTime:   p.prev.CompletionTime,
	}
	if p.status.GoodRevision == "" && p.prev.TargetRevision == "" {
		p.status.GoodRevision = inferGood(in.Clusters, in.Target)
	}
	if p.rebased {
		p.status.StartTime = p.metaNow()
		p.status.CompletionTime = nil
		if p.status.FailedRevision == in.Target {
			// The target moved away from the failed revision and came back: that is a change,
			// and the revision is tried again.
			p.status.FailedRevision = ""
		}
	} else if p.status.StartTime == nil {
		p.status.StartTime = p.metaNow()
	}
	for _, c := range in.Clusters {
		m := &member{Cluster: c, phase: in.ClusterPhases[c.Name]}
		if m.phase.Phase == "" {
			m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterPending}
		}
		if p.rebased {
			m.phase = p.rebase(m)
		}
		p.members = append(p.members, m)
	}
	slices.SortFunc(p.members, func(a, b *member) int { return cmp.Compare(a.Name, b.Name) })
	return p
}

// inferGood is the good revision of a fleet whose rollout status was lost (the binding was
// recreated): the revision other than the target that most clusters run, ties going by name.
// None when the clusters run nothing or only the target: then it is a first revision.
func inferGood(clusters []Cluster, target string) string {
	return mostRun(clusters, func(c Cluster) bool { return c.Revision != target })
}

// rebase is m's phase for a new target. Every cluster is Pending again; one that was updating
// to the previous target and is not done with it yet stays in flight on it (Pending with the
// update's start as Since) so that its upgrade is not cut short by a third spec.
func (p *planner) rebase(m *member) ClusterPhase {
	old := m.phase
	rev := m.Revision
	switch {
	case rev == "" || rev == p.in.Target || m.Done || m.Blocked:
		return ClusterPhase{Phase: fleetv1alpha1.ClusterPending}
	case old.Phase == fleetv1alpha1.ClusterUpdating && rev == p.prev.TargetRevision:
		return ClusterPhase{Phase: fleetv1alpha1.ClusterPending, Since: old.Since}
	case old.Phase == fleetv1alpha1.ClusterSoaking && rev == p.prev.TargetRevision:
		return ClusterPhase{Phase: fleetv1alpha1.ClusterPending, Since: cmp.Or(old.Started, old.Since)}
	case old.Phase == fleetv1alpha1.ClusterPending && !old.Since.IsZero():
		// Still finishing a revision from an earlier target: it goes on doing so.
		return old
	}
	return ClusterPhase{Phase: fleetv1alpha1.ClusterPending}
}

// notPlaced is the decision for a RayService on no cluster: nothing to roll out, nothing
// becomes good.
func (p *planner) notPlaced() {
	p.status.Phase = fleetv1alpha1.RolloutProgressing
	p.status.Message = "placed on no cluster: nothing to roll out"
	p.progressing = cond(ConditionProgressing, metav1.ConditionUnknown, ReasonNotPlaced, p.status.Message)
}

// allAtOnce gives every cluster the target at once: rollout type None, and a first revision,
// which runs nowhere yet and so has nothing to protect. Pausing and approvals do not apply; a stalled cluster
// is reported and nothing is rolled back.
func (p *planner) allAtOnce() {
	p.mode = applyTarget
	if p.status.FailedRevision == p.in.Target {
		// A rolled-back revision under rollout type None: it is tried again, from the start.
		p.status.FailedRevision = ""
		for _, m := range p.members {
			m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterPending}
		}
	}
	for _, m := range p.members {
		if m.phase.Phase == fleetv1alpha1.ClusterPending {
			p.start(m)
		}
		p.advance(m, true)
	}
	head := "rollout type None: every cluster gets revision " + p.in.Target + " at once"
	if p.in.Strategy.Type != fleetv1alpha1.RolloutNone {
		head = "first revision " + p.in.Target + ": every cluster gets it at once"
	}
	switch failed := p.failedMembers(); {
	case len(failed) > 0 && p.in.Strategy.Type != fleetv1alpha1.RolloutNone && p.in.Strategy.AutoRollback:
		p.stalled(failed, "there is no good revision to roll back to; every cluster keeps revision "+p.in.Target)
	case len(failed) > 0:
		p.stalled(failed, "every cluster keeps revision "+p.in.Target)
	case p.allDone():
		p.complete()
	default:
		p.status.Phase = fleetv1alpha1.RolloutProgressing
		p.status.Message = conditions.Join(head, p.describe(p.members)...)
		p.progressing = cond(ConditionProgressing, metav1.ConditionTrue, ReasonProgressing, p.status.Message)
	}
	if p.in.Paused {
		c := cond(ConditionPaused, metav1.ConditionFalse, ReasonNotPaused,
			"the paused annotation has no effect: "+head)
		p.paused = &c
	}
}

// failedMembers are the clusters in phase Failed.
func (p *planner) failedMembers() []*member {
	var out []*member
	for _, m := range p.members {
		if m.phase.Phase == fleetv1alpha1.ClusterFailed {
			out = append(out, m)
		}
	}
	return out
}

// allDone reports whether every placed cluster is done on the target.
func (p *planner) allDone() bool {
	return !slices.ContainsFunc(p.members, func(m *member) bool { return m.phase.Phase != fleetv1alpha1.ClusterDone })
}

// complete marks the target good: every placed cluster is done on it.
func (p *planner) complete() {
	again := !p.rebased && p.prev.Phase == fleetv1alpha1.RolloutComplete && p.prev.GoodRevision == p.in.Target
	p.status.Phase = fleetv1alpha1.RolloutComplete
	p.status.GoodRevision = p.in.Target
	p.status.BaselineRevision = p.in.Target
	p.status.Stage = ""
	if !again || p.status.CompletionTime == nil {
		p.status.CompletionTime = p.metaNow()
	}
	p.status.Message = fmt.Sprintf("revision %s is done on every cluster (%d)", p.in.Target, len(p.members))
	p.progressing = cond(ConditionProgressing, metav1.ConditionTrue, ReasonRolloutComplete, p.status.Message)
	if !again {
		p.event(EventNormal, EventRolloutComplete, p.status.Message)
	}
}

// finish turns the planner's state into the Decision.
func (p *planner) finish() Decision {
	d := Decision{
		Apply:        make(map[string]string, len(p.members)),
		Phases:       make(map[string]ClusterPhase, len(p.members)),
		Events:       p.events,
		Progressing:  p.progressing,
		RequeueAfter: p.requeue,
		Colors:       p.colors,
		Leave:        p.leaving,
	}
	if bg := p.status.BlueGreen; bg != nil && bg.Capacity != nil {
		d.Capacity = &CapacityTargets{Direction: bg.Capacity.Direction, Green: bg.Capacity.Green, Blue: bg.Capacity.Blue}
	}
	if p.shift.Type != "" {
		shift := p.shift
		shift.Message = conditions.Truncate(shift.Message)
		d.TrafficShifting = &shift
	}
	done := 0
	for _, m := range p.members {
		d.Apply[m.Name] = p.applyFor(m)
		d.Phases[m.Name] = m.phase
		if m.phase.Phase == fleetv1alpha1.ClusterDone {
			done++
		}
	}
	for _, st := range p.stages {
		if st.record != nil {
			st.record.Clusters = st.names()
			p.status.Stages = append(p.status.Stages, *st.record)
		}
	}
	p.status.Updated = fmt.Sprintf("%d/%d", done, len(p.members))
	p.status.Message = conditions.Truncate(p.status.Message)
	d.Status = p.status
	d.Progressing.Message = conditions.Truncate(conditions.Join(d.Progressing.Message, p.revisionsText()...))
	switch {
	case p.paused != nil:
		d.Paused = *p.paused
	case p.in.Paused:
		d.Paused = cond(ConditionPaused, metav1.ConditionTrue, ReasonPaused,
			"the hub RayService is annotated paused: no cluster starts until the annotation is removed")
	default:
		d.Paused = cond(ConditionPaused, metav1.ConditionFalse, ReasonNotPaused, "")
	}
	return d
}

// revisionsText names the baseline and the good revision for the RolloutProgressing condition
// while either differs from the target; nothing once the target is both, or nothing runs yet.
func (p *planner) revisionsText() []string {
	base, good := p.status.BaselineRevision, p.status.GoodRevision
	if base == "" || (base == p.in.Target && good == p.in.Target) {
		return nil
	}
	return []string{fmt.Sprintf("baseline revision %s, good revision %s", base, cmp.Or(good, "none yet"))}
}

// applyFor is the revision m gets: never one other than the rollback revision (rollbackTo),
// the target, or the one it already runs.
func (p *planner) applyFor(m *member) string {
	switch {
	case p.mode == applyGood:
		return p.rollbackTo()
	case p.mode == applyBlueGreen:
		if p.colors[m.Name] == fleetv1alpha1.ColorGreen {
			if p.greenKeeps && m.Revision != "" {
				return m.Revision
			}
			return p.in.Target
		}
		return p.rollbackTo()
	case p.mode == applyStaged && m.phase.Phase == fleetv1alpha1.ClusterPending:
		if m.Revision == "" || m.Revision == p.status.FailedRevision {
			return p.rollbackTo()
		}
		return m.Revision
	}
	return p.in.Target
}

// event records an Event of this decision.
func (p *planner) event(typ, reason, msg string) {
	p.clusterEvent(typ, reason, "", msg)
}

// clusterEvent asks for an Event about one cluster of the rollout.
func (p *planner) clusterEvent(typ, reason, cluster, msg string) {
	p.events = append(p.events, Event{Type: typ, Reason: reason, Message: conditions.Truncate(msg), Cluster: cluster})
}

// requeueIn asks to be planned again in d, keeping the soonest request.
func (p *planner) requeueIn(d time.Duration) {
	if d > 0 && (p.requeue == 0 || d < p.requeue) {
		p.requeue = d
	}
}

// metaNow is the decision's time as an API timestamp.
func (p *planner) metaNow() *metav1.Time {
	t := metav1.NewTime(p.in.Now)
	return &t
}

// cond is a condition with the fields Plan sets.
func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}
