package rollout

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// ErrNothingToApprove is wrapped by Approve's error when no stage can be approved.
var ErrNothingToApprove = errors.New("nothing awaits approval")

// ErrNothingToUndo is wrapped by Undo's error when the chosen revision is the spec already.
var ErrNothingToUndo = errors.New("nothing to undo")

// Paused says whether the hub RayService is annotated paused.
func (v *View) Paused() bool { return v.Service.Annotations[labels.Paused] == "true" }

// SetPaused annotates the hub RayService paused, or removes the annotation, with a merge patch
// touching that key only; false when there was nothing to change.
func SetPaused(ctx context.Context, c client.Client, v *View, paused bool) (bool, error) {
	_, annotated := v.Service.Annotations[labels.Paused]
	if paused == v.Paused() && (paused || !annotated) {
		return false, nil
	}
	var value any // null removes the key
	if paused {
		value = "true"
	}
	if err := patchAnnotation(ctx, c, v.Service, labels.Paused, value); err != nil {
		return false, fmt.Errorf("annotating RayService %s %s=%v: %w", v.Key(), labels.Paused, value, err)
	}
	return true, nil
}

// patchAnnotation sets (or, with nil, removes) one annotation of obj with a merge patch, so no
// other key, and nothing the hub owns, is touched.
func patchAnnotation(ctx context.Context, c client.Client, obj client.Object, key string, value any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager))
}

// Approval is what Approve wrote.
type Approval struct {
	// Value is the annotation's value, "<revision>/<stage>".
	Value string
	// Stage is the approved stage.
	Stage string
	// Changed is false when the binding carried this approval already.
	Changed bool
}

// Approve approves stage (empty: the stage the rollout awaits approval for) of the rollout's
// target revision, annotating the binding. It refuses, with an error wrapping
// ErrNothingToApprove, when no rollout is recorded, it is complete, or no stage is named and
// none awaits approval; and refuses a stage the policy does not define or that already started.
func Approve(ctx context.Context, c client.Client, v *View, stage string) (*Approval, error) {
	ro := v.Rollout()
	if ro == nil || ro.TargetRevision == "" {
		return nil, fmt.Errorf("%w: the hub has recorded no rollout of RayService %s", ErrNothingToApprove, v.Key())
	}
	if ro.Phase == fleetv1alpha1.RolloutComplete {
		return nil, fmt.Errorf("%w: the rollout of RayService %s to %s is Complete", ErrNothingToApprove, v.Key(), v.revisionLabel(ro.TargetRevision))
	}
	awaiting := ro.Phase == fleetv1alpha1.RolloutAwaitingApproval && ro.Stage != ""
	switch {
	case stage == "" && !awaiting:
		return nil, fmt.Errorf("%w: the rollout of RayService %s to %s is %s; name a later stage with --stage to approve it ahead",
			ErrNothingToApprove, v.Key(), v.revisionLabel(ro.TargetRevision), phaseLine(ro))
	case stage == "":
		stage = ro.Stage
	case awaiting && stage == ro.Stage:
	default:
		if err := v.checkApprovable(stage); err != nil {
			return nil, err
		}
	}
	a := &Approval{Value: ro.TargetRevision + "/" + stage, Stage: stage}
	if v.Binding.Annotations[labels.ApprovedStage] == a.Value {
		return a, nil
	}
	if err := patchAnnotation(ctx, c, v.Binding, labels.ApprovedStage, a.Value); err != nil {
		return nil, fmt.Errorf("annotating RayServiceBinding %s %s=%s: %w", v.Key(), labels.ApprovedStage, a.Value, err)
	}
	a.Changed = true
	return a, nil
}

// checkApprovable refuses to approve ahead a stage the policy does not define or one already
// started for the target revision.
func (v *View) checkApprovable(stage string) error {
	if v.isBlueGreen() {
		return v.checkBlueGreenApprovable(stage)
	}
	// A missing policy's stages are unknown: the hub decides.
	if names := v.stageNames(); !v.PolicyMissing && !slices.Contains(names, stage) {
		policy := "the hub's built-in default policy"
		if v.Policy != nil {
			policy = "PlacementPolicy " + v.Policy.Name
		}
		return fmt.Errorf("%w: %s has no stage %q (its stages: %s)", ErrNothingToApprove, policy, stage, strings.Join(names, ", "))
	}
	for _, s := range v.Rollout().Stages {
		if s.Name == stage {
			return fmt.Errorf("%w: stage %s of the rollout of RayService %s to %s has started already",
				ErrNothingToApprove, stage, v.Key(), v.revisionLabel(v.Rollout().TargetRevision))
		}
	}
	return nil
}

