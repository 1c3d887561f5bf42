package status

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// oneWorkerCluster is the test cluster with one worker group of one replica, at generation 3.
func oneWorkerCluster() *raybuilder.RayClusterWrapper {
	return raybuilder.MakeRayCluster(testCluster, testNS).Generation(3).WorkerGroup("g", 1, 0, 2)
}

func dashboardService() *corev1.Service {
	return headService("10.96.0.10", corev1.ServicePort{Name: "dashboard", Port: 8265, TargetPort: intstr.FromInt32(8265)})
}

func TestCompute(t *testing.T) {
	readyPods := podList(headPod().Ready(), workerPod("w1").Ready())
	tests := []struct {
		name        string
		rc          *rayv1.RayCluster
		obs         Observed
		wantState   rayv1.ClusterState
		wantReason  string
		wantReady   int32
		provisioned bool
		headReady   bool
		wantStamp   bool // a transition time for wantState stamped at t1
	}{
		{name: "new cluster, nothing running yet", rc: oneWorkerCluster().Obj(),
			obs: Observed{HeadService: dashboardService()}},
		{name: "all Pods ready", rc: oneWorkerCluster().Obj(),
			obs:       Observed{Pods: readyPods, HeadService: dashboardService()},
			wantState: rayv1.Ready, wantReady: 1, provisioned: true, headReady: true, wantStamp: true},
		{name: "ready clears the reason", rc: func() *rayv1.RayCluster {
			rc := oneWorkerCluster().Obj()
			rc.Status.Reason = "old failure"
			return rc
		}(), obs: Observed{Pods: readyPods, HeadService: dashboardService()},
			wantState: rayv1.Ready, wantReady: 1, provisioned: true, headReady: true, wantStamp: true},
		{name: "reconcile error holds back ready but not provisioned", rc: oneWorkerCluster().Obj(),
			obs:       Observed{Pods: readyPods, HeadService: dashboardService(), ReconcileErr: errors.New("service")},
			wantReady: 1, provisioned: true, headReady: true},
		{name: "missing worker holds back ready but not provisioned", rc: oneWorkerCluster().Obj(),
			obs:         Observed{Pods: podList(headPod().Ready()), HeadService: dashboardService()},
			provisioned: true, headReady: true},
		{name: "extra Pod holds back ready", rc: oneWorkerCluster().Obj(),
			obs:       Observed{Pods: podList(headPod().Ready(), workerPod("w1").Ready(), workerPod("w2").Ready()), HeadService: dashboardService()},
			wantReady: 2, provisioned: true, headReady: true},
		{name: "ready is sticky when a worker fails", rc: func() *rayv1.RayCluster {
			rc := oneWorkerCluster().Obj()
			rc.Status.State = rayv1.Ready
			return rc
		}(), obs: Observed{Pods: podList(headPod().Ready(), workerPod("w1").Phase(corev1.PodFailed)), HeadService: dashboardService()},
			wantState: rayv1.Ready, provisioned: false, headReady: true},
		{name: "suspend with no Pods is suspended at once", rc: oneWorkerCluster().Suspend(true).Obj(),
			obs: Observed{HeadService: dashboardService()}, wantState: rayv1.Suspended, wantStamp: true},
		{name: "suspend with Pods left is not suspended yet (and may even turn ready)", rc: oneWorkerCluster().Suspend(true).Obj(),
			obs:       Observed{Pods: readyPods, HeadService: dashboardService()},
			wantState: rayv1.Ready, wantReady: 1, provisioned: true, headReady: true, wantStamp: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.rc.DeepCopy()
			st, err := Compute(tc.rc, tc.obs, t1)
			if err != nil {
				t.Fatalf("Compute: %v", err)
			}
			if !equality.Semantic.DeepEqual(before, tc.rc) {
				t.Error("Compute modified its input")
			}
			if st.State != tc.wantState || st.ReadyWorkerReplicas != tc.wantReady {
				t.Errorf("state, ready = %q, %d; want %q, %d", st.State, st.ReadyWorkerReplicas, tc.wantState, tc.wantReady)
			}
			if tc.wantState == rayv1.Ready && st.Reason != "" {
				t.Errorf("reason = %q, want cleared", st.Reason)
			}
			if got := meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayClusterProvisioned)); got != tc.provisioned {
				t.Errorf("provisioned = %v, want %v", got, tc.provisioned)
			}
			if got := meta.IsStatusConditionTrue(st.Conditions, string(rayv1.HeadPodReady)); got != tc.headReady {
				t.Errorf("head ready = %v, want %v", got, tc.headReady)
			}
			stamp := st.StateTransitionTimes[tc.wantState]
			if tc.wantStamp != (stamp != nil && stamp.Equal(&t1)) {
				t.Errorf("stateTransitionTimes = %v, want a stamp for %q: %v", st.StateTransitionTimes, tc.wantState, tc.wantStamp)
			}
			if st.ObservedGeneration != 3 || st.LastUpdateTime == nil || !st.LastUpdateTime.Equal(&t1) {
				t.Errorf("observedGeneration, lastUpdateTime = %d, %v; want 3, %v", st.ObservedGeneration, st.LastUpdateTime, t1)
			}
			if st.Endpoints["dashboard"] != "8265" || st.Head.ServiceIP != "10.96.0.10" {
				t.Errorf("endpoints, head = %v, %+v", st.Endpoints, st.Head)
			}
			if st.DesiredWorkerReplicas != 1 || st.DesiredCPU.Cmp(resource.MustParse("2")) != 0 {
				t.Errorf("desired workers, cpu = %d, %s; want 1, 2", st.DesiredWorkerReplicas, st.DesiredCPU.String())
			}
		})
	}
}

