package dataplane

// Backend is what the hub knows of one cluster's backend, from the control plane and from
// the hub's own probe of its serve address.
type Backend struct {
	// View is the control plane's objection ("not reachable", "not Ready"), "" when it sees
	// the member up.
	View string
	// CopyWhy is the member's own objection to routing to it (no copy, no serve address or
	// endpoints, an address its MemberCluster does not grant): from its copy, or, while the
	// copy cannot be read, from the last status the hub recorded of it.
	CopyWhy string
	// Probe is the verdict of the probe of the serve address; Unknown when probing is off, for
	// ServiceImport backends, or before a fresh judgement. ProbeErr is its last error.
	Probe    Verdict
	ProbeErr string
}

// UnservedWhy is why the backend takes no traffic, "" when it takes some. The data plane
// decides when it has a fresh verdict: a backend answering the hub's probe keeps its traffic
// while the control plane cannot see its member, and one failing the probe loses it while the
// member's API server answers. Without a verdict, the control plane's view decides.
func (b Backend) UnservedWhy() string {
	switch {
	case b.View != "" && (b.CopyWhy != "" || b.Probe != Serving):
		return b.View
	case b.View != "":
		return ""
	case b.CopyWhy != "":
		return b.CopyWhy
	case b.Probe == Failing:
		return "serve endpoint failing: " + b.ProbeErr
	}
	return ""
}

// Unserved is, for each backend, why it takes no traffic ("" when it takes some). The probes
// take backends off only while another one serves: when all fail together the fault is more
// likely on the hub's path to them than in every member, and taking every backend off serves
// no one, so the control plane's view decides then.
func Unserved(backends map[string]Backend) map[string]string {
	out := make(map[string]string, len(backends))
	serving := false
	for name, b := range backends {
		out[name] = b.UnservedWhy()
		serving = serving || out[name] == ""
	}
	if serving {
		return out
	}
	for name, b := range backends {
		if b.Probe == Failing {
			b.Probe = Unknown
		}
		out[name] = b.UnservedWhy()
	}
	return out
}
