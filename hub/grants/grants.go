// Package grants decides what the hub's admin granted a hub namespace through NamespaceGrants:
// the members its RayServices may be placed on and the traffic (cluster, Gateway, hostnames,
// path prefix) its PlacementPolicies may route. It is pure: the hub reads the grants and the
// namespace's labels, and this package answers, with a message naming the grant missing.
package grants

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Set is what the NamespaceGrants selecting one namespace grant it, together.
type Set struct {
	// Namespace is the hub namespace the set is for.
	Namespace string
	// Names are the grants that select the namespace, sorted.
	Names []string
	// Problems are grants whose selectors do not parse, by what is wrong; such a selector
	// grants nothing.
	Problems []string
	members  []memberRule
	traffic  []fleetv1alpha1.TrafficGrant
}

// memberRule is one grant's members.
type memberRule struct {
	names    []string
	selector labels.Selector
}

// For is the set of grants that select namespace, whose labels are nsLabels.
func For(all []fleetv1alpha1.NamespaceGrant, namespace string, nsLabels map[string]string) Set {
	s := Set{Namespace: namespace}
	for i := range all {
		g := &all[i]
		selected, err := selects(&g.Spec, namespace, nsLabels)
		if err != nil {
			s.Problems = append(s.Problems, fmt.Sprintf("NamespaceGrant %s: namespaceSelector: %v", g.Name, err))
		}
		if !selected {
			continue
		}
		s.Names = append(s.Names, g.Name)
		s.traffic = append(s.traffic, g.Spec.Traffic...)
		if m := g.Spec.Members; m != nil {
			rule := memberRule{names: m.ClusterNames}
			if m.ClusterSelector != nil {
				sel, err := metav1.LabelSelectorAsSelector(m.ClusterSelector)
				if err != nil {
					s.Problems = append(s.Problems, fmt.Sprintf("NamespaceGrant %s: members.clusterSelector: %v", g.Name, err))
				} else {
					rule.selector = sel
				}
			}
			s.members = append(s.members, rule)
		}
	}
	slices.Sort(s.Names)
	slices.Sort(s.Problems)
	return s
}

// selects reports whether spec grants namespace: named, or matched by its selector.
func selects(spec *fleetv1alpha1.NamespaceGrantSpec, namespace string, nsLabels map[string]string) (bool, error) {
	if slices.Contains(spec.Namespaces, namespace) {
		return true, nil
	}
	if spec.NamespaceSelector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.NamespaceSelector)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}

// None reports whether no grant selects the namespace: it is granted nothing at all.
func (s Set) None() bool {
	return len(s.Names) == 0
}

// Member reports whether the member called name, with memberLabels, is granted.
func (s Set) Member(name string, memberLabels map[string]string) bool {
	for _, r := range s.members {
		if slices.Contains(r.names, name) || (r.selector != nil && r.selector.Matches(labels.Set(memberLabels))) {
			return true
		}
	}
	return false
}

// MemberMissing is the message for a member that is not granted.
func (s Set) MemberMissing(name string) string {
	return fmt.Sprintf("namespace %s has no NamespaceGrant for member %s", s.Namespace, name)
}

// NoneMessage tells the hub's admin what to apply for a namespace that no grant selects.
func (s Set) NoneMessage() string {
	return fmt.Sprintf("namespace %s has no NamespaceGrant: nothing is placed until the hub's admin applies one "+
		"(fleet.rayfleet.io/v1alpha1 NamespaceGrant naming the namespace and the members it may use)", s.Namespace)
}

