package raycluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/shared/finalizer"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// defaultGCSFTDeletionTimeout bounds how long a stuck Redis cleanup may hold a deleted
// cluster (KubeRay's default); ray.io/gcs-ft-deletion-timeout overrides it per cluster.
const defaultGCSFTDeletionTimeout = 300 * time.Second

// manualCleanupHint tells the user what is left to do when the Redis cleanup did not succeed.
const manualCleanupHint = "delete the Redis storage namespace %q by hand " +
	"(see https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/kuberay-gcs-ft.html)"

func (r *Reconciler) gcsFTCleanupEnabled(rc *rayv1.RayCluster) bool {
	return r.opts.GCSFTRedisCleanup && rayspec.GCSFaultTolerance(&rc.Spec, rc.Annotations)
}

// reconcileGCSFTFinalizer adds the Redis cleanup finalizer to a live GCS FT cluster and, once
// the cluster is deleted, walks the cleanup: Pods gone → cleanup Job → finalizer removed.
// stop means the reconcile ends here with res and err.
func (r *Reconciler) reconcileGCSFTFinalizer(ctx context.Context, rc *rayv1.RayCluster) (res ctrl.Result, stop bool, err error) {
	if rc.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(rc, labels.GCSFTRedisCleanupFinalizer) {
			return ctrl.Result{}, false, nil
		}
		if err = r.patchFinalizer(ctx, rc, true); err != nil {
			return ctrl.Result{}, true, err
		}
		// The Pods are created once the finalizer is in place, so a cluster is never running
		// GCS against Redis without the guarantee of a cleanup.
		return ctrl.Result{RequeueAfter: requeueSoon}, true, nil
	}
	if !controllerutil.ContainsFinalizer(rc, labels.GCSFTRedisCleanupFinalizer) {
		return ctrl.Result{}, true, nil
	}
	res, err = r.cleanUpRedis(ctx, rc)
	return res, true, err
}

func (r *Reconciler) cleanUpRedis(ctx context.Context, rc *rayv1.RayCluster) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// The head goes first: GCS must stop writing before its storage namespace is removed.
	headsLeft, err := r.deletePodsOfType(ctx, rc, rayv1.HeadNode)
	if err != nil {
		return ctrl.Result{}, err
	}
	if _, err := r.deletePodsOfType(ctx, rc, rayv1.WorkerNode); err != nil {
		return ctrl.Result{}, err
	}
	if headsLeft > 0 {
		log.Info("Waiting for the head Pod to terminate before cleaning up Redis")
		return ctrl.Result{RequeueAfter: requeueHeadTermination}, nil
	}

	if age := r.clock.Since(rc.DeletionTimestamp.Time); age >= gcsFTDeletionTimeout(rc) {
		return r.forceRemoveFinalizer(ctx, rc, age)
	}

	var jobs batchv1.JobList
	if err := r.client.List(ctx, &jobs, client.InNamespace(rc.Namespace), client.MatchingLabels{
		labels.Cluster: rc.Name, labels.NodeType: string(rayv1.RedisCleanupNode),
	}); err != nil {
		return ctrl.Result{}, fmt.Errorf("list Redis cleanup Jobs of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	if len(jobs.Items) == 0 {
		return r.createRedisCleanupJob(ctx, rc)
	}
	job := &jobs.Items[0]
	finished, failed := jobFinished(job)
	if !finished {
		return ctrl.Result{RequeueAfter: requeueSoon}, nil
	}
	if err := r.patchFinalizer(ctx, rc, false); err != nil {
		return ctrl.Result{}, err
	}
	storageNS := job.Annotations[labels.ExternalStorageNamespace]
	if failed {
		// The cluster must not be held forever by a Redis it cannot reach; the user is told
		// what is left instead.
		msg := fmt.Sprintf("Redis cleanup Job %s failed; the finalizer was removed anyway: "+manualCleanupHint, job.Name, storageNS)
		log.Info(msg)
		r.eventf(rc, job, corev1.EventTypeWarning, reasonRedisCleanupFailed, "%s", msg)
		return ctrl.Result{}, nil
	}
	log.Info("Redis cleanup Job completed; storage namespace deleted", "job", job.Name, "storageNamespace", storageNS)
	return ctrl.Result{}, nil
}

func (r *Reconciler) createRedisCleanupJob(ctx context.Context, rc *rayv1.RayCluster) (ctrl.Result, error) {
	job, err := builder.RedisCleanupJob(rc, r.build)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("build Redis cleanup Job of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	if err := r.client.Create(ctx, job, client.FieldOwner(fieldManager)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return ctrl.Result{RequeueAfter: requeueSoon}, nil
		}
		r.eventf(rc, job, corev1.EventTypeWarning, reasonFailedToCreateRedisCleanupJob,
			"Failed to create Redis cleanup Job %s/%s: %v", job.Namespace, job.Name, err)
		return ctrl.Result{}, fmt.Errorf("create Redis cleanup Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	r.eventf(rc, job, corev1.EventTypeNormal, reasonCreatedRedisCleanupJob,
		"Created Redis cleanup Job %s/%s", job.Namespace, job.Name)
	return ctrl.Result{RequeueAfter: requeueSoon}, nil
}

func (r *Reconciler) forceRemoveFinalizer(ctx context.Context, rc *rayv1.RayCluster, age time.Duration) (ctrl.Result, error) {
	if err := r.patchFinalizer(ctx, rc, false); err != nil {
		return ctrl.Result{}, err
	}
	msg := fmt.Sprintf("Removed the GCS FT finalizer after %s without a finished Redis cleanup; "+manualCleanupHint,
		age.Round(time.Second), rc.Annotations[labels.ExternalStorageNamespace])
	ctrl.LoggerFrom(ctx).Info(msg)
	r.eventf(rc, nil, corev1.EventTypeWarning, reasonForceDeletedStuckCluster, "%s", msg)
	return ctrl.Result{}, nil
}

// patchFinalizer adds or removes the Redis cleanup finalizer.
func (r *Reconciler) patchFinalizer(ctx context.Context, rc *rayv1.RayCluster, add bool) error {
	if err := finalizer.Patch(ctx, r.client, rc, labels.GCSFTRedisCleanupFinalizer, add, client.FieldOwner(fieldManager)); err != nil {
		return fmt.Errorf("update finalizers of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	return nil
}

func gcsFTDeletionTimeout(rc *rayv1.RayCluster) time.Duration {
	if s, err := strconv.Atoi(rc.Annotations[labels.GCSFTDeletionTimeout]); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return defaultGCSFTDeletionTimeout
}

// jobFinished reports whether the Job reached Complete or Failed.
func jobFinished(job *batchv1.Job) (finished, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, false
		case batchv1.JobFailed:
			return true, true
		}
	}
	return false, false
}
