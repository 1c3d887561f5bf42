package placement

// PolicyAnnotation on a hub RayService names the PlacementPolicy, in its namespace, that places it.
const PolicyAnnotation = "fleet.rayfleet.io/placement-policy"

// DefaultPolicyName is the PlacementPolicy that places a namespace's RayServices that name none.
const DefaultPolicyName = "default"

// PolicyName resolves which policy places a RayService, given its annotations and the names of
// the PlacementPolicies in its namespace: the annotated one, else the namespace's "default",
// else the hub's built-in policy (builtIn true, name ""; see BuiltInPolicy). An annotated name
// is returned even when no such policy exists: the user asked for it, and silently using
// another would place the RayService where they did not mean to. An empty annotation counts as
// none.
func PolicyName(annotations map[string]string, namespacePolicies []string) (name string, builtIn bool) {
	if name := annotations[PolicyAnnotation]; name != "" {
		return name, false
	}
	for _, p := range namespacePolicies {
		if p == DefaultPolicyName {
			return DefaultPolicyName, false
		}
	}
	return "", true
}