// TrafficMissing says which grant spec lacks, "" when one entry grants all of it: its
// cluster, its Gateway, every hostname and its path prefix. The message names the first part
// no entry grants, narrowing the entries part by part.
func (s Set) TrafficMissing(spec *fleetv1alpha1.TrafficSpec) string {
	prefix := fmt.Sprintf("namespace %s has no NamespaceGrant for ", s.Namespace)
	entries := filter(s.traffic, func(t *fleetv1alpha1.TrafficGrant) bool { return nameCovers(t.Cluster, spec.Cluster) })
	if len(entries) == 0 {
		if spec.Cluster == "" {
			return prefix + "the hub's cluster as traffic cluster"
		}
		return prefix + "traffic cluster " + spec.Cluster
	}
	gw := spec.ParentRef.Namespace + "/" + spec.ParentRef.Name
	entries = filter(entries, func(t *fleetv1alpha1.TrafficGrant) bool { return gatewayCovered(t.Gateways, &spec.ParentRef) })
	if len(entries) == 0 {
		return prefix + "Gateway " + gw + " on " + clusterText(spec.Cluster)
	}
	if len(spec.Hostnames) == 0 {
		entries = filter(entries, func(t *fleetv1alpha1.TrafficGrant) bool { return slices.Contains(t.Hostnames, fleetv1alpha1.AnyName) })
		if len(entries) == 0 {
			return prefix + "Gateway " + gw + " with every hostname (the policy sets none; a grant of hostname \"*\" allows that)"
		}
	}
	for _, h := range spec.Hostnames {
		narrowed := filter(entries, func(t *fleetv1alpha1.TrafficGrant) bool { return hostCovered(t.Hostnames, h) })
		if len(narrowed) == 0 {
			return prefix + "Gateway " + gw + " hostname " + h
		}
		entries = narrowed
	}
	path := spec.PathPrefix
	if path == "" {
		path = "/"
	}
	entries = filter(entries, func(t *fleetv1alpha1.TrafficGrant) bool { return pathCovered(t.PathPrefixes, path) })
	if len(entries) == 0 {
		return prefix + "Gateway " + gw + " path prefix " + path
	}
	return ""
}

// clusterText names a traffic cluster in a message.
func clusterText(cluster string) string {
	if cluster == "" {
		return "the hub's cluster"
	}
	return "cluster " + cluster
}

// filter keeps the entries keep accepts.
func filter(entries []fleetv1alpha1.TrafficGrant, keep func(*fleetv1alpha1.TrafficGrant) bool) []fleetv1alpha1.TrafficGrant {
	var out []fleetv1alpha1.TrafficGrant
	for i := range entries {
		if keep(&entries[i]) {
			out = append(out, entries[i])
		}
	}
	return out
}

// nameCovers reports whether a granted name (or "*") covers name.
func nameCovers(granted, name string) bool {
	return granted == fleetv1alpha1.AnyName || granted == name
}

// gatewayCovered reports whether one of the granted Gateways is ref.
func gatewayCovered(granted []fleetv1alpha1.GatewayGrant, ref *fleetv1alpha1.TrafficParentRef) bool {
	return slices.ContainsFunc(granted, func(g fleetv1alpha1.GatewayGrant) bool {
		return nameCovers(g.Namespace, ref.Namespace) && nameCovers(g.Name, ref.Name)
	})
}

// hostCovered reports whether host (a name or a "*." wildcard) is granted: "*" covers every
// host, "*.example.com" every name and wildcard below example.com (not example.com itself),
// any other grant only itself.
func hostCovered(granted []string, host string) bool {
	return slices.ContainsFunc(granted, func(g string) bool {
		if g == fleetv1alpha1.AnyName || g == host {
			return true
		}
		suffix, wild := strings.CutPrefix(g, "*")
		return wild && strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	})
}

// pathCovered reports whether path is one of the granted prefixes or lies under one, segment
// by segment; a trailing "/" makes no difference, as in Gateway API's PathPrefix matching.
// No prefixes is the API's default, "/".
func pathCovered(granted []string, path string) bool {
	if len(granted) == 0 {
		return true
	}
	path = trimSlash(path)
	return slices.ContainsFunc(granted, func(g string) bool {
		g = trimSlash(g)
		return g == "/" || path == g || strings.HasPrefix(path, g+"/")
	})
}

// trimSlash drops a trailing "/" from a path other than "/".
func trimSlash(p string) string {
	if len(p) > 1 {
		return strings.TrimSuffix(p, "/")
	}
	return p
}
