package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// writeBindingSpec creates the binding, owned by the hub RayService, or patches its spec when
// the decision changed it.
func (r *Reconciler) writeBindingSpec(ctx context.Context, s *scope) error {
	hash, err := propagation.SpecHash(&s.hub.Spec)
	if err != nil {
		return fmt.Errorf("RayService %s: %w", s.key, err)
	}
	spec := fleetv1alpha1.RayServiceBindingSpec{Clusters: slices.Clone(s.placed), PolicyName: s.policyName, SpecHash: hash}
	if s.invalid != nil && s.binding != nil {
		// The invalid spec is not propagated; the binding keeps the hash of the last one that was.
		spec.SpecHash = s.binding.Spec.SpecHash
	}
	if s.binding == nil {
		b := &fleetv1alpha1.RayServiceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.hub.Namespace, Name: s.hub.Name},
			Spec:       spec,
		}
		if err := controllerutil.SetControllerReference(s.hub, b, r.client.Scheme()); err != nil {
			return fmt.Errorf("own RayServiceBinding %s: %w", s.key, err)
		}
		if err := r.client.Create(ctx, b); err != nil {
			return fmt.Errorf("create RayServiceBinding %s: %w", s.key, err)
		}
		s.binding = b
		return nil
	}
	if slices.Equal(s.binding.Spec.Clusters, spec.Clusters) && s.binding.Spec.PolicyName == spec.PolicyName &&
		s.binding.Spec.SpecHash == spec.SpecHash {
		return nil
	}
	orig := s.binding.DeepCopy()
	s.binding.Spec = spec
	if err := r.client.Patch(ctx, s.binding, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("patch RayServiceBinding %s: %w", s.key, err)
	}
	return nil
}

// propagate reads every placed cluster's copy and, for a valid RayService, applies the
// member copy where it is missing or drifted. Errors are recorded per cluster: one member
// down must not hold up the others.
func (r *Reconciler) propagate(ctx context.Context, s *scope) {
	for _, name := range s.placed {
		if err := r.propagateTo(ctx, s, name); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Propagating to member failed", "cluster", name)
		}
	}
}

// propagateTo handles one placed cluster.
func (r *Reconciler) propagateTo(ctx context.Context, s *scope, name string) error {
	cl, member, err := r.readCopy(ctx, s, name)
	if err != nil {
		s.unreachable[name] = err
		return err
	}
	if propagation.OwnershipOf(s.hub, member) == propagation.Foreign {
		s.foreign = append(s.foreign, name)
		r.recorder.Eventf(s.hub, memberRef(name), corev1.EventTypeWarning, "Conflict", "Propagate",
			"cluster %s has a RayService %s not created by the hub; leaving it alone", name, s.key)
		return nil
	}
	s.copies[name] = member
	if s.invalid != nil {
		return nil
	}
	if _, refused := s.refusals[name]; refused {
		// The member refused this spec; asking again every resync gets the same answer. A copy
		// it already runs (of an earlier spec) is left as it is.
		return nil
	}
	var clusterLabels map[string]string
	if mc := s.memberClusters[name]; mc != nil {
		clusterLabels = mc.Labels
	}
	desired, err := propagation.MemberRayService(s.hub, name, clusterLabels, s.overrides)
	if err != nil {
		s.applyErrs[name] = err
		return err
	}
	s.applied[name] = desired.Annotations[labels.SpecHash]
	if !propagation.Drifted(desired, member) {
		return nil
	}
	if member == nil {
		if nsErr := ensureNamespace(ctx, cl, s.hub.Namespace); nsErr != nil {
			return r.applyFailed(s, name, nsErr)
		}
	}
	got, err := applyCopy(ctx, cl, desired)
	if err != nil {
		return r.applyFailed(s, name, err)
	}
	s.copies[name] = got
	r.recorder.Eventf(s.hub, memberRef(name), corev1.EventTypeNormal, "Propagated", "Propagate",
		"applied RayService %s to cluster %s", s.key, name)
	return nil
}

// applyFailed records why a copy could not be written to cluster name: a refusal by the
// member (recorded, not retried until it is due) or an error retried on the next reconcile.
func (r *Reconciler) applyFailed(s *scope, name string, err error) error {
	if ref, ok := propagation.RefusalOf(err); ok {
		delete(s.applied, name)
		r.recordRefusal(s, name, ref)
		s.newRefusal = true
		return nil
	}
	s.applyErrs[name] = fmt.Errorf("cluster %s: %w", name, err)
	return s.applyErrs[name]
}

