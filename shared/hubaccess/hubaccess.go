// Package hubaccess is the contract for the hub's identity on a member cluster: the names of
// its ServiceAccount and RBAC, the only permissions it holds there (HubRules cluster-wide,
// TokenRules for minting its own tokens and, on request, TrafficRules in the namespace of a
// Gateway it routes through), and the lifetimes of its tokens.
// The spoke chart renders it, `rayfleet join` creates it when no chart did, and the tests
// compare both against HubRules and TrafficRules.
// The hub's side of the contract is the kubeconfig it reaches the member with: CheckKubeconfig
// and RESTConfig (kubeconfig.go) say which kubeconfigs the hub and `rayfleet join` accept.
// Of the repository it imports only shared/ (the fleet API, labels); like all of shared/, never
// hub/, spoke/ or cmd/.
package hubaccess

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// Default names of the hub's identity on a member. They are fixed, not derived from the
// member's name, because a member belongs to one hub. "-access" sets them apart from the hub
// chart's own ServiceAccount and ClusterRole (rayfleet-hub), which run the hub on its cluster.
const (
	// DefaultNamespace holds the hub's ServiceAccount and token on the member; it is the
	// spoke's namespace too.
	DefaultNamespace = labels.DefaultHubNamespace
	// ServiceAccountName is the ServiceAccount the hub acts as on the member.
	ServiceAccountName = "rayfleet-hub-access"
	// ClusterRoleName names both the ClusterRole and the ClusterRoleBinding of the hub.
	ClusterRoleName = "rayfleet-hub-access"
	// LegacyTokenSecretName is the never-expiring token Secret of ServiceAccountName that
	// `rayfleet join` and the spoke chart made before the hub minted its own tokens (token.go);
	// join removes the one it made.
	LegacyTokenSecretName = "rayfleet-hub-access-token"
)

// HubRules are the permissions the hub holds on a member: what propagation, aggregation and
// membership need, and deliberately nothing on Secrets, Pods or other workloads, so that a
// leaked hub kubeconfig cannot read a member's credentials or exec into its Pods.
func HubRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{
			// Propagation applies and deletes member copies; aggregation reads their status.
			APIGroups: []string{rayv1.GroupVersion.Group},
			Resources: []string{"rayservices"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		},
		{
			// A member copy lands in the hub RayService's namespace, created when missing with
			// the member's Pod Security labels; a namespace the hub created before it labelled
			// them is patched with them once no Pod there breaks the level. The member's guard
			// refuses labels looser than the member's.
			APIGroups: []string{corev1.GroupName},
			Resources: []string{"namespaces"},
			Verbs:     []string{"get", "list", "watch", "create", "patch"},
		},
		{
			// Membership mirrors the spoke's heartbeat and capacity.
			APIGroups: []string{fleetv1alpha1.GroupVersion.Group},
			Resources: []string{"clusterreports"},
			Verbs:     []string{"get", "list", "watch"},
		},
	}
}
