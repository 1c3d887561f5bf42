package placement

import (
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// PolicyName resolves which policy places a RayService, given its annotations and the names of
// the PlacementPolicies in its namespace: the one its labels.PlacementPolicy annotation names,
// else the namespace's fleetv1alpha1.DefaultPlacementPolicyName, else the hub's built-in policy
// (builtIn true, name ""; see BuiltInPolicy). An annotated name is returned even when no such
// policy exists: the user asked for it, and silently using another would place the RayService
// where they did not mean to. An empty annotation counts as none.
func PolicyName(annotations map[string]string, namespacePolicies []string) (name string, builtIn bool) {
	if name := annotations[labels.PlacementPolicy]; name != "" {
		return name, false
	}
	for _, p := range namespacePolicies {
		if p == fleetv1alpha1.DefaultPlacementPolicyName {
			return fleetv1alpha1.DefaultPlacementPolicyName, false
		}
	}
	return "", true
}
