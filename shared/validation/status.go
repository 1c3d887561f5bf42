package validation

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RayClusterStatus rejects a status that is both suspending and suspended: the suspend state
// machine can never get there, so the status was written by someone else and cannot be trusted.
func RayClusterStatus(status *rayv1.RayClusterStatus) error {
	suspending := meta.IsStatusConditionTrue(status.Conditions, string(rayv1.RayClusterSuspending))
	suspended := meta.IsStatusConditionTrue(status.Conditions, string(rayv1.RayClusterSuspended))
	if suspending && suspended {
		return field.Forbidden(field.NewPath("status", "conditions"), string(rayv1.RayClusterSuspending)+
			" and "+string(rayv1.RayClusterSuspended)+" must not both be True")
	}
	return nil
}
