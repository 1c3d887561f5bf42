package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// Events of a BlueGreen rollout.
const (
	// EventGreenStarted: a new revision goes to the green clusters while blue keeps serving.
	EventGreenStarted = "GreenStarted"
	// EventTrafficShifted: green was given a larger share of the traffic.
	EventTrafficShifted = "TrafficShifted"
	// EventTrafficReverted (Warning when the revision failed): the traffic went back to blue.
	EventTrafficReverted = "TrafficReverted"
	// EventBlueRetired: green held all of the traffic for retireAfterSeconds; blue leaves.
	EventBlueRetired = "BlueRetired"
	// EventNoGreenClusters (Warning): no set of other members can take the new revision.
	EventNoGreenClusters = "NoGreenClusters"
)

// acceptPoll is how soon a decision waiting for the gateway to accept a route is made again:
// route status changes are not watched.
const acceptPoll = 2 * time.Second

// NeedsGreen reports whether a BlueGreen rollout to target starts now and so needs a green
// set: the placed clusters run a revision other than the target (the baseline, soaked or
// not), no BlueGreen rollout is in flight, the target is not a revision that failed, and no
// Rolling fallback of it started. It reads the previous status as Plan does.
func NeedsGreen(previous *fleetv1alpha1.RolloutStatus, target string, clusters []Cluster) bool {
	p := newPlanner(Input{Target: target, Previous: previous, Clusters: clusters})
	from := p.rollbackTo()
	switch {
	case len(clusters) == 0 || p.runsNowhere() || from == target:
		return false
	case target == p.prev.FailedRevision || p.prev.BlueGreen != nil:
		return false
	case p.prev.TargetRevision == target && len(p.prev.Stages) > 0:
		return false // falling back to Rolling already
	}
	return true
}

// blueGreen decides a BlueGreen rollout: green comes up on the target, traffic moves to it
// step by step, blue leaves; an undo, a newer revision or a missed deadline send the traffic
// back to blue at once. When capacity follows the traffic (bluegreen_capacity.go) the steps
// also move the colours' capacity, and an undo moves back step by step.
func (p *planner) blueGreen() {
	bg := p.prev.BlueGreen.DeepCopy()
	switch {
	case bg != nil && p.rebased && p.in.Target == p.rollbackTo() && bg.Capacity != nil && p.capacityOn():
		p.startUndo(bg)
	case bg != nil && p.rebased:
		if p.in.Target == p.rollbackTo() {
			p.revert(bg, false, "the target is revision "+p.in.Target+" again (undo)")
			return
		}
		p.event(EventNormal, EventGreenStarted, fmt.Sprintf("revision %s replaces %s on green %s; the traffic is back on blue %s until it is done%s",
			p.in.Target, p.prev.TargetRevision, names(p.in.BlueGreen.Green), names(p.in.BlueGreen.Blue), p.blueOverload()))
		bg = &fleetv1alpha1.BlueGreenStatus{Step: fleetv1alpha1.BlueGreenDeploying, StepTime: p.metaNow()}
		p.startCapacity(bg)
	case bg != nil:
		if !p.followCapacity(bg) {
			return
		}
	case p.runsNowhere() || p.status.GoodRevision == p.in.Target:
		p.allAtOnce()
		return
	case p.status.FailedRevision == p.in.Target:
		p.revisionFailed()
		return
	case p.in.Paused:
		p.mode = applyGood
		p.status.Phase = fleetv1alpha1.RolloutPaused
		p.status.Message = "paused: revision " + p.in.Target + " has not gone green yet"
		p.progressing = cond(ConditionProgressing, metav1.ConditionUnknown, ReasonPaused, p.status.Message)
		return
	case len(p.in.BlueGreen.Green) == 0 && p.in.Strategy.BlueGreen.FallbackRolling:
		p.rolling()
		p.status.Message = conditions.Join("no green set ("+p.in.BlueGreen.NoGreen+"): fallback Rolling updates the clusters in place", p.status.Message)
		return
	case len(p.in.BlueGreen.Green) == 0:
		p.noGreen()
		return
	default:
		bg = &fleetv1alpha1.BlueGreenStatus{Step: fleetv1alpha1.BlueGreenDeploying, StepTime: p.metaNow()}
		p.event(EventNormal, EventGreenStarted, fmt.Sprintf("revision %s goes to green %s while blue %s keeps serving revision %s",
			p.in.Target, names(p.in.BlueGreen.Green), names(p.in.BlueGreen.Blue), p.rollbackTo()))
		p.startCapacity(bg)
	}
	bg.Blue, bg.Green = slices.Sorted(slices.Values(p.in.BlueGreen.Blue)), slices.Sorted(slices.Values(p.in.BlueGreen.Green))
	p.status.BlueGreen = bg
	p.mode = applyBlueGreen
	p.colorPhases(bg)
	p.status.Phase = fleetv1alpha1.RolloutProgressing
	switch {
	case bg.Capacity != nil && bg.Capacity.Direction != fleetv1alpha1.CapacityForward:
		p.capacityBack(bg)
	case bg.Step == fleetv1alpha1.BlueGreenDeploying:
		p.deploying(bg)
	default:
		p.shifting(bg)
	}
}

