// Package podsecurity judges a RayService's Pods against the Kubernetes Pod Security Standards
// with the upstream checks (k8s.io/pod-security-admission), the ones a member's API server
// enforces from a namespace's pod-security.kubernetes.io/enforce label. The hub asks it which
// level a RayService's Pods need, to place it only where that level is allowed, and which labels
// enforce a member's level. It is pure: no client, no clock. Of the repository it imports
// nothing.
package podsecurity

import (
	"fmt"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
)

// Pod Security levels, as the enforce label spells them.
const (
	// Privileged enforces nothing.
	Privileged = string(psaapi.LevelPrivileged)
	// Baseline prevents the known privilege escalations.
	Baseline = string(psaapi.LevelBaseline)
	// Restricted is the hardened level.
	Restricted = string(psaapi.LevelRestricted)
)

// Labels a namespace carries to have Pod Security admission enforce a level.
const (
	// EnforceLabel is the namespace label naming the enforced level.
	EnforceLabel = psaapi.EnforceLevelLabel
	// EnforceVersionLabel is the namespace label naming the version of the level's checks.
	EnforceVersionLabel = psaapi.EnforceVersionLabel
	// VersionLatest follows the API server's own checks; the members' guard lets the hub pin
	// no other version.
	VersionLatest = psaapi.VersionLatest
)

// Default is the level of a member that reports none (a spoke older than the report's field):
// the members' guard's default level.
const Default = Baseline

// Levels are the levels, loosest first.
func Levels() []string { return []string{Privileged, Baseline, Restricted} }

// Valid reports whether level is one of Levels.
func Valid(level string) bool { return slices.Contains(Levels(), level) }

// Allows reports whether a namespace enforcing enforced admits Pods that need needed, that is
// whether enforced is no stricter than needed. An unknown enforced level admits nothing, and an
// unknown need is met by Privileged only, so that a typo never loosens a member.
func Allows(enforced, needed string) bool {
	e, n := slices.Index(Levels(), enforced), slices.Index(Levels(), needed)
	switch {
	case e < 0:
		return false
	case n < 0:
		return e == 0
	default:
		return e <= n
	}
}

// Labels are the namespace labels enforcing level at the latest version.
func Labels(level string) map[string]string {
	return map[string]string{EnforceLabel: level, EnforceVersionLabel: VersionLatest}
}

// Need is what a RayService's Pods need of a member.
type Need struct {
	// Level is the strictest level every one of the Pods passes.
	Level string
	// Breaks says, for each level stricter than Level, what the Pods break there, Pod template
	// by Pod template: `headGroupSpec: privileged (container "ray-head" must not set
	// securityContext.privileged=true)`.
	Breaks map[string]string
}

// evaluator runs the upstream checks of every level and version. Building it only validates
// the library's own checks, which holds for any release of it.
var evaluator = func() psapolicy.Evaluator {
	e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("pod-security-admission's default checks: %v", err))
	}
	return e
}()

// NeedOf judges the Pods the spoke builds for rs (see Pods) at the latest version of each
// level. A nil RayService needs nothing: Restricted.
func NeedOf(rs *rayv1.RayService) Need {
	need := Need{Level: Restricted, Breaks: map[string]string{}}
	if rs == nil {
		return need
	}
	pods := Pods(&rs.Spec.RayClusterSpec)
	for _, step := range []struct{ level, otherwise string }{{Restricted, Baseline}, {Baseline, Privileged}} {
		why := Check(step.level, pods)
		if why == "" {
			break
		}
		need.Breaks[step.level] = why
		need.Level = step.otherwise
	}
	return need
}

// Pod is the security-relevant part of one kind of Pod: its metadata (the AppArmor
// annotations) and spec.
type Pod struct {
	// Template names where the Pod comes from: "headGroupSpec", "workerGroupSpecs[gpu]".
	Template string
	// Meta is the Pod's metadata.
	Meta metav1.ObjectMeta
	// Spec is the Pod's spec.
	Spec corev1.PodSpec
}

// Pods are the kinds of Pod the spoke builds from spec: the head, with the autoscaler sidecar
// when in-tree autoscaling is on (it runs with autoscalerOptions.securityContext), and one per
// worker group. The wait-for-GCS init container the spoke adds to workers copies the worker
// container's securityContext, so it passes or fails with it and is not added here.
func Pods(spec *rayv1.RayClusterSpec) []Pod {
	head := Pod{Template: "headGroupSpec", Meta: spec.HeadGroupSpec.Template.ObjectMeta,
		Spec: *spec.HeadGroupSpec.Template.Spec.DeepCopy()}
	if spec.EnableInTreeAutoscaling != nil && *spec.EnableInTreeAutoscaling {
		sidecar := corev1.Container{Name: "autoscaler"}
		if o := spec.AutoscalerOptions; o != nil && o.SecurityContext != nil {
			sidecar.SecurityContext = o.SecurityContext.DeepCopy()
		}
		head.Spec.Containers = append(head.Spec.Containers, sidecar)
	}
	pods := []Pod{head}
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		pods = append(pods, Pod{Template: fmt.Sprintf("workerGroupSpecs[%s]", g.GroupName),
			Meta: g.Template.ObjectMeta, Spec: g.Template.Spec})
	}
	return pods
}

// Check runs the checks of level (latest version) on pods and says what they break, Pod by
// Pod ("headGroupSpec: host namespaces (hostNetwork=true); workerGroupSpecs[cpu]: ..."); ""
// when every Pod passes.
func Check(level string, pods []Pod) string {
	lv := psaapi.LevelVersion{Level: psaapi.Level(level), Version: psaapi.LatestVersion()}
	var broken []string
	for i := range pods {
		p := &pods[i]
		r := psapolicy.AggregateCheckResults(evaluator.EvaluatePod(lv, &p.Meta, &p.Spec))
		if !r.Allowed {
			broken = append(broken, p.Template+": "+r.ForbiddenDetail())
		}
	}
	return strings.Join(broken, "; ")
}
