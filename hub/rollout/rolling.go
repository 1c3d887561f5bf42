package rollout

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// rolling moves the fleet stage by stage: a stage starts once every cluster of the stages
// before it is done on the target, and within it at most its concurrency of clusters are in
// flight or not Ready. It loops because a cluster may be done at once (it already runs the
// target and soaks for zero), which can free a place or finish a stage within this decision.
func (p *planner) rolling() {
	var recorded []fleetv1alpha1.StageStatus
	if !p.rebased {
		recorded = p.prev.Stages
	}
	p.stages = buildStages(p.in.Strategy, p.members, recorded)
	deadlines := !p.in.Paused
	if deadlines && !p.rebased && p.prev.Phase == fleetv1alpha1.RolloutPaused {
		p.resume()
	}
	for {
		for _, m := range p.members {
			p.advance(m, deadlines)
		}
		if failed := p.failedMembers(); len(failed) > 0 {
			if failed[0].stage != nil {
				p.status.Stage = failed[0].stage.def.Name
			}
			if p.in.Strategy.AutoRollback {
				p.startRollback(failed)
			} else {
				p.stalled(failed, "nothing else starts until it is done or the target changes")
			}
			return
		}
		active := p.activeStage()
		if active == nil {
			p.complete()
			return
		}
		p.status.Stage = active.def.Name
		if active.waiting() && !p.open(active) {
			return
		}
		switch {
		case p.in.Paused:
			p.hold(active)
			return
		case !active.waiting() || p.startIn(active) == 0:
			p.moving(active)
			return
		}
	}
}

// resume restarts the deadline of the clusters in flight when a pause ends: the time the
// rollout was paused does not count against them. An approval wait needs no such care: it
// comes before a stage starts, when the stages before it are done and nothing of it is in
// flight, and resetting at every decision while it lasts would change the status each time.
func (p *planner) resume() {
	for _, m := range p.members {
		if inFlight(m) && m.phase.Phase != fleetv1alpha1.ClusterSoaking {
			m.phase.Since = p.in.Now
		}
	}
}

// activeStage is the first stage with a cluster not done on the target.
func (p *planner) activeStage() *stagePlan {
	for _, st := range p.stages {
		if !st.done() {
			return st
		}
	}
	return nil
}

// open starts st unless it has started, the rollout is paused, or it awaits an approval of the
// target; it reports whether the rollout may go on with st. A stage is opened only when it has
// a cluster waiting for its turn: a stage whose clusters are all done or in flight (newly
// placed clusters coming up on the good revision) has nothing to start or approve.
func (p *planner) open(st *stagePlan) bool {
	if st.record != nil || p.in.Paused {
		return true
	}
	approved := p.in.Approval == p.in.Target+"/"+st.def.Name
	if st.def.Approval && !approved {
		p.awaitApproval(st)
		return false
	}
	st.record = &fleetv1alpha1.StageStatus{Name: st.def.Name, StartTime: p.metaNow(), Approved: st.def.Approval}
	p.event(EventNormal, EventStageStarted, fmt.Sprintf("stage %s started for revision %s, %d at a time: %s",
		st.def.Name, p.in.Target, st.concurrency, strings.Join(st.names(), ", ")))
	return true
}

// awaitApproval holds the rollout before st until the target's approval of st.
func (p *planner) awaitApproval(st *stagePlan) {
	again := !p.rebased && p.prev.Phase == fleetv1alpha1.RolloutAwaitingApproval && p.prev.Stage == st.def.Name
	p.status.Phase = fleetv1alpha1.RolloutAwaitingApproval
	p.status.Message = fmt.Sprintf("stage %s awaits approval of revision %s: run `rayfleet rollout approve`, "+
		"or annotate the RayServiceBinding %s=%s/%s", st.def.Name, p.in.Target, labels.ApprovedStage, p.in.Target, st.def.Name)
	if p.in.Approval != "" {
		p.status.Message += fmt.Sprintf(" (the approval %q is for another revision or stage)", p.in.Approval)
	}
	p.progressing = cond(ConditionProgressing, metav1.ConditionUnknown, ReasonAwaitingApproval, p.status.Message)
	c := cond(ConditionPaused, metav1.ConditionTrue, ReasonAwaitingApproval, p.status.Message)
	p.paused = &c
	if !again {
		p.event(EventNormal, EventAwaitingApproval, p.status.Message)
	}
}

// startIn gives the target to as many clusters of st as its concurrency leaves room for;
// clusters in flight and clusters not Ready take the room. Clusters that just finished a
// superseded target go first, then the others in the stage's order. It returns how many
// started.
func (p *planner) startIn(st *stagePlan) int {
	room := st.concurrency
	for _, m := range st.members {
		if inFlight(m) || !m.Ready {
			room--
		}
	}
	started := 0
	for _, landedFirst := range []bool{true, false} {
		for _, m := range st.members {
			if room <= 0 {
				return started
			}
			if m.landed == landedFirst && m.phase.Phase == fleetv1alpha1.ClusterPending && !inFlight(m) && m.Ready {
				p.start(m)
				room--
				started++
			}
		}
	}
	return started
}

// moving is the status of a rollout with clusters in flight or waiting for room.
func (p *planner) moving(st *stagePlan) {
	p.status.Phase = fleetv1alpha1.RolloutProgressing
	p.status.Message = p.stageText(st)
	p.progressing = cond(ConditionProgressing, metav1.ConditionTrue, ReasonProgressing, p.status.Message)
}

// hold is the status of a paused rollout: what is in flight goes on, nothing starts.
func (p *planner) hold(st *stagePlan) {
	p.status.Phase = fleetv1alpha1.RolloutPaused
	p.status.Message = "paused, no cluster starts; " + p.stageText(st)
	p.progressing = cond(ConditionProgressing, metav1.ConditionUnknown, ReasonPaused, p.status.Message)
}

// stageText says what st waits for and what comes next:
// "stage eu: us-east soaking 20s more; next: stage rest (approval)".
func (p *planner) stageText(st *stagePlan) string {
	head := "stage " + st.def.Name
	switch {
	case st.record != nil || !st.waiting():
	case st.def.Approval:
		head += " (not started, needs approval)"
	default:
		head += " (not started)"
	}
	parts := p.describe(st.members)
	if len(parts) == 0 {
		parts = []string{"waiting"}
	}
	msg := conditions.Join(head+": "+parts[0], parts[1:]...)
	for i, s := range p.stages {
		if s == st && i+1 < len(p.stages) {
			next := p.stages[i+1]
			msg += "; next: stage " + next.def.Name
			if next.def.Approval && next.record == nil {
				msg += " (approval)"
			}
		}
	}
	return msg
}