// readCopy returns the member's client and its copy of the RayService, nil when it has none.
func (r *Reconciler) readCopy(ctx context.Context, s *scope, name string) (client.Client, *rayv1.RayService, error) {
	cl, err := r.members.Client(ctx, name)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster %s: %w", name, err)
	}
	var member rayv1.RayService
	switch err := cl.Get(ctx, s.key, &member); {
	case apierrors.IsNotFound(err):
		return cl, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("get RayService %s on cluster %s: %w", s.key, name, err)
	}
	return cl, &member, nil
}

// ensureNamespace creates the namespace on the member if it is missing. A namespace being
// deleted there is a refusal: nothing can be created in it until it is gone.
func ensureNamespace(ctx context.Context, cl client.Client, name string) error {
	var ns corev1.Namespace
	err := cl.Get(ctx, client.ObjectKey{Name: name}, &ns)
	if err == nil {
		if !ns.DeletionTimestamp.IsZero() {
			return propagation.NamespaceTerminating(name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	ns.Name = name
	if err := cl.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// applyCopy server-side applies desired under the hub's field manager, taking over fields
// another manager changed (that is drift to revert), and returns the object as stored.
func applyCopy(ctx context.Context, cl client.Client, desired *rayv1.RayService) (*rayv1.RayService, error) {
	data, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("encode RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		return nil, fmt.Errorf("decode RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	// The hub owns no status on members, and a null creationTimestamp is noise in the request.
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(labels.HubFieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	var got rayv1.RayService
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got); err != nil {
		return nil, fmt.Errorf("decode applied RayService %s/%s: %w", desired.Namespace, desired.Name, err)
	}
	return &got, nil
}

// removeUnplaced deletes the copies on clusters the placement no longer includes. Which
// clusters hold a copy is the binding's record (its spec before this decision and its
// per-cluster status); a cluster whose copy cannot be removed now stays in that record.
func (r *Reconciler) removeUnplaced(ctx context.Context, s *scope) {
	holding := slices.Clone(s.previous)
	if s.binding != nil {
		for i := range s.binding.Status.Clusters {
			holding = append(holding, s.binding.Status.Clusters[i].Name)
		}
	}
	unreachable := map[string]bool{}
	for name, mc := range s.memberClusters {
		if !memberOf(mc).Ready {
			unreachable[name] = true
		}
	}
	for _, name := range holding {
		if _, joined := s.memberClusters[name]; !joined {
			// The member left the fleet: there is nothing left to delete from.
			unreachable[name] = true
		}
	}
	for _, name := range propagation.ToRemove(s.placed, holding, unreachable) {
		gone, err := r.removeCopy(ctx, s, name)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Removing the copy from a member failed", "cluster", name)
		}
		if !gone {
			s.kept = append(s.kept, name)
		}
	}
	for name := range unreachable {
		if slices.Contains(holding, name) && !slices.Contains(s.placed, name) {
			if _, joined := s.memberClusters[name]; joined {
				s.kept = append(s.kept, name)
			}
		}
	}
	slices.Sort(s.kept)
	s.kept = slices.Compact(s.kept)
}

// removeCopy deletes the hub's copy on one cluster. gone is true once the cluster holds no
// copy of ours (a foreign object is left alone and counts as gone); a copy whose deletion
// waits on the spoke's finalizer is not gone yet and is looked at again next time.
func (r *Reconciler) removeCopy(ctx context.Context, s *scope, name string) (gone bool, err error) {
	cl, member, err := r.readCopy(ctx, s, name)
	if err != nil {
		return false, err
	}
	if member == nil || propagation.OwnershipOf(s.hub, member) == propagation.Foreign {
		return true, nil
	}
	if !member.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if err := cl.Delete(ctx, member, client.Preconditions{UID: &member.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("delete RayService %s on cluster %s: %w", s.key, name, err)
	}
	r.recorder.Eventf(s.hub, memberRef(name), corev1.EventTypeNormal, "Removed", "Remove",
		"deleted RayService %s from cluster %s: no longer placed there", s.key, name)
	return false, nil
}

// memberRef is the MemberCluster an event about one cluster's copy relates to. The events API
// folds events with the same object, reason and related object into one series and keeps the
// first message, so without it "Removed from us" would hide a later "Removed from eu".
func memberRef(name string) *fleetv1alpha1.MemberCluster {
	return &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
