package membership

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// The upgrade path to labelled namespaces. A hub before Pod Security labels created the
// namespaces of its copies bare, and copies run there. Each reconcile of a member looks at the
// namespaces holding the hub's copies that carry no enforce label, asks the member's API server
// what labelling one would do (a dry run, whose warnings are Pod Security admission's verdict on
// the Pods running there, which the hub may not list), and labels it only when no Pod breaks
// the level. Otherwise the namespace stays as it is, nothing in it is moved or deleted, and the
// MemberCluster says which Pods break which checks.

// NamespaceEnforcement is what one reconcile found of the member's namespaces.
type NamespaceEnforcement struct {
	// Level is the member's Pod Security level.
	Level string
	// Labelled are the namespaces labelled in this reconcile.
	Labelled []string
	// Unenforced are the namespaces left unlabelled, with the Pods that break the level.
	Unenforced []fleetv1alpha1.UnenforcedNamespace
}

// unlabelledWithCopies are the namespaces to label: those holding a copy and carrying no enforce
// label, not being deleted, sorted. A namespace with an enforce label of any level is the
// member admin's choice (or the hub's own), and one without copies is none of the hub's
// business. holds says whether a namespace holds a copy; it is asked only of the namespaces
// left after the labels, so a member whose namespaces are labelled has no copy read at all,
// where listing every copy at every heartbeat was a tenth of the hub's allocations.
func unlabelledWithCopies(namespaces []corev1.Namespace, holds func(namespace string) (bool, error)) ([]string, error) {
	var out []string
	for i := range namespaces {
		ns := &namespaces[i]
		if _, labelled := ns.Labels[podsecurity.EnforceLabel]; labelled || !ns.DeletionTimestamp.IsZero() {
			continue
		}
		switch held, err := holds(ns.Name); {
		case err != nil:
			return nil, err
		case held:
			out = append(out, ns.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// violations are the warnings of a dry-run labelling that stand against labelling for real:
// every warning but Pod Security admission's heading ("existing pods in namespace ... violate
// ..."). Each one left names a Pod and the checks it fails ("x (and 2 other pods): privileged"),
// or says the check did not see every Pod, which is no clean bill either.
func violations(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		if strings.HasPrefix(w, "existing pods in namespace ") {
			continue
		}
		out = append(out, w)
	}
	return out
}

// podSecurityCondition is the MemberCluster's PodSecurityEnforced condition for e.
func podSecurityCondition(e *NamespaceEnforcement) metav1.Condition {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionPodSecurityEnforced, Status: metav1.ConditionTrue,
		Reason:  fleetv1alpha1.ReasonNamespacesEnforced,
		Message: fmt.Sprintf("every namespace holding the hub's copies enforces Pod Security level %s", e.Level)}
	if len(e.Unenforced) == 0 {
		return c
	}
	parts := make([]string, 0, len(e.Unenforced))
	for _, u := range e.Unenforced {
		parts = append(parts, fmt.Sprintf("namespace %s: %s", u.Name, strings.Join(u.Violations, "; ")))
	}
	c.Status, c.Reason = metav1.ConditionFalse, fleetv1alpha1.ReasonPodsViolateLevel
	c.Message = conditions.Truncate(fmt.Sprintf("not labelled %s=%s, Pods running there break it (nothing was moved or deleted): %s",
		podsecurity.EnforceLabel, e.Level, strings.Join(parts, "; ")))
	return c
}

// setPodSecurity records e in st; a nil e (not looked at this time) keeps what st had.
func setPodSecurity(st *fleetv1alpha1.MemberClusterStatus, e *NamespaceEnforcement, obs Observation) {
	if e == nil {
		return
	}
	st.UnenforcedNamespaces = e.Unenforced
	c := podSecurityCondition(e)
	c.ObservedGeneration = obs.Generation
	c.LastTransitionTime = metav1.NewTime(obs.Now)
	conditions.Set(&st.Conditions, c)
}

// enforceNamespaces judges the namespaces of a member that reports, at the level it reports
// (podsecurity.Default for a spoke that reports none). A failure is logged and leaves them
// unjudged: labelling is no reason to call the member unreachable.
func (r *Reconciler) enforceNamespaces(ctx context.Context, cl cluster.Cluster, name string, obs Observation) *NamespaceEnforcement {
	if cl == nil || obs.ProbeErr != nil || obs.Report == nil {
		return nil
	}
	level := obs.Report.Status.PodSecurityLevel
	if level == "" {
		level = podsecurity.Default
	}
	j := judging{verdicts: &r.verdicts, member: name, level: level, now: obs.Now, recheck: r.opts.PodSecurityRecheck}
	e, err := enforceNamespaces(ctx, cl, r.opts.HubName, j)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Labelling the namespaces of the hub's copies failed")
		return nil
	}
	return e
}

// DefaultPodSecurityRecheck is how long a namespace found holding Pods that break the level
// keeps that verdict before it is dry-run again: each dry run has the member's API server
// check every Pod there, and the resync comes every 10 s.
const DefaultPodSecurityRecheck = time.Minute

// judging is one member's labelling: its level, the time, and the verdicts remembered.
type judging struct {
	verdicts *verdicts
	member   string
	level    string
	now      time.Time
	recheck  time.Duration
}

// enforceNamespaces labels the member's unlabelled namespaces holding copies of hubName's with
// j.level where no Pod breaks it, and says which it could not label. An error leaves the
// member's namespaces unjudged this time.
func enforceNamespaces(ctx context.Context, cl cluster.Cluster, hubName string, j judging) (*NamespaceEnforcement, error) {
	var namespaces corev1.NamespaceList
	if err := cl.GetClient().List(ctx, &namespaces); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	holds := func(namespace string) (bool, error) {
		var copies rayv1.RayServiceList
		err := cl.GetClient().List(ctx, &copies, client.InNamespace(namespace), client.MatchingLabels{labels.OriginHub: hubName},
			client.Limit(1), client.UnsafeDisableDeepCopy)
		switch {
		case meta.IsNoMatchError(err):
			// A member without the RayService CRD holds no copies: nothing to label there.
			return false, nil
		case err != nil:
			return false, fmt.Errorf("listing the hub's RayServices in namespace %s: %w", namespace, err)
		}
		return len(copies.Items) > 0, nil
	}
	unlabelled, err := unlabelledWithCopies(namespaces.Items, holds)
	if err != nil {
		return nil, err
	}
	e := &NamespaceEnforcement{Level: j.level}
	j.verdicts.keepOnly(j.member, unlabelled)
	for _, name := range unlabelled {
		if v, ok := j.verdicts.recent(j.member, name, j.level, j.now, j.recheck); ok {
			e.Unenforced = append(e.Unenforced, fleetv1alpha1.UnenforcedNamespace{Name: name, Violations: v})
			continue
		}
		warnings, err := labelNamespace(ctx, cl.GetConfig(), name, j.level, true)
		if err != nil {
			return nil, err
		}
		if v := violations(warnings); len(v) > 0 {
			j.verdicts.record(j.member, name, verdict{at: j.now, level: j.level, violations: v})
			e.Unenforced = append(e.Unenforced, fleetv1alpha1.UnenforcedNamespace{Name: name, Violations: v})
			continue
		}
		if _, err := labelNamespace(ctx, cl.GetConfig(), name, j.level, false); err != nil {
			return nil, err
		}
		e.Labelled = append(e.Labelled, name)
		ctrl.LoggerFrom(ctx).Info("Labelled a namespace the hub created before it labelled them", "namespace", name, "level", j.level)
	}
	return e, nil
}

// verdict is a namespace found holding Pods that break level, at a time.
type verdict struct {
	at         time.Time
	level      string
	violations []string
}

// verdicts remembers, per member, the namespaces last found holding Pods that break the level,
// so that they are dry-run again only every recheck. In memory only: a restarted hub judges
// afresh.
type verdicts struct {
	mu       sync.Mutex
	byMember map[string]map[string]verdict
}

// recent returns the violations of namespace ns on member found at level less than recheck
// before now.
func (v *verdicts) recent(member, ns, level string, now time.Time, recheck time.Duration) ([]string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	got, ok := v.byMember[member][ns]
	if !ok || got.level != level || now.Sub(got.at) >= recheck {
		return nil, false
	}
	return slices.Clone(got.violations), true
}

// record remembers a namespace's verdict.
func (v *verdicts) record(member, ns string, vd verdict) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byMember == nil {
		v.byMember = map[string]map[string]verdict{}
	}
	if v.byMember[member] == nil {
		v.byMember[member] = map[string]verdict{}
	}
	v.byMember[member][ns] = vd
}

