// Package membership joins member clusters to a RayFleet hub and removes them again: the hub's
// identity on the member (ServiceAccount, RBAC, token) and, on the hub, the kubeconfig Secret the
// multicluster-runtime kubeconfig provider engages plus the MemberCluster that names it.
package membership

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

// Names of the hub's identity on a member (see hubaccess).
const (
	// MemberNamespace holds the hub's ServiceAccount and token on the member.
	MemberNamespace = hubaccess.DefaultNamespace
	// ServiceAccountName is the ServiceAccount the hub acts as on the member.
	ServiceAccountName = hubaccess.ServiceAccountName
	// ClusterRoleName names both the ClusterRole and the ClusterRoleBinding of the hub.
	ClusterRoleName = hubaccess.ClusterRoleName
	// TokenSecretName is the long-lived token Secret of ServiceAccountName.
	TokenSecretName = hubaccess.TokenSecretName
)

// Hub-side keys.
const (
	// ProviderSecretLabel is the label the multicluster-runtime kubeconfig provider selects
	// Secrets by (its DefaultKubeconfigSecretLabel), with the value "true". The provider names
	// the engaged cluster after the Secret, hence a Secret named like the MemberCluster.
	ProviderSecretLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"
	// KubeconfigKey is the Secret key holding the kubeconfig: the provider's default key and
	// the MemberCluster's default alike.
	KubeconfigKey = fleetv1alpha1.DefaultKubeconfigKey
)

// FieldManager owns, through server-side apply, everything join writes; re-running join
// updates those fields and leaves what others set (taints added by an admin, say) alone.
const FieldManager = "rayfleet-cli"

// managedByLabel marks the objects join created so that an admin can find them.
const managedByLabel = "app.kubernetes.io/managed-by"

// managedByValue is the value of managedByLabel.
const managedByValue = "rayfleet"

// memberObjects are the hub's identity on a member, in creation order (a Secret's
// ServiceAccount must exist before the token controller fills it).
func memberObjects() []client.Object {
	meta := func(name, namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{managedByLabel: managedByValue}}
	}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: meta(MemberNamespace, "")},
		&corev1.ServiceAccount{ObjectMeta: meta(ServiceAccountName, MemberNamespace)},
		&rbacv1.ClusterRole{ObjectMeta: meta(ClusterRoleName, ""), Rules: hubaccess.HubRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: meta(ClusterRoleName, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: MemberNamespace}},
		},
		tokenSecret(),
	}
}

// tokenSecret asks the token controller for a long-lived token of ServiceAccountName: bound
// tokens expire, and the hub must keep reaching the member without the CLI running again.
func tokenSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        TokenSecretName,
			Namespace:   MemberNamespace,
			Labels:      map[string]string{managedByLabel: managedByValue},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: ServiceAccountName},
		},
		Type: corev1.SecretTypeServiceAccountToken,
	}
}
