package membership

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// DefaultGuardTimeout bounds join's wait for the member's API server to enforce the guard.
const DefaultGuardTimeout = 30 * time.Second

// guardPollInterval paces the dry runs: an API server loads a new policy within about a second.
const guardPollInterval = 200 * time.Millisecond

// unverifiedGuardWait is join's wait when it may not act as the hub to check the guard: several
// times the second an API server takes to load a policy.
const unverifiedGuardWait = 5 * time.Second

// probeName names the objects of join's dry runs.
const probeName = "rayfleet-guard-probe"

// Resources a guard policy is probed on: the two kinds the hub writes on a member.
const (
	rayServicesResource = "rayservices"
	namespacesResource  = "namespaces"
)

// GuardCheck is what join found out, before registering the member on the hub, about the
// guard on the hub's identity being in force.
type GuardCheck struct {
	// Enforced are the ValidatingAdmissionPolicies that refused a dry run made as the hub.
	Enforced []string
	// Notes say what join could not check and why.
	Notes []string
}

// guardPolicy is one policy guarding the hub's writes of resource.
type guardPolicy struct {
	name, resource string
}

// guardPolicies are the policies among vaps that apply to username's requests (their
// hubpolicy.HubMatchCondition names it) with the resource each is probed on, by name.
func guardPolicies(vaps []admissionregistrationv1.ValidatingAdmissionPolicy, username string) []guardPolicy {
	var out []guardPolicy
	for _, p := range vaps {
		if !slices.ContainsFunc(p.Spec.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool {
			return c.Name == hubpolicy.HubMatchCondition && strings.Contains(c.Expression, strconv.Quote(username))
		}) || p.Spec.MatchConstraints == nil {
			continue
		}
		for _, r := range p.Spec.MatchConstraints.ResourceRules {
			for _, res := range []struct{ group, resource string }{
				{rayv1.GroupVersion.Group, rayServicesResource}, {corev1.GroupName, namespacesResource},
			} {
				if slices.Contains(r.APIGroups, res.group) && slices.Contains(r.Resources, res.resource) {
					out = append(out, guardPolicy{name: p.Name, resource: res.resource})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b guardPolicy) int { return strings.Compare(a.name+"/"+a.resource, b.name+"/"+b.resource) })
	return slices.Compact(out)
}

// probeVerdict is what one dry run as the hub says about the guard.
type probeVerdict int

const (
	// probeAdmitted: the API server does not enforce the policy yet; ask again.
	probeAdmitted probeVerdict = iota
	// probeRefused: refused with the guard's message, so the policy is in force.
	probeRefused
	// probeFailed: refused otherwise (the hub's RBAC not loaded yet either, a server error); ask again.
	probeFailed
	// probeNoKind: the member serves no such resource, so the hub can write none.
	probeNoKind
	// probeNoImpersonation: join's user may not act as the hub.
	probeNoImpersonation
)

// judgeProbe reads the answer err to a dry run made as the hub.
func judgeProbe(err error) probeVerdict {
	switch {
	case err == nil:
		return probeAdmitted
	case func() bool { _, _, ok := hubpolicy.ParseDenial(err); return ok }():
		return probeRefused
	case meta.IsNoMatchError(err):
		return probeNoKind
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot impersonate"):
		return probeNoImpersonation
	}
	return probeFailed
}

// probeObject is an object of resource the guard refuses the hub whatever its settings: a
// RayService with a privileged container, in namespace (which must exist: a dry run into a
// missing namespace fails before admission), or a Namespace the hub labels allowed (only the
// member's admin may) with no Pod Security.
func probeObject(resource, namespace string) client.Object {
	if resource == namespacesResource {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeName, Labels: map[string]string{
			labels.HubNamespace: labels.HubNamespaceAllowed, "pod-security.kubernetes.io/enforce": hubpolicy.LevelPrivileged}}}
	}
	container := corev1.Container{Name: "ray-head", Image: "rayproject/ray", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}
	return &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: namespace},
		Spec: rayv1.RayServiceSpec{RayClusterSpec: rayv1.RayClusterSpec{HeadGroupSpec: rayv1.HeadGroupSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container}}},
		}}},
	}
}