// deploying waits for every green cluster to be done on the target, then takes the first step
// (after the "shift" approval, when asked for).
func (p *planner) deploying(bg *fleetv1alpha1.BlueGreenStatus) {
	if waiting := p.greenNotDone(bg); len(waiting) > 0 {
		deadline := bg.StepTime.Add(p.in.Strategy.Deadline)
		if !p.in.Now.Before(deadline) {
			p.revert(bg, true, fmt.Sprintf("green was not done within %s: %s", p.in.Strategy.Deadline, strings.Join(waiting, "; ")))
			return
		}
		p.requeueIn(deadline.Sub(p.in.Now))
		p.progress(bg, fleetv1alpha1.ReasonGreenDeploying, metav1.ConditionFalse,
			fmt.Sprintf("green deploying revision %s (deadline %s): %s", p.in.Target, clock(deadline), strings.Join(waiting, "; ")))
		return
	}
	if !p.in.BlueGreen.Traffic {
		p.promote(bg, "green is done; no traffic is managed")
		return
	}
	if !p.approved(fleetv1alpha1.BlueGreenShiftStage) {
		return
	}
	if bg.Capacity != nil {
		p.capacityForward(bg, time.Time{})
		return
	}
	p.shiftTo(bg, min(p.in.Strategy.BlueGreen.Step, 100))
}

