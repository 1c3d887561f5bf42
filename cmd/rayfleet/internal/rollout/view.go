// Package rollout reads and steers the fleet rollout of one hub RayService, for the verbs of
// `rayfleet rollout`: status (once or watched), history, pause, resume, approve and undo.
// It reaches the hub through its API only (the RayService, its RayServiceBinding, the
// PlacementPolicy the binding names and the RayService's ControllerRevisions): the hub's
// rollout state is whatever the binding's status says. Of the hub's code it uses hub/revision
// only, to list and decode revisions exactly as the hub does; never spoke/.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// FieldManager names the CLI's writes in managedFields, as `rayfleet join` does.
const FieldManager = "rayfleet-cli"

// ErrNotPlaced is wrapped by the error for a RayService RayFleet does not place.
var ErrNotPlaced = errors.New("not placed by RayFleet")

// View is one hub RayService's rollout as the hub records it.
type View struct {
	// Service is the hub RayService.
	Service *rayv1.RayService
	// Binding is its RayServiceBinding (same namespace and name).
	Binding *fleetv1alpha1.RayServiceBinding
	// Policy is the PlacementPolicy the binding names; nil for the hub's built-in default or
	// when it is gone (PolicyMissing).
	Policy *fleetv1alpha1.PlacementPolicy
	// PolicyMissing says the binding names a policy that does not exist (any more).
	PolicyMissing bool
	// Revisions are the RayService's ControllerRevisions, oldest first.
	Revisions revision.History
}

// Read reads the rollout of the hub RayService key. A RayService the hub does not manage (no
// binding, or no hub finalizer) is an error wrapping ErrNotPlaced.
func Read(ctx context.Context, c client.Reader, key types.NamespacedName) (*View, error) {
	var svc rayv1.RayService
	if err := c.Get(ctx, key, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("RayService %s not found on the hub: %w", key, err)
		}
		return nil, fmt.Errorf("reading RayService %s: %w", key, err)
	}
	var b fleetv1alpha1.RayServiceBinding
	if err := c.Get(ctx, key, &b); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("RayService %s has no RayServiceBinding: it is %w (is the hub running and is this the hub cluster?)", key, ErrNotPlaced)
		}
		return nil, fmt.Errorf("reading RayServiceBinding %s: %w", key, err)
	}
	// The hub adds its finalizer before anything else it writes; without it no hub manages the
	// RayService, whatever binding is left.
	if !controllerutil.ContainsFinalizer(&svc, labels.MemberCleanupFinalizer) {
		return nil, fmt.Errorf("RayService %s has no %s finalizer: it is %w (is the hub running and is this the hub cluster?)",
			key, labels.MemberCleanupFinalizer, ErrNotPlaced)
	}
	return readAround(ctx, c, &svc, &b)
}

// readAround completes a view around the hub RayService and its binding: the policy and the
// revisions.
func readAround(ctx context.Context, c client.Reader, svc *rayv1.RayService, b *fleetv1alpha1.RayServiceBinding) (*View, error) {
	v := &View{Service: svc, Binding: b}
	if name := b.Spec.PolicyName; name != "" {
		var p fleetv1alpha1.PlacementPolicy
		err := c.Get(ctx, types.NamespacedName{Namespace: svc.Namespace, Name: name}, &p)
		switch {
		case err == nil:
			v.Policy = &p
		case apierrors.IsNotFound(err):
			v.PolicyMissing = true
		default:
			return nil, fmt.Errorf("reading PlacementPolicy %s/%s of RayService %s/%s: %w", svc.Namespace, name, svc.Namespace, svc.Name, err)
		}
	}
	// The revisions the hub made of svc: labelled with its name and controlled by it (a
	// RayService of the same name deleted and created again has its own).
	revisions, err := revision.List(ctx, c, svc)
	if err != nil {
		return nil, err
	}
	v.Revisions = revisions
	return v, nil
}

// Key is the hub RayService's namespace/name.
func (v *View) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: v.Service.Namespace, Name: v.Service.Name}
}

// Rollout is the binding's rollout status; nil until the hub records one.
func (v *View) Rollout() *fleetv1alpha1.RolloutStatus { return v.Binding.Status.Rollout }

// isCurrentSpec says whether revision r holds the hub RayService's spec as it is now.
func (v *View) isCurrentSpec(r *appsv1.ControllerRevision) (bool, error) {
	content, err := revision.Decode(r)
	if err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(content.Spec, v.Service.Spec), nil
}

// TargetIsCurrent says whether the rollout the binding records is the rollout of the hub
// RayService's spec as it is now. It is not right after a spec change, until the hub makes a
// revision of it: a Complete or Stalled phase then still speaks of the previous spec. A target
// whose revision cannot be read is taken as current, as nothing says otherwise.
func (v *View) TargetIsCurrent() bool {
	ro := v.Rollout()
	if ro == nil || ro.TargetRevision == "" {
		return false
	}
	r := v.Revisions.Get(ro.TargetRevision)
	if r == nil {
		return true
	}
	current, err := v.isCurrentSpec(r)
	return err != nil || current
}

// soak is how long a cluster of stage soaks: the stage's soakSeconds, else the rollout's,
// else the default (also for the hub's built-in default policy).
func (v *View) soak(stage string) time.Duration {
	seconds := fleetv1alpha1.DefaultSoakSeconds
	if v.Policy != nil && v.Policy.Spec.Rollout != nil {
		ro := v.Policy.Spec.Rollout
		if ro.SoakSeconds != nil {
			seconds = *ro.SoakSeconds
		}
		for _, s := range ro.Stages {
			if s.Name == stage && s.SoakSeconds != nil {
				seconds = *s.SoakSeconds
			}
		}
	}
	return time.Duration(seconds) * time.Second
}

// stageNames are the stages the policy defines, then the implicit last one.
func (v *View) stageNames() []string {
	var names []string
	if v.Policy != nil && v.Policy.Spec.Rollout != nil {
		for _, s := range v.Policy.Spec.Rollout.Stages {
			names = append(names, s.Name)
		}
	}
	return append(names, fleetv1alpha1.ImplicitStageName)
}
