package rollout

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// stalled is the status of a rollout a failed cluster stops: RolloutProgressing False, naming
// each failed cluster with the member's words; UpgradeBlocked when one of them can never run
// the target. after says what happens now.
func (p *planner) stalled(failed []*member, after string) {
	p.status.Phase = fleetv1alpha1.RolloutStalled
	reason := ReasonProgressDeadlineExceeded
	parts := make([]string, 0, len(failed)+1)
	for _, m := range failed {
		if m.Revision == p.in.Target && m.Blocked {
			reason = ReasonUpgradeBlocked
		}
		parts = append(parts, p.failureText(m))
	}
	if after != "" {
		parts = append(parts, after)
	}
	p.status.Message = conditions.Join("stalled: "+parts[0], parts[1:]...)
	p.progressing = cond(ConditionProgressing, metav1.ConditionFalse, reason, p.status.Message)
}

// startRollback marks the target failed and sends every cluster back to the rollback revision
// (the good one, or the baseline while none is good); the failed clusters keep their phase for
// the record.
func (p *planner) startRollback(failed []*member) {
	p.status.FailedRevision = p.in.Target
	causes := make([]string, len(failed))
	for i, m := range failed {
		causes[i] = p.failureText(m)
	}
	p.event(EventWarning, EventRollingBack, conditions.Join(fmt.Sprintf("rolling every cluster back to revision %s; revision %s failed",
		p.rollbackTo(), p.in.Target), causes...))
	p.stages = nil
	p.status.Stage = ""
	p.rollingBack()
}

// rollingBack is a rollback in progress or done: every cluster gets the good revision, and the
// rollout is Complete once each is done on it. The failed target is not tried again while it
// stays the target.
func (p *planner) rollingBack() {
	p.mode = applyGood
	good := p.rollbackTo()
	var failed, waiting []string
	for _, m := range p.members {
		if m.phase.Phase == fleetv1alpha1.ClusterFailed {
			failed = append(failed, m.Name)
		} else {
			m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterPending}
		}
		if m.Revision != good || !m.Done {
			waiting = append(waiting, m.Name)
		}
	}
	what := "revision " + p.in.Target + " failed"
	if len(failed) > 0 {
		what += " on " + strings.Join(failed, ", ")
	}
	was := !p.rebased && p.prev.Phase == fleetv1alpha1.RolloutComplete
	if len(waiting) > 0 && !was {
		p.status.Phase = fleetv1alpha1.RolloutRollingBack
		p.status.Message = fmt.Sprintf("rolling back to revision %s after %s: waiting for %s",
			good, what, strings.Join(waiting, ", "))
		p.progressing = cond(ConditionProgressing, metav1.ConditionFalse, ReasonRollingBack, p.status.Message)
		return
	}
	p.status.Phase = fleetv1alpha1.RolloutComplete
	p.status.Message = fmt.Sprintf("rolled back to revision %s after %s; it is not tried again until the RayService spec "+
		"or the placement policy's overrides change", good, what)
	p.progressing = cond(ConditionProgressing, metav1.ConditionFalse, ReasonRevisionFailed, p.status.Message)
	if !was || p.status.CompletionTime == nil {
		p.status.CompletionTime = p.metaNow()
	}
	if !was {
		p.event(EventWarning, EventRolledBack, fmt.Sprintf("every cluster is back on revision %s after %s", good, what))
	}
}
