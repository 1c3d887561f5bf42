package rollout

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// capacityPoll is how soon a capacity step that waits for replicas is decided again: the
// running replicas come from the members' reports, and the poll bounds how late the hub
// notices one it was not woken for.
const capacityPoll = 5 * time.Second

// capacityOn reports whether the rollout's capacity follows its traffic: the policy asks for
// it, and there is a traffic split for it to follow.
func (p *planner) capacityOn() bool {
	return p.in.Strategy.BlueGreen.Capacity && p.in.BlueGreen.Traffic
}

// startCapacity gives a green that starts its surge beside the whole of blue.
func (p *planner) startCapacity(bg *fleetv1alpha1.BlueGreenStatus) {
	if !p.capacityOn() {
		return
	}
	bg.Capacity = &fleetv1alpha1.BlueGreenCapacityStatus{Direction: fleetv1alpha1.CapacityForward,
		Green: min(max(p.in.Strategy.BlueGreen.Surge, 1), 100), Blue: 100}
}

// followCapacity starts or stops the capacity following of a rollout in flight whose policy
// changed; false when stopping it ended the rollout (a move back to blue finishes at once).
func (p *planner) followCapacity(bg *fleetv1alpha1.BlueGreenStatus) bool {
	switch {
	case p.capacityOn() && bg.Capacity == nil:
		// Both colours run their whole sets: the first step brings them within the bound.
		bg.Capacity = &fleetv1alpha1.BlueGreenCapacityStatus{Direction: fleetv1alpha1.CapacityForward, Green: 100, Blue: 100}
	case !p.capacityOn() && bg.Capacity != nil && bg.Capacity.Direction != fleetv1alpha1.CapacityForward:
		p.revert(bg, p.in.Target != p.rollbackTo(), "capacity no longer follows the traffic, so it goes back to blue at once")
		return false
	case !p.capacityOn():
		bg.Capacity = nil
	}
	return true
}

// blueOverload says, when a capacity-following rollout gives blue all of the traffic at once,
// how much of its set blue runs to take it; "" when it runs all of it or capacity does not
// follow the traffic.
func (p *planner) blueOverload() string {
	if !p.capacityOn() || percent(p.in.BlueGreen.BlueRunning) >= 100 {
		return ""
	}
	return fmt.Sprintf("; blue serves all of it on %d%% of its capacity while it grows back", percent(p.in.BlueGreen.BlueRunning))
}

// capacityInput is the capacity step's input: the targets the binding recorded, the share the
// gateway serves, the running shares the members report.
func (p *planner) capacityInput(bg *fleetv1alpha1.BlueGreenStatus) CapacityInput {
	s := p.in.Strategy
	return CapacityInput{
		Direction:      bg.Capacity.Direction,
		SurgePercent:   s.BlueGreen.Surge,
		StepPercent:    s.BlueGreen.Step,
		GreenWeight:    bg.GreenPercent,
		Green:          ColorCapacity{Target: bg.Capacity.Green, Running: p.in.BlueGreen.GreenRunning},
		Blue:           ColorCapacity{Target: bg.Capacity.Blue, Running: p.in.BlueGreen.BlueRunning},
		DeadlinePassed: !p.in.Now.Before(bg.StepTime.Add(s.Deadline)),
	}
}

// recordCapacity keeps a step's targets in the status, which the executor applies and the next
// decision starts from.
func (p *planner) recordCapacity(bg *fleetv1alpha1.BlueGreenStatus, st CapacityStep) {
	bg.Capacity = &fleetv1alpha1.BlueGreenCapacityStatus{Direction: st.Direction, Green: st.Green, Blue: st.Blue}
}

// capacityForward takes a step of a capacity-following shift from the share the gateway
// accepted: the targets move at once (green grows ahead of its weight while the interval
// runs), the traffic once the interval is over (next; zero for the first step) and only as far
// as green runs. A green that cannot grow within the deadline turns the rollout back.
func (p *planner) capacityForward(bg *fleetv1alpha1.BlueGreenStatus, next time.Time) {
	st := PlanCapacity(p.capacityInput(bg))
	if st.Direction != fleetv1alpha1.CapacityForward {
		// The way back has its own deadline, from now.
		bg.StepTime = p.metaNow()
		p.event(EventWarning, EventRolloutStalled, "revision "+p.in.Target+": "+st.Message)
		p.stepBack(bg, st)
		return
	}
	p.recordCapacity(bg, st)
	switch {
	case p.in.Now.Before(next):
		p.requeueIn(next.Sub(p.in.Now))
		if st.Wait != "" {
			p.requeueIn(capacityPoll)
		}
		// The step's own message would name a share that is not admitted before next.
		p.progress(bg, fleetv1alpha1.ReasonShifting, metav1.ConditionTrue, fmt.Sprintf("next step at %s; capacity green %d%% (%d%% runs), blue %d%% (%d%% runs)",
			clock(next), st.Green, percent(p.in.BlueGreen.GreenRunning), st.Blue, percent(p.in.BlueGreen.BlueRunning)))
	case st.GreenWeight > bg.GreenPercent:
		p.shiftTo(bg, st.GreenWeight)
	default:
		p.requeueIn(capacityPoll)
		p.progress(bg, fleetv1alpha1.ReasonCapacityWaiting, metav1.ConditionTrue, st.Message)
	}
}

