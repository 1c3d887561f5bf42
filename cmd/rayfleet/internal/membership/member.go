// Package membership joins member clusters to a RayFleet hub and removes them again: the hub's
// identity on the member (ServiceAccount, RBAC, a bound bootstrap token) with the guard on what that identity may
// run there (shared/hubpolicy), and, on the hub, the kubeconfig Secret the multicluster-runtime
// kubeconfig provider engages plus the MemberCluster that names it.
// It reaches both clusters through their APIs only: of the repository it imports only shared/
// (the fleet API, hubaccess), never hub/ or spoke/.
package membership

import (
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
)

// Names of the hub's identity on a member (see hubaccess).
const (
	// DefaultMemberNamespace holds the hub's ServiceAccount and token on the member unless
	// JoinOptions.MemberNamespace says otherwise; the spoke chart's release namespace.
	DefaultMemberNamespace = hubaccess.DefaultNamespace
	// ServiceAccountName is the ServiceAccount the hub acts as on the member.
	ServiceAccountName = hubaccess.ServiceAccountName
	// ClusterRoleName names both the ClusterRole and the ClusterRoleBinding of the hub.
	ClusterRoleName = hubaccess.ClusterRoleName
	// TokenRoleName names the Role and RoleBinding that let the hub mint its own tokens.
	TokenRoleName = hubaccess.TokenRoleName
	// LegacyTokenSecretName is the never-expiring token Secret that join and the spoke chart
	// made before the hub minted its own tokens; join removes the one it made.
	LegacyTokenSecretName = hubaccess.LegacyTokenSecretName
)

// FieldManager owns, through server-side apply, everything join writes; re-running join
// updates those fields and leaves what others set (taints added by an admin, say) alone.
const FieldManager = "rayfleet-cli"

// ManagedByLabel marks the objects join created. Unjoin deletes only member objects carrying
// it with ManagedByValue, so that a hub identity the spoke chart installed (managed-by=Helm)
// is neither taken over by join nor deleted behind Helm's back.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedByValue is the value of ManagedByLabel on what join created.
const ManagedByValue = "rayfleet"

// ObjectRef names one object of the hub's identity and who manages it.
type ObjectRef struct {
	// Kind is the object's kind, e.g. "ClusterRole".
	Kind string
	// Key is the object's namespace (empty when cluster-scoped) and name.
	Key client.ObjectKey
	// ManagedBy is the object's ManagedByLabel value; empty when it has none.
	ManagedBy string
}

// String is "Kind namespace/name (managed by X)".
func (r ObjectRef) String() string {
	s := r.Kind + " " + r.Key.String()
	if r.Key.Namespace == "" {
		s = r.Kind + " " + r.Key.Name
	}
	if r.ManagedBy != "" {
		s += " (managed by " + r.ManagedBy + ")"
	}
	return s
}

// memberObjects are the hub's guard and identity on a member, in creation order: the guard
// first, so that no token of the hub exists unguarded; join then requests the bootstrap token
// (TokenRequest), which no object holds. allowNodePorts and trafficNamespaces are
// JoinOptions.AllowNodePorts and TrafficNamespaces.
func memberObjects(namespace string, allowNodePorts bool, trafficNamespaces []string) ([]client.Object, error) {
	guard, err := guardObjects(namespace, allowNodePorts, trafficNamespaces)
	if err != nil {
		return nil, err
	}
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{ManagedByLabel: ManagedByValue}}
	}
	return append(guard,
		&corev1.Namespace{ObjectMeta: meta(namespace, "")},
		&corev1.ServiceAccount{ObjectMeta: meta(ServiceAccountName, namespace)},
		&rbacv1.ClusterRole{ObjectMeta: meta(ClusterRoleName, ""), Rules: hubaccess.HubRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: meta(ClusterRoleName, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: namespace}},
		},
		&rbacv1.Role{ObjectMeta: meta(TokenRoleName, namespace), Rules: hubaccess.TokenRules(ServiceAccountName)},
		&rbacv1.RoleBinding{
			ObjectMeta: meta(TokenRoleName, namespace),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: TokenRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: namespace}},
		},
	), nil
}

