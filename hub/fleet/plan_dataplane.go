package fleet

// Phase: plan. Whether each backend takes traffic, from the control plane and the probes.

import (
	"github.com/rayfleet/rayfleet/hub/dataplane"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// backendsOf gathers the facts about each of names' backends.
func (r *Reconciler) backendsOf(g *group, names []string) map[string]dataplane.Backend {
	out := make(map[string]dataplane.Backend, len(names))
	for _, name := range names {
		out[name] = r.backendOf(g, name)
	}
	return out
}

// backendOf gathers the facts about cluster name's backend.
func (r *Reconciler) backendOf(g *group, name string) dataplane.Backend {
	m := g.members[name]
	if m == nil || m.mc == nil {
		return dataplane.Backend{View: "not a member", CopyWhy: "not a member"}
	}
	var b dataplane.Backend
	switch {
	case m.readErr != nil:
		b.View = "not reachable"
	case !memberOf(m.mc).Ready:
		b.View = "not Ready"
	}
	b.CopyWhy = r.copyWhy(g, m)
	addr := backendAddress(g, name)
	if h, ok := g.probes[addr]; ok && b.CopyWhy == "" && !exportsServe(g) {
		b.Probe, b.ProbeErr = h.Verdict(g.now, g.probeFresh), h.Err
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

// servingMembers are the members in names whose backend for the RayService answers the hub's
// probe now, with nothing in its copy against routing to it (placement.Input.Serving); nil
// when the hub does not probe the RayService's backends.
func (r *Reconciler) servingMembers(g *group, names []string) map[string]bool {
	if r.opts.Probes == nil || exportsServe(g) || trafficSpec(g) == nil {
		return nil
	}
	out := map[string]bool{}
	for _, name := range names {
		if b := r.backendOf(g, name); b.Probe == dataplane.Serving && b.CopyWhy == "" {
			out[name] = true
		}
	}
	return out
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
