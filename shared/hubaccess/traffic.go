package hubaccess

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TrafficRoleName names the Roles and RoleBindings that let the hub manage traffic in the
// namespaces of the RayServices routed through a Gateway on a member (the policy's
// spec.traffic.cluster), or the ClusterRole and ClusterRoleBinding granting it everywhere: made
// on request only, by `rayfleet join --traffic-namespace` / `--traffic-all-namespaces` or the
// spoke chart's hubTraffic.
const TrafficRoleName = "rayfleet-hub-traffic"

// mcsGroup is the Multi-Cluster Services API's group.
const mcsGroup = "multicluster.x-k8s.io"

// TrafficRules are the hub's rights in a traffic namespace, on a member or on the hub's own
// cluster (the hub chart's traffic.namespaces): a RayService's route lives in its namespace, so
// these are its HTTPRoutes and the Services and EndpointSlices standing for each member's
// backend, and read access to the ServiceImports there (which export name of a member's serve
// Service to route to). Watch lets the hub keep namespaced informers on its own routes and
// backends and on the ServiceImports there (hub/traffic.Informers), so that a resync calls no
// API server; a Role without it leaves the hub reading them uncached.
func TrafficRules() []rbacv1.PolicyRule {
	rule := func(group, resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}
	}
	return []rbacv1.PolicyRule{
		rule(gwv1.GroupName, "httproutes"),
		rule(corev1.GroupName, "services"),
		rule(discoveryv1.GroupName, "endpointslices"),
		{APIGroups: []string{mcsGroup}, Resources: []string{"serviceimports"}, Verbs: []string{"get", "list", "watch"}},
	}
}
