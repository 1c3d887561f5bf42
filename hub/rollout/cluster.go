package rollout

import (
	"fmt"
	"time"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// start gives m the target: it is Updating from now.
func (p *planner) start(m *member) {
	m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterUpdating, Since: p.in.Now}
}

// advance moves m through the phases that wait for nothing but the cluster and the time:
// Updating to Soaking once done on the target (Failed past the deadline or when blocked),
// Soaking back to Updating when it stops being done and to Done after the soak, a Failed
// cluster that became done back to Soaking, and an in-flight Pending cluster out of flight
// once it finished. deadlines is false while the rollout is paused: that time does not count.
func (p *planner) advance(m *member, deadlines bool) {
	for p.step(m, deadlines) {
	}
}

// step makes one transition of m and reports whether another may follow at once.
func (p *planner) step(m *member, deadlines bool) bool {
	ph := m.phase
	now := p.in.Now
	onTarget := m.Revision == p.in.Target
	done := onTarget && m.Done
	deadline := p.in.Strategy.Deadline
	switch ph.Phase {
	case fleetv1alpha1.ClusterPending:
		return p.pending(m, deadlines)
	case fleetv1alpha1.ClusterUpdating:
		switch {
		case done:
			m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterSoaking, Since: now, Started: ph.Since}
			return true
		case onTarget && m.Blocked, deadlines && now.Sub(ph.Since) >= deadline:
			p.fail(m)
		case deadlines:
			p.requeueIn(ph.Since.Add(deadline).Sub(now))
		}
	case fleetv1alpha1.ClusterSoaking:
		if !done {
			// The update resumes where it started, so a flapping cluster still meets its deadline.
			m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterUpdating, Since: ph.Started}
			if ph.Started.IsZero() {
				m.phase.Since = ph.Since
			}
			return true
		}
		if left := ph.Since.Add(p.soakOf(m)).Sub(now); left > 0 {
			p.requeueIn(left)
			return false
		}
		m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterDone, Since: now}
		p.clusterEvent(EventNormal, EventClusterDone, m.Name, fmt.Sprintf("cluster %s is done on revision %s", m.Name, p.in.Target))
	case fleetv1alpha1.ClusterFailed:
		if done && !m.Blocked {
			// Late, but done: it soaks like any other, and the rollout moves again.
			m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterSoaking, Since: now}
			return true
		}
	}
	return false
}

// pending handles a cluster not started on the target. A newly placed cluster gets the good
// revision and is in flight until it is done with it; one already on the target when the
// target is the good revision is done at once. An in-flight Pending cluster (Since set) leaves
// flight once done with what it runs, blocked on it, or a deadline old.
func (p *planner) pending(m *member, deadlines bool) bool {
	ph := &m.phase
	good := p.rollbackTo()
	switch {
	case m.Revision == "" && p.in.Target == good:
		p.start(m)
		return true
	case m.Revision == p.in.Target && p.in.Target == p.status.GoodRevision:
		// Only a soaked revision is done at once; an undo to a baseline not yet good soaks.
		m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterDone, Since: p.in.Now}
		return false
	case m.Revision == "" && ph.Since.IsZero():
		ph.Since = p.in.Now
		return false
	case ph.Since.IsZero():
		return false
	}
	left := ph.Since.Add(p.in.Strategy.Deadline).Sub(p.in.Now)
	if (m.Revision != "" && (m.Done || m.Blocked)) || (deadlines && left <= 0) {
		ph.Since = time.Time{}
		m.landed = m.Revision != good
	} else if deadlines {
		p.requeueIn(left)
	}
	return false
}

// fail marks m Failed: it missed the progress deadline or can never run the target.
func (p *planner) fail(m *member) {
	m.phase = ClusterPhase{Phase: fleetv1alpha1.ClusterFailed, Since: p.in.Now}
	p.clusterEvent(EventWarning, EventRolloutStalled, m.Name, p.failureText(m))
}

// failureText says why m failed, in the member's words.
func (p *planner) failureText(m *member) string {
	if m.Revision == p.in.Target && m.Blocked {
		return fmt.Sprintf("cluster %s can never run revision %s: %s", m.Name, p.in.Target, m.NotDone)
	}
	why := m.NotDone
	if m.Revision != p.in.Target {
		why = Applying(p.in.Target)
	}
	if why == "" {
		why = "not done"
	}
	return fmt.Sprintf("cluster %s not done on revision %s within %s: %s", m.Name, p.in.Target, p.in.Strategy.Deadline, why)
}

// inFlight reports whether m takes a place in its stage's concurrency: updating, soaking, or
// still finishing the revision it runs.
func inFlight(m *member) bool {
	switch m.phase.Phase {
	case fleetv1alpha1.ClusterUpdating, fleetv1alpha1.ClusterSoaking:
		return true
	case fleetv1alpha1.ClusterPending:
		return !m.phase.Since.IsZero()
	}
	return false
}

// soakOf is how long m soaks: its stage's soak, else the rollout's.
func (p *planner) soakOf(m *member) time.Duration {
	if m.stage != nil && m.stage.def.Soak != nil {
		return *m.stage.def.Soak
	}
	return p.in.Strategy.Soak
}
