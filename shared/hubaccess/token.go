package hubaccess

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// TokenRoleName names the Role and RoleBinding, in the namespace of the hub's ServiceAccount
// on a member, that let the hub mint tokens for that ServiceAccount and no other.
const TokenRoleName = "rayfleet-hub-access-token"

// Lifetimes of the hub's tokens on a member. The kubeconfig `rayfleet join` writes holds a
// bootstrap token (DefaultBootstrapTokenTTL); with it the hub mints tokens of TokenTTL for
// itself and replaces each at TokenRefreshFraction of its life, always minting the next with
// the one it holds, so the bootstrap token is needed again only when the hub restarts.
const (
	// TokenTTL is the lifetime the hub asks for its own tokens.
	TokenTTL = time.Hour
	// TokenRefreshFraction of a token's lifetime passes before the hub mints the next.
	TokenRefreshFraction = 0.8
	// DefaultBootstrapTokenTTL is the lifetime of the token `rayfleet join` writes into the
	// hub's kubeconfig: how long after a join the hub may still (re)start with it. Re-running
	// join rotates it, and the hub picks it up without re-engaging the member.
	DefaultBootstrapTokenTTL = 365 * 24 * time.Hour
	// MinTokenTTL is the shortest lifetime Kubernetes' TokenRequest grants.
	MinTokenTTL = 10 * time.Minute
)

// TokenRules are the hub's rights in its ServiceAccount's namespace on a member: minting
// tokens for serviceAccount (TokenRequest), which the hub refreshes its credentials with. The
// resource name keeps it from minting for any other ServiceAccount, the spoke's included.
func TokenRules(serviceAccount string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{
		APIGroups:     []string{corev1.GroupName},
		Resources:     []string{"serviceaccounts/token"},
		ResourceNames: []string{serviceAccount},
		Verbs:         []string{"create"},
	}}
}
