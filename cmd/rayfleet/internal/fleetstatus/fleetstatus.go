// Package fleetstatus reads the hub's view of the fleet and prints it as two tables: where each
// RayService runs and how each copy is doing, and how each member cluster is doing.
// It reads through the hub's API only: of the repository it imports only the fleet API, never
// hub/ or spoke/.
package fleetstatus

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Fleet is what the status tables are printed from.
type Fleet struct {
	// Bindings are the hub's RayServiceBindings, one per placed RayService.
	Bindings []fleetv1alpha1.RayServiceBinding
	// Members are the hub's MemberClusters.
	Members []fleetv1alpha1.MemberCluster
}

// Read lists the bindings of namespace (every namespace when empty) and all members from the
// hub.
func Read(ctx context.Context, hub client.Reader, namespace string) (*Fleet, error) {
	var bindings fleetv1alpha1.RayServiceBindingList
	if err := hub.List(ctx, &bindings, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing RayServiceBindings: %w", err)
	}
	var members fleetv1alpha1.MemberClusterList
	if err := hub.List(ctx, &members); err != nil {
		return nil, fmt.Errorf("listing MemberClusters: %w", err)
	}
	return &Fleet{Bindings: bindings.Items, Members: members.Items}, nil
}

// sortedBindings orders bindings by namespace and name, so the output does not depend on the
// order the API server lists them in.
func sortedBindings(in []fleetv1alpha1.RayServiceBinding) []fleetv1alpha1.RayServiceBinding {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b fleetv1alpha1.RayServiceBinding) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// sortedMembers orders members by name.
func sortedMembers(in []fleetv1alpha1.MemberCluster) []fleetv1alpha1.MemberCluster {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b fleetv1alpha1.MemberCluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}