// keepOnly forgets the member's namespaces that are not among unlabelled (labelled since, or
// gone).
func (v *verdicts) keepOnly(member string, unlabelled []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for ns := range v.byMember[member] {
		if !slices.Contains(unlabelled, ns) {
			delete(v.byMember[member], ns)
		}
	}
}

// forget drops a member's verdicts.
func (v *verdicts) forget(member string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.byMember, member)
}

// labelNamespace patches the enforce labels onto namespace name, as a dry run when dryRun, and
// returns the API server's warnings. Only the labels are sent, so a namespace that changed
// meanwhile keeps the rest; the members' guard checks the labels the hub sets.
func labelNamespace(ctx context.Context, cfg *rest.Config, name, level string, dryRun bool) ([]string, error) {
	collected := &warningCollector{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler, cfg.WarningHandlerWithContext = nil, collected
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for namespace %s: %w", name, err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": podsecurity.Labels(level)}})
	if err != nil {
		return nil, fmt.Errorf("labels of namespace %s: %w", name, err)
	}
	opts := metav1.PatchOptions{FieldManager: labels.HubFieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := core.Namespaces().Patch(ctx, name, types.MergePatchType, patch, opts); err != nil {
		return nil, fmt.Errorf("labelling namespace %s with %s=%s (dry run %t): %w", name, podsecurity.EnforceLabel, level, dryRun, err)
	}
	return collected.all(), nil
}

// warningCollector keeps the warnings of the requests made through one client.
type warningCollector struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeaderWithContext records the warning's text.
func (w *warningCollector) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningCollector) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.warnings)
}
