// Package simmembers is a multicluster-runtime provider of simulated member clusters for the
// hub's benchmark: N members (sim-000, sim-001, ...) all backed by ONE member API server, so that
// a 2-core machine can run a hub against 100 members. Member m's namespace "ns" is the backing
// server's namespace "m-ns", and a cluster-scoped object "x" of member m (its Namespaces, its
// ClusterReport) is the backing server's "m-x", labelled MemberLabel=m.
//
// Each member is a real controller-runtime cluster.Cluster, as the kubeconfig provider would
// make it: its own cache (restricted to the member's mapped namespaces, and for cluster-scoped
// kinds to objects labelled with its name), its own HTTP client (its own connection) and its
// own client-side rate limits. Its client, API reader, cache, informers, field indexer and
// event recorders map names both ways, for every verb (Get, List, Create, Update, Patch with
// merge, JSON, strategic-merge and apply patches, Apply, Delete, DeleteAllOf, status and other
// subresources): what the hub reads shows the member's own namespace and name, and two members
// never see each other's objects.
//
// What it bypasses of production (e2e/bench/RESULTS.md, "At fleet scale: simulated members"):
//   - the kubeconfig provider: members are engaged from a fixed list when the manager starts,
//     not from the kubeconfig Secrets in the hub namespace (the benchmark still creates them,
//     since the MemberCluster controller checks them), and no Secret watch engages or
//     disengages one later;
//   - one API server per member: every member's reads, watches and writes land on one API
//     server and one etcd, whose load is the fleet's, not a member's;
//   - network distance: the members are on the loopback interface;
//   - names inside objects other than metadata (owner references by name, a Service's
//     selector, ...) are not mapped, nor are selectors on metadata.name in label form; a List
//     with a limit may return fewer items than the limit, since other members' objects are
//     filtered out after the fact when the backing server cannot select them;
//   - the hub's reads of namespaces outside Options.Namespaces fail (the cache only knows the
//     mapped namespaces), where a real member's cluster-wide cache would answer.
//
// It imports only shared/ (through the scheme of its caller) and never hub/, spoke/ or cmd/.
package simmembers

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MemberLabel labels every cluster-scoped object of a simulated member on the backing server
// with the member's name: it is how each member's cache selects its own Namespaces and
// ClusterReport. Objects written through a member's client get it; whoever else creates a
// member's cluster-scoped objects (the benchmark's ClusterReports) must set it.
const MemberLabel = "sim.rayfleet.io/member"

// namespaceNameLabel is the label the API server sets on every Namespace to its name.
const namespaceNameLabel = corev1.LabelMetadataName

// Names returns n member names, sim-000 onwards (more digits when n needs them).
func Names(n int) []string {
	width := max(3, len(fmt.Sprint(n-1)))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("sim-%0*d", width, i)
	}
	return out
}

// BackingNamespace is the backing server's namespace holding member's namespace ns.
func BackingNamespace(member, ns string) string { return member + "-" + ns }

// BackingName is the backing server's name of member's cluster-scoped object name.
func BackingName(member, name string) string { return member + "-" + name }

// MemberOf returns the member whose namespace (or cluster-scoped object) backing is, among
// members, and the member's own name for it.
func MemberOf(members []string, backing string) (member, name string, ok bool) {
	for _, m := range members {
		if rest, found := strings.CutPrefix(backing, m+"-"); found {
			return m, rest, true
		}
	}
	return "", "", false
}

// validateNames refuses an empty name and names of which one is another's prefix followed by
// "-": member "a" namespace "b-c" and member "a-b" namespace "c" would both be "a-b-c".
func validateNames(members []string) error {
	seen := map[string]bool{}
	for _, m := range members {
		if m == "" {
			return fmt.Errorf("empty member name")
		}
		if seen[m] {
			return fmt.Errorf("member %s named twice", m)
		}
		seen[m] = true
	}
	for _, a := range members {
		for _, b := range members {
			if a != b && strings.HasPrefix(b, a+"-") {
				return fmt.Errorf("member names %s and %s are ambiguous: %s's names could be %s's", a, b, b, a)
			}
		}
	}
	return nil
}

// member maps one simulated member's names to the backing server's and back.
type member struct {
	name   string
	prefix string
}

func newMember(name string) member { return member{name: name, prefix: name + "-"} }

// out maps a name of the member to the backing server's; the empty name (all namespaces, or
// a name the server generates) stays empty.
func (m member) out(name string) string {
	if name == "" {
		return ""
	}
	return m.prefix + name
}

// in maps a backing name to the member's, and reports whether it is the member's at all.
func (m member) in(backing string) (string, bool) {
	return strings.CutPrefix(backing, m.prefix)
}

// outKey maps a key of one of the member's objects.
func (m member) outKey(key client.ObjectKey, namespaced bool) client.ObjectKey {
	if namespaced {
		return client.ObjectKey{Namespace: m.out(key.Namespace), Name: key.Name}
	}
	return client.ObjectKey{Name: m.out(key.Name)}
}

// outObject rewrites obj in place into the backing server's names: its namespace, or for a
// cluster-scoped object its name (or generateName) and MemberLabel.
func (m member) outObject(obj client.Object, namespaced bool) {
	if namespaced {
		obj.SetNamespace(m.out(obj.GetNamespace()))
		return
	}
	obj.SetName(m.out(obj.GetName()))
	if g := obj.GetGenerateName(); g != "" {
		obj.SetGenerateName(m.out(g))
	}
	lbls := obj.GetLabels()
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[MemberLabel] = m.name
	if _, ok := lbls[namespaceNameLabel]; ok && isNamespace(obj) {
		lbls[namespaceNameLabel] = obj.GetName()
	}
	obj.SetLabels(lbls)
}

// inObject rewrites obj in place from the backing server's names into the member's, and
// reports whether obj is the member's: an object of another member is left as it is.
func (m member) inObject(obj client.Object, namespaced bool) bool {
	if namespaced {
		ns, ok := m.in(obj.GetNamespace())
		if ok {
			obj.SetNamespace(ns)
		}
		return ok
	}
	// A nameless object is one the caller sent with generateName and the server refused: it
	// is the member's, and goes back as it came.
	if obj.GetName() != "" {
		name, ok := m.in(obj.GetName())
		if !ok {
			return false
		}
		obj.SetName(name)
	}
	if g, found := m.in(obj.GetGenerateName()); found {
		obj.SetGenerateName(g)
	}
	lbls := obj.GetLabels()
	delete(lbls, MemberLabel)
	if v, found := lbls[namespaceNameLabel]; found && isNamespace(obj) {
		if own, mine := m.in(v); mine {
			lbls[namespaceNameLabel] = own
		}
	}
	if len(lbls) == 0 {
		lbls = nil
	}
	obj.SetLabels(lbls)
	return true
}

// isNamespace reports whether obj is a Namespace, typed or not.
func isNamespace(obj client.Object) bool {
	if _, ok := obj.(*corev1.Namespace); ok {
		return true
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Namespace"
}
