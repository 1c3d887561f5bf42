package rollout

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"
)

// WriteHistory prints the RayService's revisions, oldest first: number, name, age, whether the
// rollout targets it, last ran it everywhere (good) or rolled back from it (failed), and the
// clusters whose copy carries it.
func WriteHistory(w io.Writer, v *View, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tNAME\tCREATED\tROLLOUT\tCLUSTERS")
	for i := range v.Revisions {
		r := &v.Revisions[i]
		created := duration.HumanDuration(now.Sub(r.CreationTimestamp.Time)) + " ago"
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", r.Revision, r.Name, created, v.marks(r.Name), v.runningOn(r.Name))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing the history of RayService %s: %w", v.Key(), err)
	}
	if len(v.Revisions) == 0 {
		fmt.Fprintf(w, "RayService %s has no revisions yet: the hub makes one when it first places it\n", v.Key())
	}
	return nil
}

// marks says which of the rollout's revisions name is: target, good, failed, or several.
func (v *View) marks(name string) string {
	ro := v.Rollout()
	if ro == nil {
		return none
	}
	var marks []string
	for _, m := range []struct{ mark, revision string }{
		{"target", ro.TargetRevision}, {"baseline", ro.BaselineRevision}, {"good", ro.GoodRevision}, {"failed", ro.FailedRevision},
	} {
		if m.revision == name {
			marks = append(marks, m.mark)
		}
	}
	if len(marks) == 0 {
		return none
	}
	return strings.Join(marks, ",")
}

// runningOn lists, by name, the clusters whose copy carries revision name.
func (v *View) runningOn(name string) string {
	var clusters []string
	for _, cs := range v.Binding.Status.Clusters {
		if cs.Revision == name {
			clusters = append(clusters, cs.Name)
		}
	}
	if len(clusters) == 0 {
		return none
	}
	slices.Sort(clusters)
	return strings.Join(clusters, ",")
}

// WriteRevision prints revision n's content (the spec and the policy's overrides) as YAML,
// after a comment naming it.
func WriteRevision(w io.Writer, v *View, n int64) error {
	r, err := v.Revision(n)
	if err != nil {
		return err
	}
	out, err := yaml.JSONToYAML(r.Data.Raw)
	if err != nil {
		return fmt.Errorf("converting ControllerRevision %s/%s to YAML: %w", v.Service.Namespace, r.Name, err)
	}
	header := fmt.Sprintf("# RayService %s, revision %d: ControllerRevision %s", v.Key(), n, r.Name)
	if marks := v.marks(r.Name); marks != none {
		header += " (" + marks + ")"
	}
	if _, err := fmt.Fprintf(w, "%s\n%s", header, out); err != nil {
		return fmt.Errorf("writing revision %d of RayService %s: %w", n, v.Key(), err)
	}
	return nil
}

// Revision is revision n; an error lists the revisions there are.
func (v *View) Revision(n int64) (*appsv1.ControllerRevision, error) {
	r := v.Revisions.ByNumber(n)
	if r == nil {
		return nil, fmt.Errorf("RayService %s has no revision %d (%s)", v.Key(), n, v.numbers())
	}
	return r, nil
}

// numbers lists the revision numbers there are, for an error naming one that is not.
func (v *View) numbers() string {
	if len(v.Revisions) == 0 {
		return "it has none yet"
	}
	nums := make([]string, len(v.Revisions))
	for i, r := range v.Revisions {
		nums[i] = fmt.Sprint(r.Revision)
	}
	return "it has " + strings.Join(nums, ", ")
}
