// Package validation holds the checks KubeRay v1.6.2 runs on a RayCluster before reconciling it,
// in KubeRay's order and with KubeRay's rules, so that a cluster the spoke rejects is one KubeRay
// would reject too, and the hub can refuse it before placing it anywhere.
//
// Each function returns the first rule that fails (as KubeRay does) as a *field.Error that names
// the field and the offending value; only the label syntax check reports every bad label at once.
//
// Of the repository it imports only shared/ (labels, rayspec); like all of shared/, never hub/,
// spoke/ or cmd/.
package validation

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxRayClusterNameLength is the longest RayCluster name: the longest Service made for a cluster
// is "<name>-serve-svc", and a Service name is a 63-character DNS label.
const MaxRayClusterNameLength = 63 - len("-serve-svc")

// RayClusterMetadata checks the cluster's name: short enough for its Services' names and a
// DNS-1035 label (Service names must be).
func RayClusterMetadata(objMeta metav1.ObjectMeta) error {
	path := field.NewPath("metadata", "name")
	if len(objMeta.Name) > MaxRayClusterNameLength {
		return field.Invalid(path, objMeta.Name, fmt.Sprintf(
			"must be no more than %d characters (got %d), so that \"<name>-serve-svc\" is a valid Service name",
			MaxRayClusterNameLength, len(objMeta.Name)))
	}
	if msgs := k8svalidation.IsDNS1035Label(objMeta.Name); len(msgs) > 0 {
		return field.Invalid(path, objMeta.Name, "must be a valid DNS-1035 label: "+joinMessages(msgs))
	}
	return nil
}
