package membership

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// UnjoinOptions say which member leaves which hub.
type UnjoinOptions struct {
	// Name of the MemberCluster and of its kubeconfig Secret in HubNamespace.
	Name string
	// HubNamespace holds the kubeconfig Secrets the hub engages.
	HubNamespace string
	// MemberNamespace holds the hub's ServiceAccount and token on the member; empty means
	// DefaultMemberNamespace.
	MemberNamespace string
}

// UnjoinResult is what unjoin left on the member.
type UnjoinResult struct {
	// Kept are objects of the hub's identity on the member that join did not create (the
	// spoke chart's), left in place; the hub's token stays valid while they exist.
	Kept []ObjectRef
}

// Unjoin removes a member from the hub: the MemberCluster first, so that the hub stops placing
// on it while its kubeconfig still works for cleaning up, then the kubeconfig Secret. With a
// member client it also removes the hub's identity there (deleting the ServiceAccount revokes
// every token of it, the bootstrap token and those the hub minted), and then
// the guard, but only the objects join created: an identity the spoke chart installed belongs to Helm and is
// reported as kept. The hub's traffic Roles and RoleBindings (join --traffic-namespace) go too,
// in whatever namespace join made them. The member namespace stays, as the spoke runs in it. Objects already gone
// count as removed, and every object is attempted even when one fails.
func Unjoin(ctx context.Context, hub client.Client, member client.Client, o UnjoinOptions) (*UnjoinResult, error) {
	if o.Name == "" || o.HubNamespace == "" {
		return nil, errors.New("unjoining: a member name and a hub namespace are required")
	}
	var errs []error
	for _, obj := range []client.Object{
		&fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: o.Name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.HubNamespace}},
	} {
		if err := deleteIfPresent(ctx, hub, obj); err != nil {
			errs = append(errs, fmt.Errorf("hub: %w", err))
		}
	}
	res := &UnjoinResult{}
	if member == nil {
		return res, errors.Join(errs...)
	}
	namespace := o.MemberNamespace
	if namespace == "" {
		namespace = DefaultMemberNamespace
	}
	identity := identityObjects(namespace)
	traffic, listErr := trafficObjectsOnMember(ctx, member)
	if listErr != nil {
		errs = append(errs, fmt.Errorf("member %s: %w", o.Name, listErr))
	}
	// A legacy token first, as ever; then the traffic rights, then the rest of the identity.
	objs := append(append(identity[:1:1], traffic...), identity[1:]...)
	for _, obj := range objs {
		kept, err := deleteIfOwned(ctx, member, obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", o.Name, err))
		}
		if kept {
			res.Kept = append(res.Kept, refOf(member, obj))
		}
	}
	return res, errors.Join(errs...)
}

// deleteIfOwned deletes obj when join created it and reports whether it exists but belongs to
// someone else. The delete is preconditioned on the UID read, so that an object the chart
// recreated in between is not deleted either.
func deleteIfOwned(ctx context.Context, c client.Client, obj client.Object) (kept bool, err error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %s: %w", refOf(c, obj), err)
	}
	if !ownedByJoin(obj) {
		return true, nil
	}
	uid := obj.GetUID()
	if err := client.IgnoreNotFound(c.Delete(ctx, obj, client.Preconditions{UID: &uid})); err != nil {
		return false, fmt.Errorf("deleting %s: %w", refOf(c, obj), err)
	}
	return false, nil
}
