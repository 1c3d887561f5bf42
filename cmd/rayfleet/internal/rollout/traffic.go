package rollout

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// blueGreen is the BlueGreen rollout in flight; nil when none is.
func (v *View) blueGreen() *fleetv1alpha1.BlueGreenStatus {
	if ro := v.Rollout(); ro != nil {
		return ro.BlueGreen
	}
	return nil
}

// isBlueGreen says whether the rollout goes blue/green: one is in flight, the policy asks for
// it, or (the policy gone) the rollout awaits one of the approvals only BlueGreen asks for.
func (v *View) isBlueGreen() bool {
	if v.blueGreen() != nil {
		return true
	}
	if v.Policy != nil {
		return v.Policy.Spec.Rollout != nil && v.Policy.Spec.Rollout.Type == fleetv1alpha1.RolloutBlueGreen
	}
	ro := v.Rollout()
	return ro != nil && ro.Phase == fleetv1alpha1.RolloutAwaitingApproval && len(ro.Stages) == 0 &&
		(ro.Stage == fleetv1alpha1.BlueGreenShiftStage || ro.Stage == fleetv1alpha1.BlueGreenPromoteStage)
}

// routed says whether the binding shows traffic per cluster: a weight, a serve address or a
// colour on any of them.
func (v *View) routed() bool {
	for _, cs := range v.Binding.Status.Clusters {
		if cs.Weight != nil || cs.ServeAddress != "" || cs.Color != "" {
			return true
		}
	}
	return false
}

// trafficCondition is the hub RayService's TrafficShifting condition; nil when the hub sets
// none (the policy neither manages traffic nor rolls out BlueGreen).
func (v *View) trafficCondition() *metav1.Condition {
	return meta.FindStatusCondition(v.Service.Status.Conditions, fleetv1alpha1.ConditionTrafficShifting)
}

// writeTraffic prints the blue/green lines (step, green's share, the clusters of each colour)
// and the hub RayService's TrafficShifting condition, each when there is one. The condition's
// message is left out when it says what the rollout's message says already.
func writeTraffic(w io.Writer, v *View, now time.Time) {
	if bg := v.blueGreen(); bg != nil {
		fmt.Fprintf(w, "Step:      %s\n", stepLine(bg, now))
		fmt.Fprintf(w, "Blue:      %s\n", clusterList(bg.Blue))
		fmt.Fprintf(w, "Green:     %s\n", clusterList(bg.Green))
	}
	c := v.trafficCondition()
	if c == nil {
		return
	}
	line := fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason)
	if ro := v.Rollout(); c.Message != "" && (ro == nil || c.Message != ro.Message) {
		line += ": " + c.Message
	}
	fmt.Fprintf(w, "Traffic:   %s\n", line)
}

// stepLine is the blue/green step, how long it has lasted, green's share of the traffic and,
// once traffic moves, whether the gateway accepted the route carrying that share.
func stepLine(bg *fleetv1alpha1.BlueGreenStatus, now time.Time) string {
	line := string(bg.Step)
	if bg.StepTime != nil {
		line += " for " + duration.HumanDuration(max(now.Sub(bg.StepTime.Time), 0))
	}
	details := []string{fmt.Sprintf("green %d%%", bg.GreenPercent)}
	switch {
	case bg.Step == fleetv1alpha1.BlueGreenDeploying:
	case bg.Accepted:
		details = append(details, "the gateway accepted the route")
	default:
		details = append(details, "waiting for the gateway to accept the route")
	}
	return line + " (" + strings.Join(details, ", ") + ")"
}

// clusterList is a list of cluster names on one line.
func clusterList(clusters []string) string {
	if len(clusters) == 0 {
		return none
	}
	return strings.Join(clusters, ",")
}

// percent is a weight of the 10000 an HTTPRoute's backends share as a percentage: 4000 is "40%", 3333 is "33.33%", 3350 is
// "33.5%"; nil (no traffic managed) is none.
func percent(w *int32) string {
	if w == nil {
		return none
	}
	// A hundredth of a percent is one in fullWeight.
	whole, frac := *w/100, *w%100
	if frac == 0 {
		return fmt.Sprintf("%d%%", whole)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%02d", whole, frac), "0") + "%"
}

// colorOf is a cluster's colour as the binding records it, else as the blue/green rollout
// lists it.
func colorOf(bg *fleetv1alpha1.BlueGreenStatus, name string, cs *fleetv1alpha1.ClusterStatus) string {
	switch {
	case cs != nil && cs.Color != "":
		return string(cs.Color)
	case bg == nil:
		return none
	}
	for _, c := range []struct {
		color    fleetv1alpha1.Color
		clusters []string
	}{{fleetv1alpha1.ColorBlue, bg.Blue}, {fleetv1alpha1.ColorGreen, bg.Green}} {
		for _, n := range c.clusters {
			if n == name {
				return string(c.color)
			}
		}
	}
	return none
}