// shifting moves traffic on while green stays healthy and the gateway follows, and retires blue
// once green held all of it for retireAfterSeconds.
func (p *planner) shifting(bg *fleetv1alpha1.BlueGreenStatus) {
	if waiting := p.greenNotDone(bg); len(waiting) > 0 {
		deadline := bg.StepTime.Add(p.in.Strategy.Deadline)
		if !p.in.Now.Before(deadline) {
			why := fmt.Sprintf("green was not healthy within %s: %s", p.in.Strategy.Deadline, strings.Join(waiting, "; "))
			if bg.Capacity != nil {
				p.toRevert(bg, why)
				return
			}
			p.revert(bg, true, why)
			return
		}
		p.requeueIn(deadline.Sub(p.in.Now))
		// Green's share went back to blue: once green recovers, the step starts again from
		// the gateway accepting that share, rather than moving on at once.
		bg.Accepted = false
		p.progress(bg, fleetv1alpha1.ReasonShiftPaused, metav1.ConditionTrue,
			fmt.Sprintf("shift paused (the traffic goes back to blue at %s unless green recovers): %s", clock(deadline), strings.Join(waiting, "; ")))
		return
	}
	if !bg.Accepted {
		if !p.in.BlueGreen.Accepted {
			p.requeueIn(acceptPoll)
			p.progress(bg, fleetv1alpha1.ReasonShiftPaused, metav1.ConditionTrue,
				fmt.Sprintf("waiting for the gateway to accept the route giving green %d%%", bg.GreenPercent))
			return
		}
		bg.Accepted, bg.StepTime = true, p.metaNow()
	}
	if bg.Step == fleetv1alpha1.BlueGreenHolding {
		if bg.Capacity != nil {
			// Green serves all of the traffic the gateway routes: blue comes down to nothing.
			p.recordCapacity(bg, PlanCapacity(p.capacityInput(bg)))
		}
		retire := bg.StepTime.Add(p.in.Strategy.BlueGreen.RetireAfter)
		if p.in.Now.Before(retire) {
			p.requeueIn(retire.Sub(p.in.Now))
			p.progress(bg, fleetv1alpha1.ReasonShifted, metav1.ConditionFalse,
				fmt.Sprintf("green holds all of the traffic; blue leaves at %s", clock(retire)))
			return
		}
		p.retire(bg)
		return
	}
	next := bg.StepTime.Add(p.in.Strategy.BlueGreen.Interval)
	blueDown := p.notReady(bg.Blue)
	switch {
	case len(blueDown) > 0:
		// Its share went to the rest of blue; moving more traffic now would measure green
		// against a fleet that is not the one it replaces.
		p.requeueIn(max(next.Sub(p.in.Now), acceptPoll))
		p.progress(bg, fleetv1alpha1.ReasonShiftPaused, metav1.ConditionTrue,
			"shift paused: blue "+strings.Join(blueDown, ",")+" not Ready")
	case p.in.Paused:
		p.progress(bg, fleetv1alpha1.ReasonShiftPaused, metav1.ConditionTrue, "paused: the hub RayService is annotated paused")
	case bg.Capacity != nil:
		p.capacityForward(bg, next)
	case p.in.Now.Before(next):
		p.requeueIn(next.Sub(p.in.Now))
		p.progress(bg, fleetv1alpha1.ReasonShifting, metav1.ConditionTrue, "next step at "+clock(next))
	case bg.GreenPercent+p.in.Strategy.BlueGreen.Step >= 100:
		p.promote(bg, "")
	default:
		p.shiftTo(bg, bg.GreenPercent+p.in.Strategy.BlueGreen.Step)
	}
}

// shiftTo gives green percent of the traffic (100 after the "promote" approval, when asked for).
func (p *planner) shiftTo(bg *fleetv1alpha1.BlueGreenStatus, percent int32) {
	if percent >= 100 {
		p.promote(bg, "")
		return
	}
	bg.Step, bg.GreenPercent, bg.Accepted, bg.StepTime = fleetv1alpha1.BlueGreenShifting, percent, false, p.metaNow()
	p.event(EventNormal, EventTrafficShifted, p.split(bg))
	p.requeueIn(acceptPoll)
	p.progress(bg, fleetv1alpha1.ReasonShifting, metav1.ConditionTrue, "waiting for the gateway to accept the route")
}

// promote gives green all of the traffic, after the "promote" approval when asked for.
func (p *planner) promote(bg *fleetv1alpha1.BlueGreenStatus, why string) {
	if !p.approved(fleetv1alpha1.BlueGreenPromoteStage) {
		return
	}
	bg.Step, bg.GreenPercent, bg.StepTime = fleetv1alpha1.BlueGreenHolding, 100, p.metaNow()
	// Without a route there is nothing for a gateway to accept.
	bg.Accepted = !p.in.BlueGreen.Traffic
	p.event(EventNormal, EventTrafficShifted, conditions.Join(p.split(bg), why))
	p.requeueIn(acceptPoll)
	p.progress(bg, fleetv1alpha1.ReasonShifted, metav1.ConditionFalse,
		fmt.Sprintf("green holds all of the traffic; blue leaves %s after the gateway accepts it", p.in.Strategy.BlueGreen.RetireAfter))
}

