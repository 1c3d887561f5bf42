package placement

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// Reasons a member is filtered out, as they appear in Decision.Rejected and the message.
const (
	reasonNotReady  = "not ready"
	reasonDuplicate = "duplicate member name"
	reasonNotNamed  = "not in the policy's cluster names"
	reasonRefused   = "refused this RayService: "
	// reasonPodSecurity starts "Pod Security level baseline enforced, the Pods need
	// privileged: headGroupSpec: privileged (...)".
	reasonPodSecurity = "Pod Security level "
)

// candidate is a member that passed every filter, with what scoring needs.
type candidate struct {
	member *Member
	// current is whether the RayService runs there now.
	current bool
	// free is the member's free capacity plus what the RayService's copy there already holds.
	free corev1.ResourceList
	// preferAvoid counts the untolerated PreferNoSchedule taints.
	preferAvoid int
}

// filter returns the candidate for m, or the reason m cannot take the RayService. The checks
// run from the coarsest to the most specific, and the first failure is the reason, as in the
// scheduler; capacity lists every resource that is short.
func filter(m *Member, in *Input, names map[string]bool, asked []corev1.ResourceName, current bool) (*candidate, string) {
	if why, ungranted := in.Ungranted[m.Name]; ungranted && !current {
		return nil, why
	}
	if !m.Ready {
		if m.NotReadyReason != "" {
			return nil, m.NotReadyReason
		}
		return nil, reasonNotReady
	}
	if until, waiting := readmitting(m, &in.Policy, in.Now, current); waiting {
		return nil, fmt.Sprintf("readmitting: Ready again since %s, new work from %s",
			m.ReadmittedAt.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	}
	if len(names) > 0 && !names[m.Name] {
		return nil, reasonNotNamed
	}
	if why, refused := in.Refused[m.Name]; refused {
		return nil, reasonRefused + why
	}
	if sel := in.Policy.Selector; sel != nil && !sel.Matches(labels.Set(m.Labels)) {
		return nil, fmt.Sprintf("labels do not match selector %q", sel.String())
	}
	preferAvoid, blocking := checkTaints(m.Taints, in.Policy.Tolerations, current)
	if blocking != nil {
		return nil, "untolerated taint " + blocking.ToString()
	}
	if why := podSecurityShort(m, &in.PodSecurity, current); why != "" {
		return nil, why
	}
	free := m.Free
	if current {
		free = plus(m.Free, in.Held[m.Name])
	}
	if short := shortages(in.Demand, asked, free); short != "" {
		if in.DemandFor != "" {
			short += " for " + in.DemandFor
		}
		return nil, short
	}
	return &candidate{member: m, current: current, free: free, preferAvoid: preferAvoid}, ""
}

// podSecurityShort says why m's Pod Security level keeps the RayService off it, "" when it
// does not: the member enforces a level the Pods break, which its API server would answer by
// refusing every Pod. A member the RayService runs on keeps it, as with a NoSchedule taint: its
// copy predates the level (see the hub's namespace labelling), and a spec the member no longer
// admits is refused by its guard, which Input.Refused carries.
func podSecurityShort(m *Member, need *podsecurity.Need, current bool) string {
	if current || m.PodSecurityLevel == "" || need.Level == "" || podsecurity.Allows(m.PodSecurityLevel, need.Level) {
		return ""
	}
	why := fmt.Sprintf("%s%s enforced, the Pods need %s", reasonPodSecurity, m.PodSecurityLevel, need.Level)
	if breaks := need.Breaks[m.PodSecurityLevel]; breaks != "" {
		why += ": " + breaks
	}
	return why
}

// readmitting reports whether m, back from an outage, is still held off new work, and until
// when. A member that holds the RayService already keeps it: readmission is about new work.
func readmitting(m *Member, p *Policy, now time.Time, current bool) (time.Time, bool) {
	if current || m.ReadmittedAt.IsZero() {
		return time.Time{}, false
	}
	until := m.ReadmittedAt.Add(p.Readmit)
	return until, now.Before(until)
}

// checkTaints returns how many PreferNoSchedule taints are not tolerated, and the first taint
// that keeps the RayService off the member, if any. NoExecute keeps it off always. NoSchedule,
// as on a Node, only keeps new copies off: a member the RayService already runs on keeps it
// (like a cordoned Node keeps its Pods), so tainting a member drains it of nothing. Effects
// other than these (invalid) are treated as NoSchedule.
func checkTaints(taints []corev1.Taint, tolerations []corev1.Toleration, current bool) (int, *corev1.Taint) {
	preferAvoid := 0
	for i := range taints {
		t := &taints[i]
		if tolerated(t, tolerations) {
			continue
		}
		switch t.Effect {
		case corev1.TaintEffectPreferNoSchedule:
			preferAvoid++
		case corev1.TaintEffectNoExecute:
			return preferAvoid, t
		default:
			if !current {
				return preferAvoid, t
			}
		}
	}
	return preferAvoid, nil
}

// tolerated reports whether any toleration matches the taint, with the Kubernetes rules
// (including the numeric Lt/Gt operators).
func tolerated(t *corev1.Taint, tolerations []corev1.Toleration) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(logr.Discard(), t, true) {
			return true
		}
	}
	return false
}

// shortages describes every resource asked of demand that free cannot cover, in the order of
// asked: "insufficient nvidia.com/gpu (need 8, free 2)"; "" when everything fits.
func shortages(demand corev1.ResourceList, asked []corev1.ResourceName, free corev1.ResourceList) string {
	var short []string
	for _, name := range asked {
		need := demand[name]
		have := free[name]
		if need.Cmp(have) > 0 {
			short = append(short, fmt.Sprintf("insufficient %s (need %s, free %s)", name, need.String(), have.String()))
		}
	}
	return strings.Join(short, ", ")
}

// plus returns a + b without modifying either.
func plus(a, b corev1.ResourceList) corev1.ResourceList {
	if len(b) == 0 {
		return a
	}
	sum := make(corev1.ResourceList, len(a)+len(b))
	for name, q := range a {
		sum[name] = q.DeepCopy()
	}
	for name, q := range b {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
	return sum
}

// askedFor lists, by name, the resources demand asks a positive amount of.
func askedFor(demand corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(demand))
	for name, q := range demand {
		if q.Sign() > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
