// Package features holds the spoke's --feature-gates: the names of KubeRay's operator feature
// gates, so that a KubeRay operator's flags carry over, with what the spoke does about each.
//
// The spoke implements the behaviour of the gates it knows unconditionally, so they are
// registered as GA and locked on: asking to turn one off fails with the library's error
// instead of being ignored. KubeRay's RayJob gates are not registered, because the spoke
// does not reconcile RayJobs; naming one fails as an unrecognized feature gate.
//
// A leaf: it imports no other RayFleet package, so never hub/ or shared/testing.
package features

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/component-base/featuregate"
)

// KubeRay v1.6.2's gate names that the spoke honours.
const (
	// RayClusterStatusConditions is KubeRay's gate for the RayCluster status conditions
	// (HeadPodReady, RayClusterProvisioned, ...), which the spoke always writes.
	RayClusterStatusConditions featuregate.Feature = "RayClusterStatusConditions"
	// RayMultiHostIndexing is KubeRay's gate for the replica index labels of multi-host worker
	// groups, which the spoke always sets.
	RayMultiHostIndexing featuregate.Feature = "RayMultiHostIndexing"
	// RayServiceIncrementalUpgrade is KubeRay's gate for the NewClusterWithIncrementalUpgrade
	// strategy, which the spoke always accepts (given Gateway API on the member).
	RayServiceIncrementalUpgrade featuregate.Feature = "RayServiceIncrementalUpgrade"
)

// specs are the registered gates. GA and locked: the spoke has no code path with any of them
// off, so a false value must not be accepted silently.
var specs = map[featuregate.Feature]featuregate.FeatureSpec{
	RayClusterStatusConditions:   {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	RayMultiHostIndexing:         {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	RayServiceIncrementalUpgrade: {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
}

// Gates is the spoke's feature gate set; it is a flag.Value for --feature-gates.
type Gates struct {
	gate featuregate.MutableFeatureGate
}

// New returns the spoke's gates at their defaults.
func New() *Gates {
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(specs); err != nil {
		// specs is a constant table and gate is fresh, so Add cannot fail on any input.
		panic(fmt.Sprintf("registering the spoke's feature gates: %v", err))
	}
	return &Gates{gate: gate}
}

// Set parses "Name=bool,Name=bool" as --feature-gates does in KubeRay's operator.
func (g *Gates) Set(value string) error {
	return g.gate.Set(value)
}

// String returns the gates set so far as "Name=bool,...", sorted.
func (g *Gates) String() string {
	if g == nil || g.gate == nil {
		return "" // the flag package calls String on a zero value for --help defaults
	}
	s, ok := g.gate.(fmt.Stringer)
	if !ok {
		return ""
	}
	return s.String()
}

// Enabled reports whether the gate f is on.
func (g *Gates) Enabled(f featuregate.Feature) bool {
	return g.gate.Enabled(f)
}

// Names returns the names of the registered gates, sorted.
func Names() []string {
	names := make([]string, 0, len(specs))
	for f := range maps.Keys(specs) {
		names = append(names, string(f))
	}
	slices.Sort(names)
	return names
}

// Usage is the help text of --feature-gates.
func Usage() string {
	return "Comma-separated KubeRay operator feature gates, Name=true|false. Known (always on in the spoke, " +
		"cannot be turned off): " + strings.Join(Names(), ", ") + ". KubeRay's RayJob gates are not " +
		"recognized: the spoke does not run RayJobs."
}