// approved reports whether stage of the target is approved (or needs no approval); when not,
// the rollout waits for it.
func (p *planner) approved(stage string) bool {
	if !p.in.Strategy.BlueGreen.Approval || p.in.Approval == p.in.Target+"/"+stage {
		return true
	}
	bg := p.status.BlueGreen
	p.status.Phase = fleetv1alpha1.RolloutAwaitingApproval
	p.status.Stage = stage
	what := "the first traffic step"
	if stage == fleetv1alpha1.BlueGreenPromoteStage {
		what = "green taking all of the traffic"
	}
	p.status.Message = fmt.Sprintf("%s: %s waits for `rayfleet rollout approve` of revision %s, stage %s", p.split(bg), what, p.in.Target, stage)
	p.progressing = cond(ConditionProgressing, metav1.ConditionUnknown, ReasonAwaitingApproval, p.status.Message)
	paused := cond(ConditionPaused, metav1.ConditionTrue, ReasonAwaitingApproval, p.status.Message)
	p.paused = &paused
	p.shift = cond(fleetv1alpha1.ConditionTrafficShifting, metav1.ConditionTrue, fleetv1alpha1.ReasonShiftPaused, p.status.Message)
	if p.prev.Phase != fleetv1alpha1.RolloutAwaitingApproval || p.prev.Stage != stage || p.rebased {
		p.event(EventNormal, EventAwaitingApproval, p.status.Message)
	}
	return false
}

// retire completes the rollout: green is the good revision's set, blue leaves.
func (p *planner) retire(bg *fleetv1alpha1.BlueGreenStatus) {
	p.leave(bg.Blue, fleetv1alpha1.LeaveRetired)
	p.status.BlueGreen = nil
	p.members = slices.DeleteFunc(p.members, func(m *member) bool { return slices.Contains(bg.Blue, m.Name) })
	p.event(EventNormal, EventBlueRetired, fmt.Sprintf("green %s held all of the traffic for %s: blue %s leaves",
		names(bg.Green), p.in.Strategy.BlueGreen.RetireAfter, names(bg.Blue)))
	p.complete()
	p.mode = applyTarget
	p.shift = cond(fleetv1alpha1.ConditionTrafficShifting, metav1.ConditionFalse, fleetv1alpha1.ReasonShifted,
		fmt.Sprintf("green %s took over; blue %s retired", names(bg.Green), names(bg.Blue)))
}

// revert sends the traffic back to blue at once and gives green up; failed marks the target
// failed (a missed deadline) rather than undone.
func (p *planner) revert(bg *fleetv1alpha1.BlueGreenStatus, failed bool, why string) {
	green := slices.DeleteFunc(slices.Clone(bg.Green), func(name string) bool { return slices.Contains(bg.Blue, name) })
	p.leave(green, fleetv1alpha1.LeaveRolledBack)
	p.members = slices.DeleteFunc(p.members, func(m *member) bool { return slices.Contains(green, m.Name) })
	p.status.BlueGreen = nil
	p.mode = applyGood
	msg := fmt.Sprintf("traffic back on blue %s: %s; green %s leaves", names(bg.Blue), why, names(green))
	p.shift = cond(fleetv1alpha1.ConditionTrafficShifting, metav1.ConditionFalse, fleetv1alpha1.ReasonShiftReverted, msg)
	if !failed {
		p.event(EventNormal, EventTrafficReverted, msg)
		p.complete()
		return
	}
	p.status.FailedRevision = p.in.Target
	p.event(EventWarning, EventTrafficReverted, "revision "+p.in.Target+" failed: "+msg)
	p.status.Phase = fleetv1alpha1.RolloutComplete
	p.status.CompletionTime = p.metaNow()
	p.status.Message = "revision " + p.in.Target + " failed and is not tried again until the spec or the overrides change: " + msg
	p.progressing = cond(ConditionProgressing, metav1.ConditionFalse, ReasonRevisionFailed, p.status.Message)
}

// revisionFailed holds a target that failed: blue keeps the good revision.
func (p *planner) revisionFailed() {
	p.mode = applyGood
	p.status.Phase = fleetv1alpha1.RolloutComplete
	p.status.Message = "revision " + p.in.Target + " failed and is not tried again until the spec or the overrides change; the clusters run revision " + p.rollbackTo()
	p.progressing = cond(ConditionProgressing, metav1.ConditionFalse, ReasonRevisionFailed, p.status.Message)
	for _, m := range p.members {
		m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterDone}
	}
}

