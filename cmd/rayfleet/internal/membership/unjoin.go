package membership

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Unjoin removes a member from the hub: the MemberCluster first, so that the hub stops placing
// on it while its kubeconfig still works for cleaning up, then the kubeconfig Secret. With a
// member client it also removes the hub's identity there, which revokes the token; the member
// namespace stays, as the spoke runs in it. Objects already gone count as removed, and every
// object is attempted even when one fails.
func Unjoin(ctx context.Context, hub client.Client, member client.Client, name, hubNamespace string) error {
	if name == "" || hubNamespace == "" {
		return errors.New("unjoining: a member name and a hub namespace are required")
	}
	var errs []error
	for _, obj := range []client.Object{
		&fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hubNamespace}},
	} {
		if err := deleteIfPresent(ctx, hub, obj); err != nil {
			errs = append(errs, fmt.Errorf("hub: %w", err))
		}
	}
	if member == nil {
		return errors.Join(errs...)
	}
	for _, obj := range []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: TokenSecretName, Namespace: MemberNamespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName, Namespace: MemberNamespace}},
	} {
		if err := deleteIfPresent(ctx, member, obj); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
