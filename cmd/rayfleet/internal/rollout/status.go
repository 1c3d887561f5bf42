package rollout

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// none is shown where a field has nothing to show.
const none = "-"

// WriteStatus prints the rollout: the revisions and phase, then one line per cluster, stage by
// stage in the order the stages started, then the placed clusters no stage has started. now
// is what the time left to soak is measured against. While a blue/green rollout is in flight
// the clusters are listed by colour instead, blue first; whenever the binding shows traffic,
// each cluster's weight and serve address are listed too.
func WriteStatus(w io.Writer, v *View, now time.Time) error {
	writeSummary(w, v, now)
	fmt.Fprintln(w)
	cols := tableColumns(v)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range clusterRows(v, now) {
		fields := make([]string, len(cols))
		for i, col := range cols {
			fields[i] = r[col]
		}
		fmt.Fprintln(tw, strings.Join(fields, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the rollout of RayService %s: %w", v.Key(), err)
	}
	return nil
}

// Columns of the cluster table.
const (
	colStage    = "STAGE"
	colColor    = "COLOR"
	colCluster  = "CLUSTER"
	colRevision = "REVISION"
	colPhase    = "PHASE"
	colSoakLeft = "SOAK LEFT"
	colWeight   = "WEIGHT"
	colAddress  = "ADDRESS"
	colReason   = "REASON"
)

// tableColumns are the cluster table's columns: by stage, with the soak left; by colour instead
// while a blue/green rollout is in flight (its clusters do not soak); with each cluster's
// weight and serve address when the binding shows traffic.
func tableColumns(v *View) []string {
	cols := []string{colStage, colCluster, colRevision, colPhase, colSoakLeft}
	if v.blueGreen() != nil {
		cols = []string{colColor, colCluster, colRevision, colPhase}
	}
	if v.blueGreen() != nil || v.routed() {
		cols = append(cols, colWeight, colAddress)
	}
	return append(cols, colReason)
}

// writeSummary prints the lines above the cluster table.
func writeSummary(w io.Writer, v *View, now time.Time) {
	fmt.Fprintf(w, "RayService %s\n", v.Key())
	ro := v.Rollout()
	if ro == nil {
		fmt.Fprintln(w, "Phase:     - (the hub has recorded no rollout yet)")
	} else {
		fmt.Fprintf(w, "Phase:     %s\n", phaseLine(ro))
		fmt.Fprintf(w, "Target:    %s\n", v.revisionLabel(ro.TargetRevision))
		if ro.BaselineRevision != "" {
			fmt.Fprintf(w, "Baseline:  %s\n", v.revisionLabel(ro.BaselineRevision))
		}
		good := v.revisionLabel(ro.GoodRevision)
		if ro.GoodRevision == "" && ro.BaselineRevision != "" {
			good = "none yet (undo and rollback return to the baseline until a revision soaks on every cluster)"
		}
		fmt.Fprintf(w, "Good:      %s\n", good)
		fmt.Fprintf(w, "Failed:    %s\n", v.revisionLabel(ro.FailedRevision))
		if ro.StartTime != nil {
			fmt.Fprintf(w, "Started:   %s ago\n", duration.HumanDuration(now.Sub(ro.StartTime.Time)))
		}
		if ro.CompletionTime != nil {
			fmt.Fprintf(w, "Completed: %s ago\n", duration.HumanDuration(now.Sub(ro.CompletionTime.Time)))
		}
		if ro.Message != "" {
			fmt.Fprintf(w, "Message:   %s\n", ro.Message)
		}
		if !v.TargetIsCurrent() {
			fmt.Fprintln(w, "Note:      the target is not the RayService's current spec: the hub has not made a revision of it yet")
		}
	}
	writeTraffic(w, v, now)
	if v.Service.Annotations[labels.Paused] == "true" {
		fmt.Fprintf(w, "Paused:    yes (%s=true): no cluster starts until 'rayfleet rollout resume'\n", labels.Paused)
	}
	if v.PolicyMissing {
		fmt.Fprintf(w, "Note:      PlacementPolicy %s not found: soak times shown with the default %ds\n",
			v.Binding.Spec.PolicyName, fleetv1alpha1.DefaultSoakSeconds)
	}
}

// phaseLine is the phase, with the current stage and how many clusters are updated.
func phaseLine(ro *fleetv1alpha1.RolloutStatus) string {
	phase := string(ro.Phase)
	if phase == "" {
		phase = none
	}
	var details []string
	if ro.Stage != "" {
		details = append(details, "stage "+ro.Stage)
	}
	if ro.Updated != "" {
		details = append(details, ro.Updated+" updated")
	}
	if len(details) == 0 {
		return phase
	}
	return phase + " (" + strings.Join(details, ", ") + ")"
}

// revisionLabel names a revision by number and name, or by name only when the revision is not
// among the ControllerRevisions read.
func (v *View) revisionLabel(name string) string {
	if name == "" {
		return none
	}
	if r := v.Revisions.Get(name); r != nil {
		return fmt.Sprintf("revision %d (%s)", r.Revision, name)
	}
	return name
}

// revisionShort names a revision by number when known, else by name.
func (v *View) revisionShort(name string) string {
	if name == "" {
		return none
	}
	if r := v.Revisions.Get(name); r != nil {
		return fmt.Sprint(r.Revision)
	}
	return name
}

// clusterRows lists the clusters in table order: while a blue/green rollout is in flight, blue
// then green as it lists them; otherwise the clusters of the started stages in their recorded
// order. Then the other placed clusters, then clusters no longer placed that still run a copy,
// each group after the first by name.
func clusterRows(v *View, now time.Time) []map[string]string {
	statuses := make(map[string]*fleetv1alpha1.ClusterStatus, len(v.Binding.Status.Clusters))
	for i := range v.Binding.Status.Clusters {
		statuses[v.Binding.Status.Clusters[i].Name] = &v.Binding.Status.Clusters[i]
	}
	var rows []map[string]string
	listed := map[string]bool{}
	add := func(stage, name string) {
		if !listed[name] {
			listed[name] = true
			rows = append(rows, clusterRow(v, stage, name, statuses[name], now))
		}
	}
	if bg := v.blueGreen(); bg != nil {
		for _, name := range slices.Concat(bg.Blue, bg.Green) {
			add(none, name)
		}
	} else if ro := v.Rollout(); ro != nil {
		for _, stage := range ro.Stages {
			for _, name := range stage.Clusters {
				add(stage.Name, name)
			}
		}
	}
	placed := slices.Sorted(slices.Values(v.Binding.Spec.Clusters))
	var leaving []string
	for name := range statuses {
		if !slices.Contains(placed, name) {
			leaving = append(leaving, name)
		}
	}
	slices.Sort(leaving)
	for _, name := range slices.Concat(placed, leaving) {
		add(none, name)
	}
	return rows
}

// clusterRow is one cluster, by column: the revision its copy carries, its rollout phase, the
// time left to soak, the member's reason for its Ready condition, its colour, weight and serve
// address. cs is nil until the hub has seen the copy.
func clusterRow(v *View, stage, name string, cs *fleetv1alpha1.ClusterStatus, now time.Time) map[string]string {
	row := map[string]string{
		colStage: stage, colCluster: name, colColor: colorOf(v.blueGreen(), name, cs),
		colRevision: none, colPhase: none, colSoakLeft: none, colWeight: none, colAddress: none, colReason: none,
	}
	if cs == nil {
		return row
	}
	row[colRevision] = v.revisionShort(cs.Revision)
	if cs.RolloutPhase != "" {
		row[colPhase] = string(cs.RolloutPhase)
	}
	if cs.RolloutPhase == fleetv1alpha1.ClusterSoaking && cs.PhaseTime != nil {
		left := cs.PhaseTime.Add(v.soak(stage)).Sub(now)
		row[colSoakLeft] = duration.HumanDuration(max(left, 0))
	}
	if c := meta.FindStatusCondition(cs.Conditions, string(rayv1.RayServiceReady)); c != nil && c.Reason != "" {
		row[colReason] = c.Reason
	}
	row[colWeight] = percent(cs.Weight)
	if cs.ServeAddress != "" {
		row[colAddress] = cs.ServeAddress
	}
	return row
}