// checkBlueGreenApprovable refuses to approve ahead a stage a BlueGreen rollout does not
// have, one it has passed, and "promote" while the rollout still needs "shift": the binding
// holds one approval at a time, so approving "promote" then would only replace (or precede)
// the approval the rollout needs first.
func (v *View) checkBlueGreenApprovable(stage string) error {
	ro := v.Rollout()
	shift, promote := fleetv1alpha1.BlueGreenShiftStage, fleetv1alpha1.BlueGreenPromoteStage
	of := fmt.Sprintf("the BlueGreen rollout of RayService %s to %s", v.Key(), v.revisionLabel(ro.TargetRevision))
	bg := ro.BlueGreen
	step := fleetv1alpha1.BlueGreenDeploying
	if bg != nil {
		step = bg.Step
	}
	switch {
	case stage != shift && stage != promote:
		return fmt.Errorf("%w: %s has no stage %q (its stages: %s, %s)", ErrNothingToApprove, of, stage, shift, promote)
	case step == fleetv1alpha1.BlueGreenHolding || (stage == shift && step == fleetv1alpha1.BlueGreenShifting):
		return fmt.Errorf("%w: stage %s of %s has started already (step %s, green %d%%)", ErrNothingToApprove, stage, of, step, bg.GreenPercent)
	case stage == promote && ro.Phase == fleetv1alpha1.RolloutAwaitingApproval && ro.Stage == shift:
		return fmt.Errorf("%w: %s awaits approval of stage %s first; approve that (the binding holds one approval at a time)",
			ErrNothingToApprove, of, shift)
	case stage == promote && step == fleetv1alpha1.BlueGreenDeploying && v.Binding.Annotations[labels.ApprovedStage] == ro.TargetRevision+"/"+shift:
		return fmt.Errorf("%w: stage %s of %s is approved and has not started; approving %s now would replace that approval "+
			"(the binding holds one at a time): approve %s once the traffic shift started", ErrNothingToApprove, shift, of, promote, promote)
	}
	return nil
}

// Undone is what Undo wrote back, and the rollout it found.
type Undone struct {
	// ControllerRevision is the revision whose spec the RayService has again.
	*appsv1.ControllerRevision
	// View is the rollout as Undo read it before writing.
	View *View
}

// Undo writes revision to (0: the rollout's last good revision) back to the hub RayService's
// spec, like `kubectl rollout undo`: an update with the resource version read, read and tried
// again on a conflict. It refuses, with an error wrapping ErrNothingToUndo, a revision whose
// spec is the RayService's already. The revision's overrides are not restored: they are the
// PlacementPolicy's.
func Undo(ctx context.Context, c client.Client, key types.NamespacedName, to int64) (*Undone, error) {
	u := &Undone{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		v, err := Read(ctx, c, key)
		if err != nil {
			return err
		}
		chosen, err := v.undoTarget(to)
		if err != nil {
			return err
		}
		content, err := revision.Decode(chosen)
		if err != nil {
			return err
		}
		if apiequality.Semantic.DeepEqual(content.Spec, v.Service.Spec) {
			return fmt.Errorf("%w: revision %d (%s) is the spec of RayService %s already", ErrNothingToUndo, chosen.Revision, chosen.Name, key)
		}
		u.ControllerRevision, u.View = chosen, v
		// The view keeps the spec it was read with; the update goes out with the revision's.
		updated := v.Service.DeepCopy()
		updated.Spec = content.Spec
		return c.Update(ctx, updated, client.FieldOwner(FieldManager))
	})
	if err != nil {
		return nil, fmt.Errorf("rolling back RayService %s: %w", key, err)
	}
	return u, nil
}

// TrafficNote says, when Undo found a blue/green rollout in flight, what becomes of its
// traffic: the hub sends all of it back to blue at once (as it does whenever the target
// changes mid-flight) and green leaves, or, undone to another revision than the good one,
// takes that revision before any traffic moves to it again. Empty without one.
func (u *Undone) TrafficNote() string {
	bg := u.View.blueGreen()
	if bg == nil {
		return ""
	}
	blue, green := clusterList(bg.Blue), clusterList(bg.Green)
	var traffic string
	switch c := u.View.trafficCondition(); {
	case c != nil && c.Reason == fleetv1alpha1.ReasonNoTrafficManaged:
		traffic = "no traffic is managed; blue " + blue + " keeps serving"
	case bg.GreenPercent == 0:
		traffic = "blue " + blue + " keeps all of the traffic"
	default:
		traffic = fmt.Sprintf("the hub sends all of the traffic back to blue %s at once (green has %d%% now)", blue, bg.GreenPercent)
	}
	then := "green " + green + " leaves"
	if u.Name != rollbackRevision(u.View.Rollout()) {
		then = fmt.Sprintf("green %s takes revision %d before any traffic moves to it again", green, u.Revision)
	}
	return fmt.Sprintf("a blue/green rollout was in flight (step %s): %s, and %s", bg.Step, traffic, then)
}

// rollbackRevision is what undo returns to without --to-revision, as the hub's planner does: the
// good revision, or while none is good yet, the baseline that runs.
func rollbackRevision(ro *fleetv1alpha1.RolloutStatus) string {
	if ro == nil {
		return ""
	}
	return cmp.Or(ro.GoodRevision, ro.BaselineRevision)
}

// undoTarget is revision to, or for 0 the last good one (the baseline while none is good).
func (v *View) undoTarget(to int64) (*appsv1.ControllerRevision, error) {
	if to != 0 {
		if r := v.Revisions.ByNumber(to); r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("RayService %s has no revision %d (%s)", v.Key(), to, v.numbers())
	}
	ro := v.Rollout()
	back := rollbackRevision(ro)
	if back == "" {
		return nil, fmt.Errorf("the hub has recorded no good or running revision of RayService %s: name one with --to-revision (see 'rayfleet rollout history')", v.Key())
	}
	r := v.Revisions.Get(back)
	if r == nil {
		return nil, fmt.Errorf("the revision %s that RayService %s runs is not among its ControllerRevisions (%s)", back, v.Key(), v.numbers())
	}
	return r, nil
}