// guardObjects are the guard join applies with the hub's identity: shared/hubpolicy's defaults
// (the Pod Security baseline level) for the hub's ServiceAccount in namespace, with
// allowNodePorts as Config.AllowNodePorts (the one setting traffic routing needs: a member's
// serve address comes from a LoadBalancer or NodePort serve Service), and trafficNamespaces
// as Config.TrafficNamespaces (the namespaces --traffic-namespace gives the hub its traffic
// Roles in, which the guard then lets it write routes in whoever created them). A member that
// wants other settings installs the spoke chart, whose hubPolicy values set them.
func guardObjects(namespace string, allowNodePorts bool, trafficNamespaces []string) ([]client.Object, error) {
	cfg := hubpolicy.Default()
	cfg.HubUsernames = []string{hubpolicy.HubUsername(namespace, ServiceAccountName)}
	cfg.AllowNodePorts = allowNodePorts
	cfg.TrafficNamespaces = slices.Compact(slices.Sorted(slices.Values(trafficNamespaces)))
	guard, err := hubpolicy.Build(hubpolicy.DefaultName, cfg)
	if err != nil {
		return nil, fmt.Errorf("building the hub's guard: %w", err)
	}
	objs := guard.List()
	for _, obj := range objs {
		obj.SetLabels(map[string]string{ManagedByLabel: ManagedByValue})
	}
	return objs, nil
}

// identityObjects are the objects of the hub's identity and guard that unjoin may remove: a
// legacy token Secret and the bindings first, so that the hub loses access before anything
// else changes, the ServiceAccount after its roles (deleting it invalidates every token minted
// for it), the guard last, so that it outlives every way the hub had in, and its bindings
// before its policies. The namespace is not among them: the spoke runs in it.
func identityObjects(namespace string) []client.Object {
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: LegacyTokenSecretName, Namespace: namespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: TokenRoleName, Namespace: namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: TokenRoleName, Namespace: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccountName, Namespace: namespace}},
	}
	suffixes := []string{hubpolicy.RayServicesSuffix, hubpolicy.NamespacesSuffix, hubpolicy.TrafficSuffix}
	for _, suffix := range suffixes {
		objs = append(objs, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: hubpolicy.DefaultName + suffix}})
	}
	for _, suffix := range suffixes {
		objs = append(objs, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: hubpolicy.DefaultName + suffix}})
	}
	return objs
}

// ownedByJoin reports whether join created obj.
func ownedByJoin(obj client.Object) bool {
	return obj.GetLabels()[ManagedByLabel] == ManagedByValue
}

// refOf names obj, which c has read.
func refOf(c client.Client, obj client.Object) ObjectRef {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := apiutil.GVKForObject(obj, c.Scheme()); err == nil {
		kind = gvk.Kind
	}
	return ObjectRef{Kind: kind, Key: client.ObjectKeyFromObject(obj), ManagedBy: obj.GetLabels()[ManagedByLabel]}
}

// existingIdentity finds a hub identity on the member that join did not create, normally the
// spoke chart's: its ClusterRoleBinding, returned with the ServiceAccount it binds, to be used
// as is. It returns nil when join should apply its own identity, and an error when applying
// would take over objects someone else manages (a chart installed into another namespace, say).
func existingIdentity(ctx context.Context, c client.Client, namespace string) (*ObjectRef, string, error) {
	var binding rbacv1.ClusterRoleBinding
	key := client.ObjectKey{Name: ClusterRoleName}
	err := c.Get(ctx, key, &binding)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", checkNoForeignIdentity(ctx, c, namespace)
	case err != nil:
		return nil, "", fmt.Errorf("reading ClusterRoleBinding %s: %w", ClusterRoleName, err)
	case ownedByJoin(&binding):
		return nil, "", nil
	}
	ref := refOf(c, &binding)
	for _, s := range binding.Subjects {
		if s.Kind != rbacv1.ServiceAccountKind {
			continue
		}
		if s.Namespace != namespace {
			return nil, "", fmt.Errorf("%s binds ServiceAccount %s/%s: pass --member-namespace %s", ref, s.Namespace, s.Name, s.Namespace)
		}
		return &ref, s.Name, nil
	}
	return nil, "", fmt.Errorf("%s exists but binds no ServiceAccount, and join does not take over objects it did not create", ref)
}

// checkNoForeignIdentity fails when, without the hub's ClusterRoleBinding, part of a hub
// identity or guard someone else manages exists: applying would force-own Helm's objects.
// A legacy token Secret is not part of it: join never writes one.
func checkNoForeignIdentity(ctx context.Context, c client.Client, namespace string) error {
	for _, obj := range identityObjects(namespace)[1:] {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading %s: %w", refOf(c, obj), err)
		}
		if ownedByJoin(obj) {
			continue
		}
		return fmt.Errorf("%s exists but ClusterRoleBinding %s does not, and join does not take over objects it did not create",
			refOf(c, obj), ClusterRoleName)
	}
	return nil
}
