package status

import (
	"errors"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// twoWorkerCluster is the test cluster with two workers in group "g", at generation 3.
func twoWorkerCluster() *raybuilder.RayClusterWrapper {
	return raybuilder.MakeRayCluster(testCluster, testNS).Generation(3).WorkerGroup("g", 2, 0, 2)
}

// computeAt computes the status of rc (carrying its previous status) from pods, failing t on
// an error.
func computeAt(t *testing.T, rc *rayv1.RayCluster, pods []corev1.Pod, reconcileErr error, now metav1.Time) rayv1.RayClusterStatus {
	t.Helper()
	st, err := Compute(rc, Observed{Pods: pods, HeadService: dashboardService(), ReconcileErr: reconcileErr}, now)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// notReady makes a Pod Running but not Ready, as the kubelet reports it while a container is
// starting or failing its readiness probe (a Running Pod without PodReady counts as ready).
func notReady(w *raybuilder.PodWrapper) *raybuilder.PodWrapper {
	w.Status.Phase = corev1.PodRunning
	w.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: containersNotReady}}
	return w
}

// crashingHead is a head Pod the kubelet reports as ContainersNotReady because its Ray
// container is in CrashLoopBackOff.
func crashingHead() *raybuilder.PodWrapper {
	return notReady(headPod().ContainerWaiting("CrashLoopBackOff", "back-off 10s restarting"))
}

