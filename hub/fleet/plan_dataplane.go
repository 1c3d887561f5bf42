package fleet

// Phase: plan. Whether each backend takes traffic, from the control plane and the probes.

import (
	"github.com/rayfleet/rayfleet/hub/dataplane"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// backendFacts is what the hub knows of one placed cluster's backend, from both views.
type backendFacts struct {
	// view is the control plane's objection ("not reachable", "not Ready"), "" when it sees
	// the member up.
	view string
	// copyWhy is the member's own objection to routing to it (no copy, no serve address or
	// endpoints, an address its MemberCluster does not grant): from its copy, or, while the
	// copy cannot be read, from the last status the hub recorded of it.
	copyWhy string
	// probe is the hub's probe of the serve address; Unknown when probing is off, for
	// ServiceImport backends, or before a fresh judgement.
	probe    dataplane.Verdict
	probeErr string
}

// unservedWhy is why the backend takes no traffic, "" when it takes some. The data plane
// decides when it has a fresh verdict: a backend answering the hub's probe keeps its traffic
// while the control plane cannot see its member, and one failing the probe loses it while the
// member's API server answers. Without a verdict, the control plane's view decides.
func (b backendFacts) unservedWhy() string {
	switch {
	case b.view != "" && (b.copyWhy != "" || b.probe != dataplane.Serving):
		return b.view
	case b.view != "":
		return ""
	case b.copyWhy != "":
		return b.copyWhy
	case b.probe == dataplane.Failing:
		return "serve endpoint failing: " + b.probeErr
	}
	return ""
}

// unservedWhys is, for each backend, why it takes no traffic ("" when it takes some). The
// probes take backends off only while another one serves: when all fail together the fault
// is more likely on the hub's path to them than in every member, and taking every backend off
// serves no one, so the control plane's view decides then.
func unservedWhys(facts map[string]backendFacts) map[string]string {
	out := make(map[string]string, len(facts))
	serving := false
	for name, b := range facts {
		out[name] = b.unservedWhy()
		serving = serving || out[name] == ""
	}
	if serving {
		return out
	}
	for name, b := range facts {
		if b.probe == dataplane.Failing {
			b.probe = dataplane.Unknown
		}
		out[name] = b.unservedWhy()
	}
	return out
}

// backendsOf gathers the facts about each of names' backends.
func (r *Reconciler) backendsOf(g *group, names []string) map[string]backendFacts {
	out := make(map[string]backendFacts, len(names))
	for _, name := range names {
		out[name] = r.backendOf(g, name)
	}
	return out
}

// backendOf gathers the facts about cluster name's backend.
func (r *Reconciler) backendOf(g *group, name string) backendFacts {
	m := g.members[name]
	if m == nil || m.mc == nil {
		return backendFacts{view: "not a member", copyWhy: "not a member"}
	}
	var b backendFacts
	switch {
	case m.readErr != nil:
		b.view = "not reachable"
	case !memberOf(m.mc).Ready:
		b.view = "not Ready"
	}
	b.copyWhy = r.copyWhy(g, m)
	addr := backendAddress(g, name)
	if h, ok := g.probes[addr]; ok && b.copyWhy == "" && !exportsServe(g) {
		b.probe, b.probeErr = h.Verdict(g.now, g.probeFresh), h.Err
	}
	return b
}

// copyWhy is the member's objection to taking traffic, from its copy when it was read, else
// from the last status the hub recorded of it.
func (r *Reconciler) copyWhy(g *group, m *memberRecord) string {
	if m.readErr != nil {
		last := lastStatus(g, m.name)
		switch {
		case last == nil || (last.ServeAddress == "" && !exportsServe(g)):
			return "no serve address known"
		case last.NumServeEndpoints == 0:
			return "no serve endpoints"
		case !exportsServe(g):
			if err := r.checkServeAddress(m.mc, last.ServeAddress); err != nil {
				return "serve address refused: " + err.Error()
			}
		}
		return ""
	}
	switch {
	case m.copy == nil:
		return "no copy yet"
	case m.copy.Annotations[labels.ServeAddress] == "" && !exportsServe(g):
		if why := m.copy.Annotations[labels.NoServeAddress]; why != "" {
			return "no serve address: " + why
		}
		return "no serve address reported yet"
	case m.copy.Status.NumServeEndpoints == 0:
		return "no serve endpoints"
	case !exportsServe(g):
		if err := r.checkServeAddress(m.mc, serveAddress(m)); err != nil {
			return "serve address refused: " + err.Error()
		}
	}
	return ""
}

// lastStatus is the binding's entry for cluster name, what the hub last saw of it; nil when
// there is none.
func lastStatus(g *group, name string) *fleetv1alpha1.ClusterStatus {
	if g.binding == nil {
		return nil
	}
	for i := range g.binding.Status.Clusters {
		if g.binding.Status.Clusters[i].Name == name {
			return &g.binding.Status.Clusters[i]
		}
	}
	return nil
}

// backendAddress is cluster name's serve address: its copy's, or while the copy cannot be
// read, the one the hub last recorded.
func backendAddress(g *group, name string) string {
	m := g.members[name]
	if m != nil && m.readErr != nil {
		if last := lastStatus(g, name); last != nil {
			return last.ServeAddress
		}
		return ""
	}
	return serveAddress(m)
}

// probeTargets are the serve addresses of the placed clusters whose address the hub may route
// to (address → cluster): those the probes watch, whether they take traffic now or not, so
// that one taken off is seen to recover.
func (r *Reconciler) probeTargets(g *group, placed []string) map[string]string {
	if r.opts.Probes == nil || exportsServe(g) || trafficSpec(g) == nil {
		return nil
	}
	out := map[string]string{}
	for _, name := range placed {
		m := g.members[name]
		if m == nil || m.mc == nil {
			continue
		}
		addr := backendAddress(g, name)
		if addr == "" || r.checkServeAddress(m.mc, addr) != nil {
			continue
		}
		out[addr] = name
	}
	return out
}
