package builder

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// ownedLabels are the labels KubeRay puts on the autoscaler's RBAC objects.
func ownedLabels(rc *rayv1.RayCluster) map[string]string {
	return map[string]string{
		labels.Cluster:   rc.Name,
		labels.AppName:   labels.ApplicationNameValue,
		labels.CreatedBy: labels.CreatedByValue,
	}
}

// ownedMeta is the metadata of an object rc controls.
func ownedMeta(rc *rayv1.RayCluster, name string, l map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       rc.Namespace,
		Labels:          l,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))},
	}
}

// UserProvidesServiceAccount reports whether the head template names its own ServiceAccount. KubeRay
// then expects the user to create it (and reports an error while it is missing) instead of
// creating AutoscalerServiceAccount: an operator-created one would be deleted with an old cluster
// during a RayService upgrade while the new cluster still uses it.
func UserProvidesServiceAccount(rc *rayv1.RayCluster) bool {
	return rc.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName != ""
}

// AutoscalerServiceAccount builds the ServiceAccount the autoscaling head runs as, named after the
// head template's serviceAccountName or else the cluster (see UserProvidesServiceAccount).
func AutoscalerServiceAccount(rc *rayv1.RayCluster) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: ownedMeta(rc, AutoscalerServiceAccountName(rc), ownedLabels(rc))}
}

// AutoscalerRole builds the Role the autoscaler needs: read and patch Pods (resize in place, too)
// and read and patch its RayCluster to change replicas and workersToDelete.
//
// KubeRay's Role lets the autoscaler get and patch every RayCluster of the namespace; code in
// the head Pod (the tenant's) holds that token. Here the RayCluster rule names its own cluster:
// the Ray autoscaler only ever reads and patches rayclusters/<its name>, which resourceNames
// allows for get and patch. The Pod rules stay namespace-wide: list and watch cannot be scoped
// by name, and the autoscaler's Pods have generated names.
func AutoscalerRole(rc *rayv1.RayCluster) *rbacv1.Role {
	return &rbacv1.Role{
		ObjectMeta: ownedMeta(rc, AutoscalerRoleName(rc), ownedLabels(rc)),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
			{
				APIGroups: []string{rayv1.GroupVersion.Group}, Resources: []string{"rayclusters"},
				ResourceNames: []string{rc.Name}, Verbs: []string{"get", "patch"},
			},
		},
	}
}

// AutoscalerRoleBinding binds AutoscalerRole to the autoscaler's ServiceAccount.
func AutoscalerRoleBinding(rc *rayv1.RayCluster) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: ownedMeta(rc, AutoscalerRoleName(rc), ownedLabels(rc)),
		Subjects: []rbacv1.Subject{{
			Kind:      rbacv1.ServiceAccountKind,
			Name:      AutoscalerServiceAccountName(rc),
			Namespace: rc.Namespace,
		}},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: AutoscalerRoleName(rc)},
	}
}
