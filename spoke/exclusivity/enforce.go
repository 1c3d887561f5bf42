package exclusivity

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/conditions"
)

// ConditionControllerConflict is the condition the spoke sets on a RayCluster or RayService it
// leaves alone because another controller is active (True, with ReasonAnotherOperatorActive or
// ReasonAnotherSpokeActive). It is RayFleet's, hence the prefix: KubeRay's condition types have
// none. It is removed when the spoke resumes, so a RayCluster it reconciles has KubeRay's
// conditions only.
const ConditionControllerConflict = "rayfleet.io/ControllerConflict"

// ReasonReconcileResumed is the Normal event of a RayCluster or RayService the spoke reconciles
// again after giving way to another controller.
const ReasonReconcileResumed = "ReconcileResumed"

// actionReconcile is the events API action of the spoke's conflict events.
const actionReconcile = "Reconcile"

// waitingRequeue is how soon a reconcile is retried while the gate has no decision yet (at
// start: the Claimer's first round takes one round trip).
const waitingRequeue = time.Second

// EnforcerOptions configure an Enforcer.
type EnforcerOptions struct {
	// Gate holds the decision; a nil gate makes a nil Enforcer, which admits everything.
	Gate *Gate
	// Client writes the condition; Recorder records the events.
	Client   client.Client
	Recorder events.EventRecorder
	// FieldManager owns the condition.
	FieldManager string
	// Clock times the memory of the condition writes; nil means the real clock.
	Clock clock.PassiveClock
}

// Enforcer applies the gate's verdict at the top of a reconcile. A nil *Enforcer admits
// everything (a reconciler built without a gate, as in tests of its own).
type Enforcer struct {
	opts EnforcerOptions
	// writes remembers condition writes until the cache shows them, so that a reconcile in
	// between neither writes nor records the event twice.
	writes *cachememo.Writes
}

// NewEnforcer returns an Enforcer for opts, nil when opts.Gate is nil.
func NewEnforcer(opts EnforcerOptions) *Enforcer {
	if opts.Gate == nil {
		return nil
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Enforcer{opts: opts, writes: cachememo.NewWrites(opts.Clock)}
}

// Admit decides whether the reconcile of obj (a RayCluster or RayService, whose status
// conditions are *conds) may go on. When it may, proceed is true, after the conflict
// condition, if obj still carries it, was removed (obj is updated in place). When it may not,
// the reconcile returns res and err: the condition is set (once, with a Warning event) and
// nothing else is written.
func (e *Enforcer) Admit(ctx context.Context, obj client.Object, conds *[]metav1.Condition) (proceed bool, res ctrl.Result, err error) {
	if e == nil {
		return true, ctrl.Result{}, nil
	}
	v := e.opts.Gate.Verdict(obj.GetNamespace())
	switch {
	case v.Allowed:
		if err := e.clear(ctx, obj, conds); err != nil {
			return e.retry(ctx, obj, err)
		}
		return true, ctrl.Result{}, nil
	case v.Conflict == nil:
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting to know whether another controller is active", "waiting", v.Waiting)
		return false, ctrl.Result{RequeueAfter: waitingRequeue}, nil
	default:
		if err := e.mark(ctx, obj, conds, *v.Conflict); err != nil {
			return e.retry(ctx, obj, err)
		}
		return false, ctrl.Result{RequeueAfter: e.opts.Gate.recheck}, nil
	}
}

// mark sets the conflict condition on obj, with a Warning event, unless it already says so.
func (e *Enforcer) mark(ctx context.Context, obj client.Object, conds *[]metav1.Condition, c Conflict) error {
	cond := metav1.Condition{
		Type:               ConditionControllerConflict,
		Status:             metav1.ConditionTrue,
		Reason:             c.Reason,
		Message:            c.Message(),
		ObservedGeneration: obj.GetGeneration(),
		LastTransitionTime: metav1.NewTime(e.opts.Clock.Now()),
	}
	memo := cond.Reason + "/" + cond.Message
	if cur := meta.FindStatusCondition(*conds, cond.Type); (cur != nil && cur.Status == cond.Status &&
		cur.Reason == cond.Reason && cur.Message == cond.Message) || e.writes.Recent(memoKey(obj), memo) {
		return nil
	}
	if err := e.patch(ctx, obj, conds, func(c *[]metav1.Condition) { conditions.Set(c, cond) }); err != nil {
		return err
	}
	e.writes.Note(memoKey(obj), memo)
	e.opts.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, actionReconcile, "%s", cond.Message)
	ctrl.LoggerFrom(ctx).Info("Left alone: another controller is active", "reason", c.Reason)
	return nil
}

// clear removes the conflict condition from obj, with a Normal event, if it carries it.
func (e *Enforcer) clear(ctx context.Context, obj client.Object, conds *[]metav1.Condition) error {
	if meta.FindStatusCondition(*conds, ConditionControllerConflict) == nil || e.writes.Recent(memoKey(obj), "cleared") {
		return nil
	}
	err := e.patch(ctx, obj, conds, func(c *[]metav1.Condition) {
		meta.RemoveStatusCondition(c, ConditionControllerConflict)
	})
	if err != nil {
		return err
	}
	e.writes.Note(memoKey(obj), "cleared")
	e.opts.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReconcileResumed, actionReconcile,
		"No other controller is active any more: the spoke reconciles this object again")
	ctrl.LoggerFrom(ctx).Info("Reconciling again: no other controller is active")
	return nil
}

// patch changes obj's conditions with change and writes them as a merge patch of the status
// with optimistic locking: the other controller may be writing the status too, and a patch
// computed from a stale read must not undo its write.
func (e *Enforcer) patch(ctx context.Context, obj client.Object, conds *[]metav1.Condition, change func(*[]metav1.Condition)) error {
	base, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %s/%s: not a client.Object", obj.GetNamespace(), obj.GetName())
	}
	change(conds)
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := e.opts.Client.Status().Patch(ctx, obj, patch, client.FieldOwner(e.opts.FieldManager)); err != nil {
		return fmt.Errorf("writing condition %s of %T %s/%s: %w", ConditionControllerConflict, obj,
			obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// retry ends a reconcile whose condition write failed: a conflict or a deleted object is
// looked at again soon, anything else is returned for the controller's backoff.
func (e *Enforcer) retry(ctx context.Context, obj client.Object, err error) (proceed bool, res ctrl.Result, _ error) {
	switch {
	case apierrors.IsNotFound(err):
		return false, ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Conflict writing the controller-conflict condition; retrying",
			"object", client.ObjectKeyFromObject(obj).String())
		return false, ctrl.Result{RequeueAfter: waitingRequeue}, nil
	default:
		return false, ctrl.Result{}, err
	}
}

// memoKey keys the memory of obj's condition writes by UID: a recreated object is another.
func memoKey(obj client.Object) string { return "controller-conflict/" + string(obj.GetUID()) }
