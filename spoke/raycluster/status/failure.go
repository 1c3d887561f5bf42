package status

import "errors"

// ReplicaFailureReason is the reason of a RayClusterReplicaFailure condition: which Pod operation
// of the reconcile failed. The values are KubeRay's, so alerts written against KubeRay still match.
type ReplicaFailureReason string

// The Pod operations whose failure KubeRay surfaces as a ReplicaFailure condition.
const (
	// FailedDeleteAllPods means deleting every Pod (suspend, Recreate upgrade) failed.
	FailedDeleteAllPods ReplicaFailureReason = "FailedDeleteAllPods"
	// FailedDeleteHeadPod means deleting an unhealthy head Pod failed.
	FailedDeleteHeadPod ReplicaFailureReason = "FailedDeleteHeadPod"
	// FailedCreateHeadPod means creating the head Pod failed.
	FailedCreateHeadPod ReplicaFailureReason = "FailedCreateHeadPod"
	// FailedDeleteWorkerPod means deleting a worker Pod (scale down, unhealthy, suspended group) failed.
	FailedDeleteWorkerPod ReplicaFailureReason = "FailedDeleteWorkerPod"
	// FailedCreateWorkerPod means creating a worker Pod failed.
	FailedCreateWorkerPod ReplicaFailureReason = "FailedCreateWorkerPod"
)

// replicaFailure tags a Pod operation error with the reason the status shows for it.
type replicaFailure struct {
	reason ReplicaFailureReason
	err    error
}

// Error renders like KubeRay's errors.Join(marker, err), reason then cause on the next line,
// because the text becomes the condition message users already see from KubeRay.
func (e *replicaFailure) Error() string {
	if e.err == nil {
		return string(e.reason)
	}
	return string(e.reason) + "\n" + e.err.Error()
}

func (e *replicaFailure) Unwrap() error { return e.err }

// ReplicaFailure tags err as a failed Pod operation of the given reason. The reconciler may wrap
// the result further; Compute finds the reason anywhere in the chain. A nil err still yields a
// failure: the operation failed even if nobody said why.
func ReplicaFailure(reason ReplicaFailureReason, err error) error {
	return &replicaFailure{reason: reason, err: err}
}

// ReplicaFailureReasonOf returns the reason err was tagged with by ReplicaFailure, if any.
func ReplicaFailureReasonOf(err error) (ReplicaFailureReason, bool) {
	var f *replicaFailure
	if errors.As(err, &f) {
		return f.reason, true
	}
	return "", false
}