// startUndo turns a capacity-following rollout back when its target is blue's revision again:
// blue grows back first, then the traffic follows it step by step.
func (p *planner) startUndo(bg *fleetv1alpha1.BlueGreenStatus) {
	if bg.Capacity.Direction != fleetv1alpha1.CapacityForward {
		return // already on its way back
	}
	bg.Capacity.Direction = fleetv1alpha1.CapacityUndo
	// The way back has its own deadline, from now.
	bg.Step, bg.StepTime = fleetv1alpha1.BlueGreenShifting, p.metaNow()
	p.event(EventNormal, EventTrafficShifted, fmt.Sprintf("revision %s again (undo): blue %s grows back, then the traffic returns to it step by step",
		p.in.Target, names(bg.Blue)))
}

// capacityBack moves a capacity-following rollout back to blue: step by step after an undo
// (once the gateway serves each share), all of the traffic at once after a failure.
func (p *planner) capacityBack(bg *fleetv1alpha1.BlueGreenStatus) {
	p.greenKeeps = true
	// A green cluster that fails meanwhile loses its share to blue in the weights already; the
	// undo goes on, and reverts only if blue cannot take the traffic back within the deadline
	// (a green resized in place may not be done for a while without failing).
	if bg.Capacity.Direction == fleetv1alpha1.CapacityUndo {
		if !bg.Accepted {
			if !p.in.BlueGreen.Accepted {
				p.requeueIn(acceptPoll)
				p.progress(bg, fleetv1alpha1.ReasonShiftPaused, metav1.ConditionTrue,
					fmt.Sprintf("undo: waiting for the gateway to accept the route giving green %d%%", bg.GreenPercent))
				return
			}
			bg.Accepted, bg.StepTime = true, p.metaNow()
		}
	}
	st := PlanCapacity(p.capacityInput(bg))
	if bg.Capacity.Direction == fleetv1alpha1.CapacityUndo && st.Direction == fleetv1alpha1.CapacityRevert {
		p.toRevert(bg, fmt.Sprintf("blue did not grow back within %s", p.in.Strategy.Deadline))
		return
	}
	p.stepBack(bg, st)
}

// toRevert gives blue all of the traffic at once and its whole set back, because green
// failed; green leaves once blue runs its set. The Event states the overload blue takes.
func (p *planner) toRevert(bg *fleetv1alpha1.BlueGreenStatus, why string) {
	p.greenKeeps = true
	bg.Capacity.Direction = fleetv1alpha1.CapacityRevert
	bg.Step, bg.GreenPercent, bg.Accepted, bg.StepTime = fleetv1alpha1.BlueGreenShifting, 0, false, p.metaNow()
	st := PlanCapacity(p.capacityInput(bg))
	msg := fmt.Sprintf("traffic back on blue %s at once: %s; %s", names(bg.Blue), why, st.Message)
	if p.in.Target != p.rollbackTo() {
		p.status.FailedRevision = p.in.Target
		p.event(EventWarning, EventTrafficReverted, "revision "+p.in.Target+" failed: "+msg)
	} else {
		p.event(EventWarning, EventTrafficReverted, msg)
	}
	p.stepBack(bg, st)
}

// stepBack carries out a step back to blue: the targets, the traffic when it moved back, the
// end once blue holds the traffic on its whole set (or, reverting, past the deadline: green
// serves nothing by then and only holds the room blue grows into).
func (p *planner) stepBack(bg *fleetv1alpha1.BlueGreenStatus, st CapacityStep) {
	p.recordCapacity(bg, st)
	failed := p.in.Target != p.rollbackTo()
	reverting := st.Direction == fleetv1alpha1.CapacityRevert
	switch {
	case st.Done && reverting:
		p.revert(bg, failed, "blue runs its whole set again")
		return
	case st.Done:
		p.revert(bg, failed, "undone step by step; blue runs its whole set again")
		return
	case reverting && !p.in.Now.Before(bg.StepTime.Add(p.in.Strategy.Deadline)):
		p.revert(bg, failed, fmt.Sprintf("blue did not grow back within %s: %s", p.in.Strategy.Deadline, st.Message))
		return
	}
	switch {
	case reverting:
		p.requeueIn(min(capacityPoll, bg.StepTime.Add(p.in.Strategy.Deadline).Sub(p.in.Now)))
		p.status.Phase = fleetv1alpha1.RolloutRollingBack
		p.status.Message = conditions.Join(p.split(bg), st.Message)
		p.progressing = cond(ConditionProgressing, metav1.ConditionFalse, ReasonRollingBack, p.status.Message)
		p.shift = cond(fleetv1alpha1.ConditionTrafficShifting, metav1.ConditionFalse, fleetv1alpha1.ReasonShiftReverted, p.status.Message)
	case st.GreenWeight < bg.GreenPercent:
		bg.GreenPercent, bg.Accepted, bg.StepTime = st.GreenWeight, false, p.metaNow()
		p.event(EventNormal, EventTrafficShifted, "undo: "+p.split(bg))
		p.requeueIn(acceptPoll)
		p.progress(bg, fleetv1alpha1.ReasonShifting, metav1.ConditionTrue, conditions.Join("undo: waiting for the gateway to accept the route", st.Message))
	default:
		p.requeueIn(capacityPoll)
		p.progress(bg, fleetv1alpha1.ReasonCapacityWaiting, metav1.ConditionTrue, st.Message)
	}
}