func TestComputeNewClusterConditions(t *testing.T) {
	st, err := Compute(oneWorkerCluster().Obj(), Observed{HeadService: dashboardService()}, t1)
	if err != nil {
		t.Fatal(err)
	}
	// KubeRay's order, so that kubectl output looks the same.
	want := []string{string(rayv1.HeadPodReady), string(rayv1.RayClusterProvisioned), string(rayv1.RayClusterSuspended), string(rayv1.RayClusterSuspending)}
	var got []string
	for _, c := range st.Conditions {
		got = append(got, c.Type)
		if !c.LastTransitionTime.Equal(&t1) || c.Status != metav1.ConditionFalse {
			t.Errorf("condition %s = %s at %v, want False at %v", c.Type, c.Status, c.LastTransitionTime, t1)
		}
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("condition types = %v, want %v", got, want)
	}
	expectCondition(t, &st, rayv1.HeadPodReady, cond{metav1.ConditionFalse, rayv1.HeadPodNotFound, "Head Pod not found"})
}

func TestComputeErrors(t *testing.T) {
	rc := oneWorkerCluster().Obj()
	tests := []struct {
		name string
		obs  Observed
		want error
	}{
		{name: "two head Pods", obs: Observed{Pods: podList(headPod(), raybuilder.MakePod("h2", testNS).HeadOf(testCluster)), HeadService: dashboardService()}, want: ErrMultipleHeadPods},
		{name: "no head Service", obs: Observed{Pods: podList(headPod())}, want: ErrHeadServiceNotFound},
		{name: "head Service without IP", obs: Observed{HeadService: headService("")}, want: ErrHeadServiceNoIP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Compute(rc, tc.obs, t1); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestComputeTruncatesNow(t *testing.T) {
	now := metav1.NewTime(t1.Add(750 * time.Millisecond))
	st, err := Compute(oneWorkerCluster().Obj(), Observed{HeadService: dashboardService()}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !st.LastUpdateTime.Equal(&t1) || !st.Conditions[0].LastTransitionTime.Equal(&t1) {
		t.Errorf("times = %v, %v; want %v", st.LastUpdateTime, st.Conditions[0].LastTransitionTime, t1)
	}
}

// roundTrip returns st as the API server would hand it back.
func roundTrip(t *testing.T, st rayv1.RayClusterStatus) rayv1.RayClusterStatus {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var out rayv1.RayClusterStatus
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSuspendLifecycle drives a cluster through suspend and resume the way the reconciler
// does, one Compute and at most one write per step, and checks that every step is a write and
// that a repeated step is not.
func TestSuspendLifecycle(t *testing.T) {
	readyPods := podList(headPod().Ready(), workerPod("w1").Ready())
	rc := oneWorkerCluster().Obj()
	type step struct {
		name         string
		suspend      bool
		pods         []corev1.Pod
		wantSuspend  rayv1.RayClusterConditionType
		wantState    rayv1.ClusterState
		provisioned  bool
		becameProvis bool
	}
	steps := []step{
		{name: "running", pods: readyPods, wantState: rayv1.Ready, provisioned: true, becameProvis: true},
		{name: "suspend requested", suspend: true, pods: readyPods, wantSuspend: rayv1.RayClusterSuspending, wantState: rayv1.Ready, provisioned: true},
		{name: "Pods terminating", suspend: true, pods: podList(headPod().Ready()), wantSuspend: rayv1.RayClusterSuspending, wantState: rayv1.Ready, provisioned: true},
		{name: "Pods gone", suspend: true, pods: nil, wantSuspend: rayv1.RayClusterSuspended, wantState: rayv1.Suspended},
		{name: "resumed", suspend: false, pods: nil, wantState: rayv1.Suspended},
		{name: "Pods back but not ready", pods: podList(headPod().Running().Condition(corev1.PodReady, corev1.ConditionFalse)), wantState: rayv1.Suspended},
		{name: "ready again", pods: readyPods, wantState: rayv1.Ready, provisioned: true, becameProvis: true},
	}
	now := t0
	for _, s := range steps {
		now = metav1.NewTime(now.Add(time.Minute))
		rc.Spec.Suspend = &s.suspend
		obs := Observed{Pods: s.pods, HeadService: dashboardService()}
		st, err := Compute(rc, obs, now)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !Changed(&rc.Status, &st) {
			t.Errorf("%s: Changed = false, want a write", s.name)
		}
		if got := BecameProvisioned(&rc.Status, &st); got != s.becameProvis {
			t.Errorf("%s: BecameProvisioned = %v, want %v", s.name, got, s.becameProvis)
		}
		if got := SuspendState(&st); got != s.wantSuspend {
			t.Errorf("%s: suspend state = %q, want %q", s.name, got, s.wantSuspend)
		}
		if st.State != s.wantState {
			t.Errorf("%s: state = %q, want %q", s.name, st.State, s.wantState)
		}
		if got := meta.IsStatusConditionTrue(st.Conditions, string(rayv1.RayClusterProvisioned)); got != s.provisioned {
			t.Errorf("%s: provisioned = %v, want %v", s.name, got, s.provisioned)
		}
		rc.Status = roundTrip(t, st)

		// Nothing new observed: the next reconcile must not write.
		again, err := Compute(rc, obs, metav1.NewTime(now.Add(time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		if Changed(&rc.Status, &again) {
			t.Errorf("%s: repeated Compute changed the status:\nold %+v\nnew %+v", s.name, rc.Status, again)
		}
	}
	if rc.Status.StateTransitionTimes[rayv1.Suspended] == nil || rc.Status.StateTransitionTimes[rayv1.Ready] == nil {
		t.Errorf("stateTransitionTimes = %v, want both ready and suspended", rc.Status.StateTransitionTimes)
	}
}

func TestChanged(t *testing.T) {
	base, err := Compute(oneWorkerCluster().Obj(), Observed{
		Pods:        podList(headPod().Ready(), workerPod("w1").Ready()),
		HeadService: dashboardService(),
	}, t1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*rayv1.RayClusterStatus)
		want bool
	}{
		{name: "identical", edit: func(*rayv1.RayClusterStatus) {}, want: false},
		{name: "lastUpdateTime only", edit: func(s *rayv1.RayClusterStatus) { s.LastUpdateTime = &metav1.Time{Time: t1.Add(time.Hour)} }, want: false},
		{name: "lastUpdateTime removed", edit: func(s *rayv1.RayClusterStatus) { s.LastUpdateTime = nil }, want: false},
		{name: "observedGeneration only", edit: func(s *rayv1.RayClusterStatus) { s.ObservedGeneration = 99 }, want: true},
		{name: "same quantity spelt differently", edit: func(s *rayv1.RayClusterStatus) { s.DesiredCPU = resource.MustParse("2000m") }, want: false},
		{name: "same instant in another zone", edit: func(s *rayv1.RayClusterStatus) {
			s.Conditions[0].LastTransitionTime = metav1.NewTime(s.Conditions[0].LastTransitionTime.In(time.FixedZone("x", 3600)))
		}, want: false},
		{name: "state", edit: func(s *rayv1.RayClusterStatus) { s.State = rayv1.Suspended }, want: true},
		{name: "reason", edit: func(s *rayv1.RayClusterStatus) { s.Reason = "x" }, want: true},
		{name: "ready workers", edit: func(s *rayv1.RayClusterStatus) { s.ReadyWorkerReplicas++ }, want: true},
		{name: "available workers", edit: func(s *rayv1.RayClusterStatus) { s.AvailableWorkerReplicas++ }, want: true},
		{name: "desired workers", edit: func(s *rayv1.RayClusterStatus) { s.DesiredWorkerReplicas++ }, want: true},
		{name: "min workers", edit: func(s *rayv1.RayClusterStatus) { s.MinWorkerReplicas++ }, want: true},
		{name: "max workers", edit: func(s *rayv1.RayClusterStatus) { s.MaxWorkerReplicas++ }, want: true},
		{name: "desired CPU", edit: func(s *rayv1.RayClusterStatus) { s.DesiredCPU = resource.MustParse("3") }, want: true},
		{name: "desired memory", edit: func(s *rayv1.RayClusterStatus) { s.DesiredMemory = resource.MustParse("1") }, want: true},
		{name: "desired GPU", edit: func(s *rayv1.RayClusterStatus) { s.DesiredGPU = resource.MustParse("1") }, want: true},
		{name: "desired TPU", edit: func(s *rayv1.RayClusterStatus) { s.DesiredTPU = resource.MustParse("1") }, want: true},
		{name: "endpoint", edit: func(s *rayv1.RayClusterStatus) { s.Endpoints["dashboard"] = "30265" }, want: true},
		{name: "endpoints gone", edit: func(s *rayv1.RayClusterStatus) { s.Endpoints = nil }, want: true},
		{name: "head pod IP", edit: func(s *rayv1.RayClusterStatus) { s.Head.PodIP = "10.0.0.9" }, want: true},
		{name: "head service name", edit: func(s *rayv1.RayClusterStatus) { s.Head.ServiceName = "other" }, want: true},
		{name: "condition message", edit: func(s *rayv1.RayClusterStatus) { s.Conditions[0].Message = "x" }, want: true},
		{name: "condition transition time", edit: func(s *rayv1.RayClusterStatus) { s.Conditions[0].LastTransitionTime = t0 }, want: true},
		{name: "condition removed", edit: func(s *rayv1.RayClusterStatus) { s.Conditions = s.Conditions[1:] }, want: true},
		{name: "state transition time", edit: func(s *rayv1.RayClusterStatus) { s.StateTransitionTimes[rayv1.Ready] = &t0 }, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := base.DeepCopy()
			tc.edit(next)
			if got := Changed(&base, next); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChangedEmptyValues(t *testing.T) {
	empty := &rayv1.RayClusterStatus{}
	tests := []struct {
		name       string
		prev, next *rayv1.RayClusterStatus
		want       bool
	}{
		{"both nil", nil, nil, false},
		{"nil and empty", nil, empty, false},
		{"nil and empty maps", &rayv1.RayClusterStatus{Endpoints: map[string]string{}}, empty, false},
		{"nil and a state", nil, &rayv1.RayClusterStatus{State: rayv1.Ready}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Changed(tc.prev, tc.next); got != tc.want {
				t.Errorf("Changed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBecameProvisioned(t *testing.T) {
	type conds = map[rayv1.RayClusterConditionType]bool
	st := func(c conds) *rayv1.RayClusterStatus { s := withConditions(c); return &s }
	tests := []struct {
		name       string
		prev, next *rayv1.RayClusterStatus
		want       bool
	}{
		{"unset to true", st(nil), st(conds{rayv1.RayClusterProvisioned: true}), true},
		{"nil to true", nil, st(conds{rayv1.RayClusterProvisioned: true}), true},
		{"false to true", st(conds{rayv1.RayClusterProvisioned: false}), st(conds{rayv1.RayClusterProvisioned: true}), true},
		{"true to true", st(conds{rayv1.RayClusterProvisioned: true}), st(conds{rayv1.RayClusterProvisioned: true}), false},
		{"true to false", st(conds{rayv1.RayClusterProvisioned: true}), st(conds{rayv1.RayClusterProvisioned: false}), false},
		{"false to false", st(conds{rayv1.RayClusterProvisioned: false}), st(conds{rayv1.RayClusterProvisioned: false}), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := BecameProvisioned(tc.prev, tc.next); got != tc.want {
				t.Errorf("BecameProvisioned = %v, want %v", got, tc.want)
			}
		})
	}
}
