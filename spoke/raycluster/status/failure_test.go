package status

import (
	"errors"
	"fmt"
	"testing"
)

func TestReplicaFailureReasonOf(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		name       string
		err        error
		wantReason ReplicaFailureReason
		wantOK     bool
		wantText   string
	}{
		{name: "nil", err: nil},
		{name: "plain error", err: cause},
		{name: "tagged", err: ReplicaFailure(FailedCreateWorkerPod, cause),
			wantReason: FailedCreateWorkerPod, wantOK: true, wantText: "FailedCreateWorkerPod\nboom"},
		{name: "tagged without cause", err: ReplicaFailure(FailedDeleteAllPods, nil),
			wantReason: FailedDeleteAllPods, wantOK: true, wantText: "FailedDeleteAllPods"},
		{name: "wrapped with %w", err: fmt.Errorf("RayCluster ns/x: %w", ReplicaFailure(FailedDeleteHeadPod, cause)),
			wantReason: FailedDeleteHeadPod, wantOK: true, wantText: "RayCluster ns/x: FailedDeleteHeadPod\nboom"},
		{name: "joined", err: errors.Join(cause, ReplicaFailure(FailedCreateHeadPod, cause)),
			wantReason: FailedCreateHeadPod, wantOK: true, wantText: "boom\nFailedCreateHeadPod\nboom"},
		{name: "outermost tag wins", err: ReplicaFailure(FailedDeleteWorkerPod, ReplicaFailure(FailedCreateWorkerPod, cause)),
			wantReason: FailedDeleteWorkerPod, wantOK: true, wantText: "FailedDeleteWorkerPod\nFailedCreateWorkerPod\nboom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reason, ok := ReplicaFailureReasonOf(tc.err)
			if reason != tc.wantReason || ok != tc.wantOK {
				t.Errorf("ReplicaFailureReasonOf = (%q, %v), want (%q, %v)", reason, ok, tc.wantReason, tc.wantOK)
			}
			if tc.wantText != "" && tc.err.Error() != tc.wantText {
				t.Errorf("Error() = %q, want %q", tc.err.Error(), tc.wantText)
			}
		})
	}
}

func TestReplicaFailureUnwraps(t *testing.T) {
	cause := errors.New("boom")
	if err := ReplicaFailure(FailedCreateHeadPod, cause); !errors.Is(err, cause) {
		t.Errorf("errors.Is(%v, cause) = false, want true", err)
	}
}
