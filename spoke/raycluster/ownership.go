package raycluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/spoke/builder"
)

// reasonOwnershipConflict is the event of an object left alone because the RayCluster does not
// control it. KubeRay has none: it takes any object of the expected name for its own.
const reasonOwnershipConflict = "OwnershipConflict"

// ownership reports whether existing, an object of kind the reconcile would write, is the
// RayCluster's; when it is not, the conflict is recorded (event and OwnershipConflict) and the
// caller leaves the object alone.
func (r *Reconciler) ownership(s *scope, existing client.Object, kind string) bool {
	why := builder.NotControlled(existing, kind, s.cluster, "RayCluster")
	if why == "" {
		return true
	}
	s.conflicts = append(s.conflicts, why)
	r.eventf(s.cluster, existing, corev1.EventTypeWarning, reasonOwnershipConflict, "%s; the spoke leaves it as it is", why)
	return false
}

// repairRole brings an existing Role the RayCluster controls to desired's rules: Roles made
// before the RayCluster rule named its cluster let the autoscaler patch every RayCluster of the
// namespace, and an upgrade must take that away without recreating anything.
func (r *Reconciler) repairRole(ctx context.Context, s *scope, existing, desired *rbacv1.Role) error {
	if equality.Semantic.DeepEqual(existing.Rules, desired.Rules) {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Rules = desired.Rules
	if err := r.client.Patch(ctx, updated, client.MergeFrom(existing), client.FieldOwner(fieldManager)); err != nil {
		r.eventf(s.cluster, existing, corev1.EventTypeWarning, reasonFailedToUpdateRole, "Failed updating role %s/%s: %v",
			existing.Namespace, existing.Name, err)
		return fmt.Errorf("update the rules of Role %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	r.eventf(s.cluster, existing, corev1.EventTypeNormal, reasonUpdatedRole, "Updated role %s/%s", existing.Namespace, existing.Name)
	return nil
}
