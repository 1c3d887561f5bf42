package rayservice

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/rayservice/serve"
)

// The running annotations tell the hub what a member's copy of its RayService really runs: the
// spec is only what the member was asked to run, and its status does not say which spec built
// the serving cluster nor which Serve config that cluster took. KubeRay has no such thing; the
// spoke keeps them on the hub's copies only.

// hubCopy reports whether rs is a copy the hub placed here: it carries the hub's origin labels.
// Other RayServices get no running annotations.
func hubCopy(rs *rayv1.RayService) bool {
	return rs.Labels[labels.OriginNamespace] != "" && rs.Labels[labels.OriginName] != ""
}

// runningPatch decides the running annotations of a hub copy whose annotations are current,
// for the cluster that serves after this reconcile (active, nil when none does):
//   - RunningClusterHash is active's ray.io/hash-without-replicas-and-workers-to-delete, the
//     rayspec.ClusterSpecHash of the spec it was built from; absent without an active cluster
//     or without that annotation on it;
//   - RunningServeConfigHash is the rayspec.ServeConfigHash of applied, the Serve config last
//     submitted successfully to active; absent without an active cluster. A nil applied
//     (nothing remembered: the spoke restarted and has not submitted to active since, which
//     it does not during a NewCluster upgrade) leaves it as it is, since the cluster still
//     runs what it ran.
//   - RunningReplicas is replicas (runningReplicas); absent without an active cluster.
//
// It returns the changes as a merge patch of the annotations (a nil value removes the key),
// nil when current already says all that.
func runningPatch(current map[string]string, active *rayv1.RayCluster, applied *serve.Submitted, replicas string) map[string]*string {
	want := map[string]string{labels.RunningClusterHash: "", labels.RunningServeConfigHash: "", labels.RunningReplicas: ""}
	if active != nil {
		want[labels.RunningClusterHash] = active.Annotations[labels.HashWithoutReplicas]
		want[labels.RunningReplicas] = replicas
		if applied != nil {
			want[labels.RunningServeConfigHash] = rayspec.ServeConfigHash(applied.Config)
		} else {
			want[labels.RunningServeConfigHash] = current[labels.RunningServeConfigHash]
		}
	}
	var patch map[string]*string
	for k, v := range want {
		have, ok := current[k]
		switch {
		case v == "" && ok:
			patch = setPatch(patch, k, nil)
		case v != "" && have != v:
			patch = setPatch(patch, k, &v)
		}
	}
	return patch
}

func setPatch(patch map[string]*string, k string, v *string) map[string]*string {
	if patch == nil {
		patch = map[string]*string{}
	}
	patch[k] = v
	return patch
}

// runningMemoKey keys the memory of the running annotations written to rs.
func runningMemoKey(rs *rayv1.RayService) string { return "running/" + string(rs.UID) }

// recordRunning brings the running annotations of a hub copy in step with the cluster named
// active in the status just computed (next): until a pending cluster is promoted they describe
// the cluster that serves, not the one being prepared. The serve-address annotations
// (serveAddressPatch) go in the same patch. It costs no API read (the clusters were read by
// this reconcile, the applied configs are the serve cache, the serve Service and worker Pods
// are in the cache, Nodes are read at most every nodeListTTL, the Serve replicas come from this
// reconcile's Serve read) and a write only when a value changes: a JSON merge
// patch of just these annotations, without a resourceVersion so it cannot conflict.
func (r *Reconciler) recordRunning(ctx context.Context, s *scope, next *rayv1.RayServiceStatuses) error {
	if !hubCopy(s.rs) {
		return nil
	}
	active := s.clusterNamed(next.ActiveServiceStatus.RayClusterName)
	var applied *serve.Submitted
	var replicas string
	if active != nil {
		if sub, ok := r.configs.Get(s.key, active.Name); ok {
			applied = &sub
		}
		var err error
		if replicas, err = r.replicasOf(ctx, s, active); err != nil {
			return err
		}
	}
	patch := runningPatch(s.rs.Annotations, active, applied, replicas)
	addressPatch, err := r.serveAddressPatch(ctx, s, next.NumServeEndpoints)
	if err != nil {
		return err
	}
	for k, v := range addressPatch {
		patch = setPatch(patch, k, v)
	}
	if patch == nil {
		return nil
	}
	// json.Marshal sorts map keys: equal patches encode equally.
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if err != nil {
		return fmt.Errorf("encode running annotations of RayService %s: %w", s.key, err)
	}
	// Written a moment ago and not in the cache yet: the same patch again would be a second
	// write of one change.
	memoKey := runningMemoKey(s.rs)
	if r.writes.Recent(memoKey, string(body)) {
		return nil
	}
	target := &rayv1.RayService{}
	target.Namespace, target.Name = s.rs.Namespace, s.rs.Name
	if err := r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, body), client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("write running annotations of RayService %s: %w", s.key, err)
	}
	r.writes.Note(memoKey, string(body))
	ctrl.LoggerFrom(ctx).V(1).Info("Running annotations written", "rayCluster", next.ActiveServiceStatus.RayClusterName,
		"annotations", string(body))
	return nil
}

// replicasOf returns the RunningReplicas value of active (runningReplicas). A value Format
// refuses (a cluster beyond runningreplicas' bounds) is no value: the annotation goes.
func (r *Reconciler) replicasOf(ctx context.Context, s *scope, active *rayv1.RayCluster) (string, error) {
	pods, err := r.workerPods(ctx, active)
	if err != nil {
		return "", err
	}
	serve, read := s.serveReplicas[active.Name]
	value, err := runningReplicas(s.rs.Annotations[labels.RunningReplicas], active, pods, serve, read)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Running replicas not recorded", "rayCluster", active.Name, "error", err.Error())
		return "", nil
	}
	return value, nil
}

// clusterNamed returns whichever of the clusters read this reconcile is called name; nil when
// name is empty or neither is (deleted).
func (s *scope) clusterNamed(name string) *rayv1.RayCluster {
	switch {
	case name == "":
		return nil
	case s.active != nil && s.active.Name == name:
		return s.active
	case s.pending != nil && s.pending.Name == name:
		return s.pending
	default:
		return nil
	}
}

// annotationsChanged is predicate.AnnotationChangedPredicate blind to spokeAnnotations:
// the reconciler's own write of them needs no reconcile, and one by anybody else is put right
// by the periodic requeue.
func annotationsChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return false
		}
		return !maps.Equal(withoutRunning(e.ObjectOld.GetAnnotations()), withoutRunning(e.ObjectNew.GetAnnotations()))
	}}
}

// withoutRunning returns annotations without spokeAnnotations; annotations itself when it has
// none of them.
func withoutRunning(annotations map[string]string) map[string]string {
	var out map[string]string
	for _, k := range spokeAnnotations {
		if _, ok := annotations[k]; !ok {
			continue
		}
		if out == nil {
			out = maps.Clone(annotations)
		}
		delete(out, k)
	}
	if out == nil {
		return annotations
	}
	return out
}

// spokeAnnotations are the annotations the spoke itself keeps on the hub's copies.
var spokeAnnotations = []string{
	labels.RunningClusterHash, labels.RunningServeConfigHash, labels.RunningReplicas, labels.ServeAddress, labels.NoServeAddress,
}