// noGreen waits for a green set, saying why none could be chosen.
func (p *planner) noGreen() {
	p.mode = applyGood
	p.status.Phase = fleetv1alpha1.RolloutProgressing
	p.status.Message = "no green set for revision " + p.in.Target + ": " + p.in.BlueGreen.NoGreen
	p.progressing = cond(ConditionProgressing, metav1.ConditionUnknown, fleetv1alpha1.ReasonNoGreenClusters, p.status.Message)
	p.shift = cond(fleetv1alpha1.ConditionTrafficShifting, metav1.ConditionFalse, fleetv1alpha1.ReasonNoGreenClusters, p.status.Message)
	if p.rebased || p.prev.Message != p.status.Message {
		p.event(EventWarning, EventNoGreenClusters, p.status.Message)
	}
}

// greenNotDone says, for each green cluster not done on the target, why.
func (p *planner) greenNotDone(bg *fleetv1alpha1.BlueGreenStatus) []string {
	var out []string
	for _, name := range bg.Green {
		if !slices.ContainsFunc(p.members, func(m *member) bool { return m.Name == name }) {
			out = append(out, name+" not placed")
		}
	}
	for _, m := range p.members {
		if !slices.Contains(bg.Green, m.Name) {
			continue
		}
		switch {
		case !m.Ready:
			out = append(out, m.Name+" not Ready")
		case m.Revision != p.in.Target:
			out = append(out, m.Name+": "+Applying(p.in.Target))
		case !m.Done:
			out = append(out, m.Name+": "+m.NotDone)
		}
	}
	return out
}

// notReady are the clusters among names that are placed and not Ready.
func (p *planner) notReady(names []string) []string {
	var out []string
	for _, m := range p.members {
		if slices.Contains(names, m.Name) && !m.Ready {
			out = append(out, m.Name)
		}
	}
	return out
}

// colorPhases sets each cluster's phase and colour: green Updating until done, blue Done.
func (p *planner) colorPhases(bg *fleetv1alpha1.BlueGreenStatus) {
	p.colors = map[string]fleetv1alpha1.Color{}
	for _, m := range p.members {
		switch {
		case slices.Contains(bg.Green, m.Name):
			p.colors[m.Name] = fleetv1alpha1.ColorGreen
			if m.Revision == p.in.Target && m.Done {
				m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterDone}
			} else {
				m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterUpdating, Since: bg.StepTime.Time}
			}
		case slices.Contains(bg.Blue, m.Name):
			p.colors[m.Name] = fleetv1alpha1.ColorBlue
			m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterDone}
		}
	}
}

// progress sets the status of a rollout in flight: RolloutProgressing True, and
// TrafficShifting with the split and what it waits for.
func (p *planner) progress(bg *fleetv1alpha1.BlueGreenStatus, reason string, status metav1.ConditionStatus, what string) {
	p.status.Message = conditions.Join(p.split(bg), what)
	p.progressing = cond(ConditionProgressing, metav1.ConditionTrue, ReasonProgressing, p.status.Message)
	p.shift = cond(fleetv1alpha1.ConditionTrafficShifting, status, reason, p.status.Message)
	if !p.in.BlueGreen.Traffic {
		p.shift = cond(fleetv1alpha1.ConditionTrafficShifting, metav1.ConditionFalse, fleetv1alpha1.ReasonNoTrafficManaged,
			conditions.Join("no traffic is managed (the policy sets no traffic): green comes up, then blue leaves", what))
	}
}

// split is the traffic split in words: "blue us,eu 60% → green ap 40%".
func (p *planner) split(bg *fleetv1alpha1.BlueGreenStatus) string {
	if bg == nil {
		return "revision " + p.in.Target
	}
	return fmt.Sprintf("blue %s %d%% → green %s %d%%", strings.Join(bg.Blue, ","), 100-bg.GreenPercent,
		strings.Join(bg.Green, ","), bg.GreenPercent)
}

// leave records the clusters a BlueGreen rollout gives up.
func (p *planner) leave(clusters []string, reason fleetv1alpha1.LeaveReason) {
	if p.leaving == nil {
		p.leaving = map[string]fleetv1alpha1.LeaveReason{}
	}
	for _, name := range clusters {
		p.leaving[name] = reason
	}
}

// names is a list of cluster names in messages.
func names(clusters []string) string {
	if len(clusters) == 0 {
		return "(none)"
	}
	return strings.Join(clusters, ",")
}