// guardWait is how join checks the guard on username, whose ServiceAccount is in namespace.
type guardWait struct {
	namespace, username string
	timeout             time.Duration
	clock               clock.Clock
}

// waitForGuard returns once every policy guarding the hub's identity refuses a dry run made as
// the hub (asHub), or fails after w.timeout naming those that did not. admin lists the
// policies. Without the right to impersonate the hub it waits unverifiedGuardWait instead.
func waitForGuard(ctx context.Context, admin, asHub client.Client, w guardWait) (GuardCheck, error) {
	var vaps admissionregistrationv1.ValidatingAdmissionPolicyList
	if err := admin.List(ctx, &vaps); err != nil && !meta.IsNoMatchError(err) {
		return GuardCheck{}, fmt.Errorf("listing the ValidatingAdmissionPolicies guarding the hub: %w", err)
	}
	var check GuardCheck
	pending := guardPolicies(vaps.Items, w.username)
	if len(pending) == 0 {
		check.Notes = append(check.Notes, fmt.Sprintf("no ValidatingAdmissionPolicy guards %s (the spoke chart's hubPolicy.enabled is false?): "+
			"nothing to wait for", w.username))
		return check, nil
	}
	deadline := w.clock.Now().Add(w.timeout)
	last := map[guardPolicy]string{}
	for {
		var still []guardPolicy
		for _, p := range pending {
			err := asHub.Create(ctx, probeObject(p.resource, w.namespace), client.DryRunAll)
			switch judgeProbe(err) {
			case probeRefused:
				check.Enforced = append(check.Enforced, p.name)
			case probeNoKind:
				check.Notes = append(check.Notes, fmt.Sprintf("%s guards %s, which the member does not serve: the hub can write none yet", p.name, p.resource))
			case probeNoImpersonation:
				return unverifiedGuard(ctx, w.clock, err)
			case probeAdmitted:
				last[p], still = "admitted", append(still, p)
			default:
				last[p], still = err.Error(), append(still, p)
			}
		}
		if pending = still; len(pending) == 0 {
			return check, nil
		}
		if !w.clock.Now().Before(deadline) {
			return check, guardTimeoutError(pending, last, w.timeout)
		}
		select {
		case <-ctx.Done():
			return check, fmt.Errorf("waiting for the guard: %w", ctx.Err())
		case <-w.clock.After(guardPollInterval):
		}
	}
}

// unverifiedGuard waits unverifiedGuardWait for the API server to load the guard, as join may
// not check it by acting as the hub (refused is why).
func unverifiedGuard(ctx context.Context, clk clock.Clock, refused error) (GuardCheck, error) {
	select {
	case <-ctx.Done():
		return GuardCheck{}, fmt.Errorf("waiting for the guard: %w", ctx.Err())
	case <-clk.After(unverifiedGuardWait):
	}
	return GuardCheck{Notes: []string{fmt.Sprintf("could not check that the guard is in force, as join's user may not impersonate the hub (%v): "+
		"waited %s for the API server to load it instead", refused, unverifiedGuardWait)}}, nil
}

// guardTimeoutError names the policies that still let the hub's dry runs through after timeout,
// with the last answer to each.
func guardTimeoutError(pending []guardPolicy, last map[guardPolicy]string, timeout time.Duration) error {
	parts := make([]string, 0, len(pending))
	for _, p := range pending {
		parts = append(parts, fmt.Sprintf("ValidatingAdmissionPolicy %s (a dry-run %s as the hub: %s)", p.name, p.resource, last[p]))
	}
	return fmt.Errorf("the guard is not in force after %s, so the hub was not registered: %s; check that each policy has a "+
		"ValidatingAdmissionPolicyBinding and that the API server enables ValidatingAdmissionPolicy (--guard-timeout waits longer)",
		timeout, strings.Join(parts, "; "))
}

// impersonating is a client of the member acting as username, sharing c's scheme and mapper.
func impersonating(member Cluster, username string) (client.Client, error) {
	cfg := rest.CopyConfig(member.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: username}
	c, err := client.New(cfg, client.Options{Scheme: member.Client.Scheme(), Mapper: member.Client.RESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("a client acting as %s: %w", username, err)
	}
	return c, nil
}
