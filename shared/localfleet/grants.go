package localfleet

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// UngrantedNamespaceLabel marks a hub namespace the local fleet's grant leaves out, for tests
// of what a namespace without a grant gets (nothing).
const UngrantedNamespaceLabel = "localfleet.rayfleet.io/ungranted"

// GrantName is the NamespaceGrant the local fleet makes.
const GrantName = "localfleet-all"

// Grant is the local fleet's NamespaceGrant: every namespace but those labelled
// UngrantedNamespaceLabel may use every member and route anywhere, as a one-team fleet would
// be set up.
func Grant() *fleetv1alpha1.NamespaceGrant {
	return &fleetv1alpha1.NamespaceGrant{
		ObjectMeta: metav1.ObjectMeta{Name: GrantName},
		Spec: fleetv1alpha1.NamespaceGrantSpec{
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: UngrantedNamespaceLabel, Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
			Members: &fleetv1alpha1.MemberGrant{ClusterSelector: &metav1.LabelSelector{}},
			Traffic: []fleetv1alpha1.TrafficGrant{{
				Cluster:      fleetv1alpha1.AnyName,
				Gateways:     []fleetv1alpha1.GatewayGrant{{Namespace: fleetv1alpha1.AnyName, Name: fleetv1alpha1.AnyName}},
				Hostnames:    []string{fleetv1alpha1.AnyName},
				PathPrefixes: []string{"/"},
			}},
		},
	}
}

// Grant creates the local fleet's NamespaceGrant (Grant) on the hub: Start does, unless
// Options.NoGrant left it for the caller; one already there is left as it is.
func (f *Fleet) Grant(ctx context.Context) error {
	return CreateGrant(ctx, f.Hub.Client)
}

// CreateGrant creates Grant through hub, a hub client; one already there (a fleet started
// again on its state) is left as it is.
func CreateGrant(ctx context.Context, hub client.Client) error {
	if err := hub.Create(ctx, Grant()); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating NamespaceGrant %s on the hub: %w", GrantName, err)
	}
	return nil
}
