// Package policy keeps each PlacementPolicy's Accepted condition: whether the hub can plan and
// propagate with it. Check is the one validity check of a policy: the hub RayService reconciler
// (hub/fleet) runs it before placing with the policy and places nothing while it fails; this
// controller tells the policy's author, on the policy itself, before any RayService names it.
// It imports shared/ and hub/propagation (overrides are checked as propagation applies them),
// never hub/fleet, spoke/, shared/localfleet or, outside tests, shared/testing.
package policy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=placementpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=placementpolicies/status,verbs=get;patch

// conflictRequeue retries a status write that lost a race: someone else wrote first.
const conflictRequeue = time.Second

// Check returns why the hub cannot use the policy, nil when it can. The API server's schema
// already holds the shapes; what it cannot see is a selector operator it does not know, or an
// override patch that would leave an invalid RayService spec.
func Check(pp *fleetv1alpha1.PlacementPolicy) error {
	if pp.Spec.ClusterSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(pp.Spec.ClusterSelector); err != nil {
			return fmt.Errorf("invalid clusterSelector: %w", err)
		}
	}
	if err := propagation.CheckOverrides(pp.Spec.Overrides); err != nil {
		return fmt.Errorf("overrides: %w", err)
	}
	if _, err := rollout.StrategyOf(pp.Spec.Rollout); err != nil {
		return fmt.Errorf("rollout: %w", err)
	}
	return nil
}

// Accepted is the Accepted condition for the outcome of Check.
func Accepted(pp *fleetv1alpha1.PlacementPolicy, err error) metav1.Condition {
	c := metav1.Condition{
		Type:               fleetv1alpha1.ConditionAccepted,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: pp.Generation,
		Reason:             fleetv1alpha1.ReasonPolicyValid,
		Message:            "the hub can place with this policy",
	}
	if err != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, fleetv1alpha1.ReasonPolicyInvalid, err.Error()
	}
	return c
}

// Reconciler writes the Accepted condition of PlacementPolicies on the hub.
type Reconciler struct {
	client   client.Client
	recorder events.EventRecorder
}

// New returns a Reconciler writing through c and recording events with recorder (may be nil).
func New(c client.Client, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{client: c, recorder: recorder}
}

// SetupWithManager registers the reconciler with the hub's local manager. Only spec changes
// matter: the condition is a function of the spec.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("placementpolicy").
		For(&fleetv1alpha1.PlacementPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the PlacementPolicy controller: %w", err)
	}
	return nil
}

// Reconcile checks one policy and writes its condition when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pp fleetv1alpha1.PlacementPolicy
	if err := r.client.Get(ctx, req.NamespacedName, &pp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	checkErr := Check(&pp)
	next := Accepted(&pp, checkErr)
	prev := meta.FindStatusCondition(pp.Status.Conditions, fleetv1alpha1.ConditionAccepted)
	if prev != nil && prev.Status == next.Status && prev.Reason == next.Reason && prev.Message == next.Message &&
		prev.ObservedGeneration == next.ObservedGeneration && pp.Status.ObservedGeneration == pp.Generation {
		return ctrl.Result{}, nil
	}
	orig := pp.DeepCopy()
	meta.SetStatusCondition(&pp.Status.Conditions, next)
	pp.Status.ObservedGeneration = pp.Generation
	if err := r.client.Status().Patch(ctx, &pp, client.MergeFrom(orig), client.FieldOwner(labels.HubFieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: conflictRequeue}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching status of PlacementPolicy %s: %w", req.NamespacedName, err)
	}
	if r.recorder != nil && (prev == nil || prev.Status != next.Status) {
		eventType := corev1.EventTypeNormal
		if next.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.recorder.Eventf(&pp, nil, eventType, next.Reason, "Validate", "%s", next.Message)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("updated PlacementPolicy status", "accepted", next.Status)
	return ctrl.Result{}, nil
}
