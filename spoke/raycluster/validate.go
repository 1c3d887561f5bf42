package raycluster

import (
	"context"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rayfleet/rayfleet/shared/validation"
)

// validationStep is one of KubeRay's four RayCluster checks, in the order KubeRay runs them.
type validationStep struct {
	what    string
	reason  string
	check   func(rc *rayv1.RayCluster) error
	requeue bool
}

// validationSteps: the first three describe user input that only a new generation can fix, so
// they do not requeue; an inconsistent status may be repaired by the next status write.
var validationSteps = []validationStep{
	{what: "metadata", reason: reasonInvalidMetadata,
		check: func(rc *rayv1.RayCluster) error { return validation.RayClusterMetadata(rc.ObjectMeta) }},
	{what: "spec", reason: reasonInvalidSpec,
		check: func(rc *rayv1.RayCluster) error { return validation.RayClusterSpec(&rc.Spec, rc.Annotations) }},
	{what: "upgradeStrategy", reason: reasonInvalidSpec,
		check: validation.RayClusterUpgradeOptions},
	{what: "status", reason: reasonInvalidStatus, requeue: true,
		check: func(rc *rayv1.RayCluster) error { return validation.RayClusterStatus(&rc.Status) }},
}

// validate runs the checks; stop means the reconcile ends here with res.
func (r *Reconciler) validate(ctx context.Context, rc *rayv1.RayCluster) (res ctrl.Result, stop bool) {
	for _, step := range validationSteps {
		err := step.check(rc)
		if err == nil {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Invalid RayCluster "+step.what, "error", err.Error())
		r.eventf(rc, nil, corev1.EventTypeWarning, step.reason,
			"The RayCluster %s is invalid %s/%s: %v", step.what, rc.Namespace, rc.Name, err)
		if step.requeue {
			return ctrl.Result{RequeueAfter: requeueSoon}, true
		}
		return ctrl.Result{}, true
	}
	return ctrl.Result{}, false
}
