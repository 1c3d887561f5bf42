package rayservice

import (
	"context"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/shared/raystatus"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// errNoGatewayAPI is the validation error of an incremental upgrade on a member without
// Gateway API: the upgrade could not route any traffic.
var errNoGatewayAPI = &validation.InvalidRayServiceError{
	Part: validation.RayServiceSpecPart,
	Err: field.Invalid(field.NewPath("spec", "upgradeStrategy", "type"), rayv1.RayServiceNewClusterWithIncrementalUpgrade,
		"needs the Gateway API (gateway.networking.k8s.io/v1 Gateway and HTTPRoute), which is not installed on this "+
			"cluster; install its CRDs and a Gateway controller, or use NewCluster"),
}

// validationStep is one of KubeRay's RayService checks, in KubeRay's order.
type validationStep struct {
	reason string
	check  func(rs *rayv1.RayService) error
}

// validationSteps are KubeRay's two checks, then whether the member can do what the spec asks.
func (r *Reconciler) validationSteps() []validationStep {
	return []validationStep{
		{reasonInvalidMetadata, func(rs *rayv1.RayService) error { return validation.RayServiceMetadata(rs.ObjectMeta) }},
		{reasonInvalidSpec, r.validSpecs.Check},
		{reasonInvalidSpec, func(rs *rayv1.RayService) error {
			if rayspec.IncrementalUpgrade(&rs.Spec) && !r.opts.GatewayAPI {
				return errNoGatewayAPI
			}
			return nil
		}},
	}
}

// validate runs the checks; on the first failure it records a Warning event and sets
// Ready=False/ValidationFailed on the working status, and reports invalid.
func (r *Reconciler) validate(ctx context.Context, s *scope) (invalid bool) {
	rs := s.rs
	for _, step := range r.validationSteps() {
		err := step.check(rs)
		if err == nil {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Invalid RayService", "error", err.Error())
		r.eventf(rs, nil, corev1.EventTypeWarning, step.reason, "%s/%s: %v", rs.Namespace, rs.Name, err)
		rs.Status.ObservedGeneration = rs.Generation
		now := metav1.NewTime(r.clock.Now()).Rfc3339Copy()
		conditions.Set(&rs.Status.Conditions, metav1.Condition{
			Type:               string(rayv1.RayServiceReady),
			Status:             metav1.ConditionFalse,
			Reason:             string(rayv1.RayServiceValidationFailed),
			Message:            err.Error(),
			ObservedGeneration: rs.Generation,
			LastTransitionTime: now,
		})
		rs.Status.ServiceStatus = rayv1.NotRunning
		return true
	}
	return false
}

// finishInvalid writes the status of an invalid RayService. It is not requeued: only a new
// spec can make it valid, and a spec change brings a reconcile of its own.
func (r *Reconciler) finishInvalid(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !raystatus.RayServiceChanged(&s.original.Status, &s.rs.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.writeStatus(ctx, s, s.rs.Status); err != nil {
		return r.retry(ctx, "write status", err)
	}
	return ctrl.Result{}, nil
}
