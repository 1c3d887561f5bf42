package rollout

import (
	"fmt"
	"time"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// describe says, for each of ms that the rollout waits on, what it waits for, in order, and
// how many wait for their turn: "us-east soaking until 2026-11-24T10:02:33Z", "eu-west updating
// (deadline 2026-11-24T10:12:03Z): application app is DEPLOYING", "ap-south not Ready", "2
// waiting for their turn".
func (p *planner) describe(ms []*member) []string {
	var parts []string
	waiting := 0
	for _, m := range ms {
		s := p.memberText(m)
		switch {
		case s != "":
			parts = append(parts, s)
		case m.phase.Phase == fleetv1alpha1.ClusterPending:
			waiting++
		}
	}
	switch {
	case waiting == 1:
		parts = append(parts, "1 waiting for its turn")
	case waiting > 1:
		parts = append(parts, fmt.Sprintf("%d waiting for their turn", waiting))
	}
	return parts
}

// memberText is what the rollout waits for on m; "" for a cluster done, or waiting for its
// turn.
func (p *planner) memberText(m *member) string {
	ph := m.phase
	var s string
	switch ph.Phase {
	case fleetv1alpha1.ClusterUpdating:
		s = fmt.Sprintf("%s updating (deadline %s)", m.Name, clock(ph.Since.Add(p.in.Strategy.Deadline)))
		switch {
		case m.Revision != p.in.Target:
			s += ": " + Applying(p.in.Target)
		case m.NotDone != "":
			s += ": " + m.NotDone
		}
	case fleetv1alpha1.ClusterSoaking:
		s = fmt.Sprintf("%s soaking until %s", m.Name, clock(ph.Since.Add(p.soakOf(m))))
	case fleetv1alpha1.ClusterFailed:
		s = p.failureText(m)
	case fleetv1alpha1.ClusterPending:
		if ph.Since.IsZero() {
			break
		}
		rev := m.Revision
		if rev == "" {
			rev = p.rollbackTo()
		}
		s = fmt.Sprintf("%s finishing revision %s first", m.Name, rev)
		if m.NotDone != "" {
			s += ": " + m.NotDone
		}
	}
	if !m.Ready {
		if s == "" {
			return m.Name + " not Ready"
		}
		s += " (not Ready)"
	}
	return s
}

// clock is t as messages give it. Messages name instants, not durations from now: a message
// that changed with every reconcile would rewrite the binding every time.
func clock(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Applying is what a rollout waits for while revision rev travels to a member: the copy does
// not carry it yet, or carries it and the member has not observed it yet. Both read the same,
// so that the copy arriving (a watch event a few milliseconds after the hub applied it) does not
// rewrite the binding and the hub RayService for a message only; how long the member takes shows
// in the progress deadline, and why in its MemberCluster's conditions.
func Applying(rev string) string {
	return "revision " + rev + " is being applied"
}
