// Package rayspec answers the questions about a RayCluster spec that validation, pod building
// and both reconcilers ask: is autoscaling on, is GCS fault tolerance on, which auth mode; and
// the hashes the hub and the spoke compare to tell which cluster spec and Serve config run.
// Of the repository it imports only shared/labels; like all of shared/, never hub/, spoke/ or
// cmd/.
package rayspec

import (
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Autoscaling reports whether the in-tree Ray autoscaler runs as a head sidecar.
func Autoscaling(spec *rayv1.RayClusterSpec) bool {
	return spec != nil && spec.EnableInTreeAutoscaling != nil && *spec.EnableInTreeAutoscaling
}

// AutoscalerV2 reports whether autoscalerOptions select the v2 autoscaler.
func AutoscalerV2(spec *rayv1.RayClusterSpec) bool {
	return spec != nil && spec.AutoscalerOptions != nil && spec.AutoscalerOptions.Version != nil &&
		*spec.AutoscalerOptions.Version == rayv1.AutoscalerVersionV2
}

// GCSFaultTolerance reports whether GCS fault tolerance is on, through the options or the
// legacy ray.io/ft-enabled annotation.
func GCSFaultTolerance(spec *rayv1.RayClusterSpec, annotations map[string]string) bool {
	if spec != nil && spec.GcsFaultToleranceOptions != nil {
		return true
	}
	return strings.EqualFold(annotations[labels.FTEnabled], labels.True)
}

// TokenAuth reports whether Ray token authentication is on.
func TokenAuth(spec *rayv1.RayClusterSpec) bool {
	return spec != nil && spec.AuthOptions != nil && spec.AuthOptions.Mode == rayv1.AuthModeToken
}

// K8sTokenAuth reports whether Ray delegates authentication to Kubernetes ServiceAccount tokens.
func K8sTokenAuth(opts *rayv1.AuthOptions) bool {
	return opts != nil && opts.EnableK8sTokenAuth != nil && *opts.EnableK8sTokenAuth
}

// MultiHost reports whether any worker group places a replica on several hosts.
func MultiHost(spec *rayv1.RayClusterSpec) bool {
	for i := range spec.WorkerGroupSpecs {
		if spec.WorkerGroupSpecs[i].NumOfHosts > 1 {
			return true
		}
	}
	return false
}

// ManagedByOther reports whether spec.managedBy hands the cluster to another controller.
func ManagedByOther(managedBy *string) bool {
	return managedBy != nil && *managedBy != "" && *managedBy != labels.ControllerName
}

// Suspended reports whether the whole cluster is asked to suspend.
func Suspended(spec *rayv1.RayClusterSpec) bool {
	return spec.Suspend != nil && *spec.Suspend
}
