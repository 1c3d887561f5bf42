package fleet

// Phase: plan. Grants: what the namespace may use, and the GrantMissing condition.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=namespacegrants,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get;list;watch

// notGrantedError is a traffic spec the namespace has no grant for: no route is written.
type notGrantedError struct{ missing string }

func (e *notGrantedError) Error() string {
	return e.missing + "; no route is written until the hub's admin grants it"
}

// trafficGrant checks the policy's traffic against the namespace's grants: refused when not
// granted, unless the route the hub wrote for it already matches exactly what the spec asks
// (routed before grants existed), which is kept, with kept naming the grant missing.
func trafficGrant(g *group, spec *fleetv1alpha1.TrafficSpec) (refused error, kept string) {
	missing := g.grants.TrafficMissing(spec)
	if missing == "" {
		return nil, ""
	}
	if routedAlready(g.route, spec) {
		return nil, missing
	}
	return &notGrantedError{missing: missing}, ""
}

// routedAlready reports whether the route read in the traffic cluster (spec's cluster) exists
// and matches spec's Gateway, hostnames and path prefix: the route in the RayService's
// namespace, or before the move the one an earlier hub wrote in the Gateway's.
func routedAlready(rr routeRead, spec *fleetv1alpha1.TrafficSpec) bool {
	st := rr.state
	if !st.Exists {
		st = rr.legacy
	}
	if rr.err != nil || !st.Exists {
		return false
	}
	m := st.Matches
	path := spec.PathPrefix
	if path == "" {
		path = "/"
	}
	got, want := slices.Sorted(slices.Values(m.Hostnames)), slices.Sorted(slices.Values(spec.Hostnames))
	return m.GatewayNamespace == spec.ParentRef.Namespace && m.Gateway == spec.ParentRef.Name && m.PathPrefix == path &&
		slices.Equal(got, want)
}

// grantCondition is the GrantMissing condition of the decision, nil when the namespace is
// granted everything the RayService uses: NotGranted when members or traffic are refused,
// KeptWithoutGrant when only what the RayService had before is kept.
func grantCondition(g *group, pl placementResult, placed []string, td *trafficDecision) *metav1.Condition {
	var refused, kept []string
	if g.grants.None() && len(placed) == 0 {
		refused = append(refused, g.grants.NoneMessage())
	} else if pl.placedCond.Status != metav1.ConditionTrue {
		var names []string
		for name, why := range pl.rejected {
			if why == g.grants.MemberMissing(name) {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			refused = append(refused, fmt.Sprintf("namespace %s has no NamespaceGrant for member %s; the RayService is placed on no more members until one is granted",
				g.key.Namespace, strings.Join(names, ", ")))
		}
	}
	var keptMembers []string
	for _, name := range placed {
		if _, no := pl.in.Ungranted[name]; no {
			keptMembers = append(keptMembers, name)
		}
	}
	if len(keptMembers) > 0 {
		kept = append(kept, fmt.Sprintf("namespace %s has no NamespaceGrant for member %s, where the RayService was placed before; it stays there and goes to no other member without a grant",
			g.key.Namespace, strings.Join(keptMembers, ", ")))
	}
	if td != nil {
		if ng, ok := errors.AsType[*notGrantedError](td.err); ok {
			refused = append(refused, ng.Error())
		} else if td.keptWithoutGrant != "" {
			kept = append(kept, td.keptWithoutGrant+", which the existing route already routes; it is kept as it is")
		}
	}
	if len(refused) == 0 && len(kept) == 0 {
		return nil
	}
	c := &metav1.Condition{Type: fleetv1alpha1.ConditionGrantMissing, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonKeptWithoutGrant}
	if len(refused) > 0 {
		c.Reason = fleetv1alpha1.ReasonNotGranted
	}
	c.Message = strings.Join(slices.Concat(refused, kept, g.grants.Problems), "; ")
	return c
}