func TestProgressOnly(t *testing.T) {
	pending := podList(headPod().Phase(corev1.PodPending), workerPod("w1").Phase(corev1.PodPending), workerPod("w2").Phase(corev1.PodPending))
	headReady := podList(headPod().Ready(), workerPod("w1").Phase(corev1.PodPending), workerPod("w2").Phase(corev1.PodPending))
	oneWorker := podList(headPod().Ready(), workerPod("w1").Ready(), notReady(workerPod("w2")))
	allReady := podList(headPod().Ready(), workerPod("w1").Ready(), workerPod("w2").Ready())
	withIP := func(w *raybuilder.PodWrapper) *raybuilder.PodWrapper { w.Status.PodIP = "10.1.0.1"; return w }

	tests := []struct {
		name string
		// prev is the status written, computed from these Pods (nil: nothing written yet).
		prevPods []corev1.Pod
		// rc changes the cluster between the two computations.
		rc           func(*rayv1.RayCluster)
		nextPods     []corev1.Pod
		reconcileErr error
		want         bool
	}{
		// Progress that gates nothing: held.
		{name: "a worker turns ready while the head starts", prevPods: pending,
			nextPods: podList(headPod().Phase(corev1.PodPending), workerPod("w1").Ready(), workerPod("w2").Phase(corev1.PodPending)), want: true},
		{name: "a worker turns ready after the head, another runs", prevPods: headReady, nextPods: oneWorker, want: true},
		{name: "head's containers are being created", prevPods: pending,
			nextPods: podList(notReady(headPod().ContainerWaiting(containerCreating, "")), workerPod("w1"), workerPod("w2")), want: true},
		{name: "head gets its address, not ready yet", prevPods: pending,
			nextPods: podList(notReady(withIP(headPod())), workerPod("w1").Phase(corev1.PodPending), workerPod("w2").Phase(corev1.PodPending)), want: true},

		// A change of a condition's status, or a first status: written at once.
		{name: "first status of the cluster", nextPods: pending, want: false},
		{name: "first status, the head already ready", nextPods: headReady, want: false},
		{name: "first status, a worker already running", nextPods: podList(headPod(), notReady(workerPod("w1")), workerPod("w2")), want: false},
		{name: "first status, all ready", nextPods: allReady, want: false},
		{name: "head turns ready while the workers start", prevPods: pending, nextPods: headReady, want: false},
		{name: "head turns ready with a worker", prevPods: pending,
			nextPods: podList(headPod().Ready(), workerPod("w1").Ready(), workerPod("w2").Phase(corev1.PodPending)), want: false},
		{name: "head stops being ready before the cluster is provisioned", prevPods: oneWorker,
			nextPods: podList(notReady(headPod()), workerPod("w1").Ready(), notReady(workerPod("w2"))), want: false},
		{name: "every Pod ready: provisioned and ready", prevPods: oneWorker, nextPods: allReady, want: false},

		// Trouble, spec changes and a provisioned cluster: written at once.
		{name: "head in CrashLoopBackOff", prevPods: pending,
			nextPods: podList(crashingHead(), workerPod("w1"), workerPod("w2")), want: false},
		{name: "head Pod gone", prevPods: headReady, nextPods: podList(workerPod("w1"), workerPod("w2")), want: false},
		{name: "new generation", prevPods: headReady, nextPods: oneWorker,
			rc: func(rc *rayv1.RayCluster) { rc.Generation++ }, want: false},
		{name: "spec change of the desired size", prevPods: headReady, nextPods: oneWorker,
			rc: func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].MaxReplicas = new(int32(5)) }, want: false},
		{name: "a failed Pod creation", prevPods: headReady, nextPods: oneWorker,
			reconcileErr: ReplicaFailure(FailedCreateWorkerPod, errors.New("quota")), want: false},
		{name: "suspension requested", prevPods: headReady, nextPods: headReady,
			rc: func(rc *rayv1.RayCluster) { rc.Spec.Suspend = new(true) }, want: false},
		{name: "a provisioned cluster loses a worker", prevPods: allReady,
			nextPods: podList(headPod().Ready(), workerPod("w1").Ready(), notReady(workerPod("w2"))), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := twoWorkerCluster().Obj()
			if tt.prevPods != nil {
				rc.Status = computeAt(t, rc, tt.prevPods, nil, t0)
			}
			prev := rc.Status.DeepCopy()
			if tt.rc != nil {
				tt.rc(rc)
			}
			next := computeAt(t, rc, tt.nextPods, tt.reconcileErr, t1)
			if !Changed(prev, &next) {
				t.Fatal("the case changes nothing; it tests nothing")
			}
			if got := ProgressOnly(prev, &next); got != tt.want {
				t.Errorf("ProgressOnly = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStarting(t *testing.T) {
	withCondition := func(w *raybuilder.PodWrapper, c corev1.PodCondition) corev1.Pod {
		p := *w.Obj()
		p.Status.Conditions = append(p.Status.Conditions, c)
		return p
	}
	restarted := *headPod().Running().Obj()
	restarted.Status.ContainerStatuses[0].RestartCount = 1
	initDone := *headPod().Running().Obj()
	initDone.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed"}}}}
	initFailed := *headPod().Phase(corev1.PodPending).Obj()
	initFailed.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}}
	deleting := *workerPod("w1").Ready().Obj()
	deleting.DeletionTimestamp = &t0

	tests := []struct {
		name string
		pods []corev1.Pod
		want bool
	}{
		{name: "no Pods", want: true},
		{name: "pending, not yet scheduled", pods: podList(headPod().Phase(corev1.PodPending)), want: true},
		{name: "containers being created", pods: podList(headPod().Phase(corev1.PodPending).ContainerWaiting(containerCreating, "")), want: true},
		{name: "running, readiness probe not passed yet", pods: podList(headPod().Running()), want: true},
		{name: "ready", pods: podList(headPod().Ready(), workerPod("w1").Ready()), want: true},
		{name: "init container completed", pods: []corev1.Pod{initDone}, want: true},
		{name: "unschedulable", pods: []corev1.Pod{withCondition(workerPod("w1").Phase(corev1.PodPending),
			corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable})}, want: false},
		{name: "image cannot be pulled", pods: podList(headPod().Ready(), workerPod("w1").Phase(corev1.PodPending).ContainerWaiting("ImagePullBackOff", "")), want: false},
		{name: "crash looping", pods: podList(crashingHead()), want: false},
		{name: "restarted once", pods: []corev1.Pod{restarted}, want: false},
		{name: "Ray container exited", pods: podList(workerPod("w1").Running().Terminated("Error", 1)), want: false},
		{name: "init container failed", pods: []corev1.Pod{initFailed}, want: false},
		{name: "failed Pod", pods: podList(workerPod("w1").Phase(corev1.PodFailed)), want: false},
		{name: "terminating Pod", pods: []corev1.Pod{deleting}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Starting(tt.pods); got != tt.want {
				t.Errorf("Starting = %v, want %v", got, tt.want)
			}
		})
	}
}
