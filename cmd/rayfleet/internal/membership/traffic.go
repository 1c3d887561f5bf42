package membership

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

// TrafficRoleName names the Role and RoleBinding of the hub's rights in a traffic namespace.
const TrafficRoleName = hubaccess.TrafficRoleName

// trafficObjects are the Role and RoleBinding giving the hub's ServiceAccount (saNamespace/
// saName) hubaccess.TrafficRules in namespace, the Role first so the binding never points at
// nothing.
func trafficObjects(namespace, saNamespace, saName string) []client.Object {
	meta := metav1.ObjectMeta{Name: TrafficRoleName, Namespace: namespace, Labels: map[string]string{ManagedByLabel: ManagedByValue}}
	return []client.Object{
		&rbacv1.Role{ObjectMeta: meta, Rules: hubaccess.TrafficRules()},
		&rbacv1.RoleBinding{
			ObjectMeta: *meta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: TrafficRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: saNamespace}},
		},
	}
}

// trafficClusterObjects are the ClusterRole and ClusterRoleBinding giving the hub's
// ServiceAccount hubaccess.TrafficRules in every namespace (join --traffic-all-namespaces).
func trafficClusterObjects(saNamespace, saName string) []client.Object {
	meta := metav1.ObjectMeta{Name: TrafficRoleName, Labels: map[string]string{ManagedByLabel: ManagedByValue}}
	return []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: meta, Rules: hubaccess.TrafficRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: *meta.DeepCopy(),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TrafficRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: saName, Namespace: saNamespace}},
		},
	}
}

// planTraffic checks, before join writes anything, that the traffic namespace exists, and
// returns the traffic objects to apply there (planTrafficObjects).
func planTraffic(ctx context.Context, c client.Client, namespace, saNamespace, saName string) ([]client.Object, []ObjectRef, error) {
	var ns corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("traffic namespace %s does not exist on the member: create it (the namespace of the RayServices whose routes the hub writes there) or grant every namespace", namespace)
		}
		return nil, nil, fmt.Errorf("reading traffic namespace %s: %w", namespace, err)
	}
	return planTrafficObjects(ctx, c, trafficObjects(namespace, saNamespace, saName))
}

// planTrafficObjects returns objs to apply, or none when a Role of that name that join did not
// create is there already (the spoke chart's hubTraffic), which is then used as is and returned.
func planTrafficObjects(ctx context.Context, c client.Client, objs []client.Object) ([]client.Object, []ObjectRef, error) {
	for _, obj := range objs {
		live := obj.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), live)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, nil, fmt.Errorf("reading %s: %w", refOf(c, obj), err)
		case !ownedByJoin(live):
			return nil, []ObjectRef{refOf(c, live)}, nil
		}
	}
	return objs, nil, nil
}

// trafficObjectsOnMember are the traffic RoleBindings and Roles in any namespace and the
// traffic ClusterRoleBinding and ClusterRole, bindings first so that the hub loses its rights
// before the Roles go; unjoin deletes those join made. They are found by name, as join may
// have been run with several traffic namespaces.
func trafficObjectsOnMember(ctx context.Context, c client.Client) ([]client.Object, error) {
	byName := client.MatchingFields{"metadata.name": TrafficRoleName}
	var bindings rbacv1.RoleBindingList
	if err := c.List(ctx, &bindings, byName); err != nil {
		return nil, fmt.Errorf("listing RoleBindings %s: %w", TrafficRoleName, err)
	}
	var roles rbacv1.RoleList
	if err := c.List(ctx, &roles, byName); err != nil {
		return nil, fmt.Errorf("listing Roles %s: %w", TrafficRoleName, err)
	}
	var out []client.Object
	for i := range bindings.Items {
		out = append(out, &bindings.Items[i])
	}
	out = append(out, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: TrafficRoleName}})
	for i := range roles.Items {
		out = append(out, &roles.Items[i])
	}
	return append(out, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: TrafficRoleName}}), nil
}
