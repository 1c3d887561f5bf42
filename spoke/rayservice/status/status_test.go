package status

import (
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
	"github.com/rayfleet/rayfleet/spoke/rayservice/upgrade"
)

var now = metav1.NewTime(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))

func cond(st *rayv1.RayServiceStatuses, t rayv1.RayServiceConditionType) *metav1.Condition {
	return meta.FindStatusCondition(st.Conditions, string(t))
}

func running() map[string]rayv1.AppStatus {
	return map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}}
}

func TestComputeFirstReconcile(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	st, out := Compute(rs, Observed{NewClusterName: "svc-abcde", ZeroDowntimeDefault: true}, false, now)

	if out.Prepared != "svc-abcde" || st.PendingServiceStatus.RayClusterName != "svc-abcde" {
		t.Fatalf("prepared %q, pending %q", out.Prepared, st.PendingServiceStatus.RayClusterName)
	}
	if st.ObservedGeneration != rs.Generation {
		t.Errorf("observedGeneration = %d", st.ObservedGeneration)
	}
	for _, ct := range []rayv1.RayServiceConditionType{rayv1.RayServiceReady, rayv1.UpgradeInProgress} {
		c := cond(&st, ct)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(rayv1.RayServiceInitializing) || !c.LastTransitionTime.Equal(&now) {
			t.Errorf("%s = %+v, want False/Initializing at now", ct, c)
		}
	}
	if st.ServiceStatus != rayv1.NotRunning || rs.Status.PendingServiceStatus.RayClusterName != "" {
		t.Error("serviceStatus set, or the input RayService modified")
	}
}

func TestComputePromotion(t *testing.T) {
	upgraded := raybuilder.MakeRayService("svc", "ns").Image("ray:2")
	active := fixture.Cluster(raybuilder.MakeRayService("svc", "ns").Obj(), "svc-a")
	pending := fixture.Cluster(upgraded.Obj(), "svc-p")
	pending.Status.State = rayv1.Ready
	rs := upgraded.Active("svc-a").Pending("svc-p").Upgrading().
		Condition(rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints).Obj()

	tests := []struct {
		name             string
		head, serve      string
		wantActive       string
		wantPending      string
		wantMismatch     bool
		wantPromoted     string
		wantUpgradeState metav1.ConditionStatus
	}{
		{"services switched: promoted", "svc-p", "svc-p", "svc-p", "", false, "svc-p", metav1.ConditionFalse},
		{"services still on the active cluster", "svc-a", "svc-a", "svc-a", "svc-p", false, "", metav1.ConditionTrue},
		// KubeRay panics on both of these.
		{"head and serve Services disagree", "svc-p", "svc-a", "svc-a", "svc-p", true, "", metav1.ConditionTrue},
		{"Services on an unknown cluster", "svc-x", "svc-x", "svc-a", "svc-p", true, "", metav1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, out := Compute(rs, Observed{
				Active: active, Pending: pending, PendingServe: ClusterServe{Apps: running()},
				ActiveServe:        ClusterServe{Keep: true},
				ServicesReconciled: true, HeadSelects: tt.head, ServeSelects: tt.serve,
				ActiveEndpoints: 2, NewClusterName: "svc-zzzzz", ZeroDowntimeDefault: true,
			}, false, now)
			if st.ActiveServiceStatus.RayClusterName != tt.wantActive || st.PendingServiceStatus.RayClusterName != tt.wantPending {
				t.Fatalf("active %q pending %q", st.ActiveServiceStatus.RayClusterName, st.PendingServiceStatus.RayClusterName)
			}
			if (out.SelectorMismatch != "") != tt.wantMismatch || out.Promoted != tt.wantPromoted || out.Prepared != "" {
				t.Fatalf("outcome %+v", out)
			}
			if c := cond(&st, rayv1.UpgradeInProgress); c.Status != tt.wantUpgradeState {
				t.Errorf("UpgradeInProgress = %s", c.Status)
			}
			if tt.wantPromoted != "" {
				if st.ActiveServiceStatus.RayClusterStatus.State != rayv1.Ready || st.ActiveServiceStatus.Applications["fruit"].Status != "RUNNING" {
					t.Errorf("the pending cluster's status did not move to active: %+v", st.ActiveServiceStatus)
				}
			}
			if c := cond(&st, rayv1.RayServiceReady); c.Status != metav1.ConditionTrue {
				t.Errorf("Ready = %+v", c)
			}
		})
	}
}

func TestComputeIncremental(t *testing.T) {
	w := raybuilder.MakeRayService("svc", "ns").Incremental(50, 20, 30)
	active := fixture.Cluster(w.Obj(), "svc-a")
	pending := fixture.Cluster(w.Obj(), "svc-p")
	moved := metav1.NewTime(now.Add(-time.Minute))
	base := func() *rayv1.RayService {
		rs := w.Obj()
		rs.Status.ActiveServiceStatus = rayv1.RayServiceStatus{RayClusterName: "svc-a", TargetCapacity: ptr.To[int32](50),
			TrafficRoutedPercent: ptr.To[int32](80), LastTrafficMigratedTime: &moved}
		rs.Status.PendingServiceStatus = rayv1.RayServiceStatus{RayClusterName: "svc-p", TargetCapacity: ptr.To[int32](100),
			TrafficRoutedPercent: ptr.To[int32](20), LastTrafficMigratedTime: &moved}
		meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: string(rayv1.UpgradeInProgress),
			Status: metav1.ConditionTrue, Reason: string(rayv1.BothActivePendingClustersExist)})
		return rs
	}
	obs := func(weights upgrade.Weights) Observed {
		return Observed{Active: active, Pending: pending, Weights: &weights, ServicesReconciled: true,
			HeadSelects: "svc-a", ServeSelects: "svc-a", ActiveEndpoints: 2, PendingEndpoints: 3,
			NewClusterName: "svc-new", ZeroDowntimeDefault: true}
	}

	t.Run("weights recorded, migration time only when they move", func(t *testing.T) {
		st, _ := Compute(base(), obs(upgrade.Weights{Active: 60, Pending: 40}), true, now)
		if *st.PendingServiceStatus.TrafficRoutedPercent != 40 || !st.PendingServiceStatus.LastTrafficMigratedTime.Equal(&now) {
			t.Errorf("pending = %+v", st.PendingServiceStatus)
		}
		st, _ = Compute(base(), obs(upgrade.Weights{Active: 80, Pending: 20}), true, now)
		if !st.PendingServiceStatus.LastTrafficMigratedTime.Equal(&moved) {
			t.Errorf("migration time moved without traffic moving: %v", st.PendingServiceStatus.LastTrafficMigratedTime)
		}
	})
	t.Run("both clusters' endpoints count", func(t *testing.T) {
		st, _ := Compute(base(), obs(upgrade.Weights{Active: 80, Pending: 20}), true, now)
		if st.NumServeEndpoints != 5 {
			t.Errorf("numServeEndpoints = %d, want 5", st.NumServeEndpoints)
		}
	})
	t.Run("not promoted before completion", func(t *testing.T) {
		_, out := Compute(base(), obs(upgrade.Weights{Active: 0, Pending: 100}), true, now)
		if out.Promoted != "" {
			t.Errorf("promoted with active capacity 50")
		}
	})
	t.Run("promoted at 100/0", func(t *testing.T) {
		rs := base()
		rs.Status.ActiveServiceStatus.TargetCapacity = ptr.To[int32](0)
		st, out := Compute(rs, obs(upgrade.Weights{Active: 0, Pending: 100}), true, now)
		if out.Promoted != "svc-p" || st.ActiveServiceStatus.RayClusterName != "svc-p" || st.PendingServiceStatus.RayClusterName != "" {
			t.Fatalf("outcome %+v, status %+v", out, st)
		}
		if *st.ActiveServiceStatus.TrafficRoutedPercent != 100 || *st.ActiveServiceStatus.TargetCapacity != 100 {
			t.Errorf("active after promotion = %+v", st.ActiveServiceStatus)
		}
	})
	t.Run("rollback finished drops the pending cluster", func(t *testing.T) {
		rs := base()
		rs.Status.ActiveServiceStatus.TargetCapacity = ptr.To[int32](100)
		rs.Status.PendingServiceStatus.TargetCapacity = ptr.To[int32](0)
		StartRollback(&rs.Status, now)
		st, out := Compute(rs, obs(upgrade.Weights{Active: 100, Pending: 0}), true, now)
		if !out.RollbackFinished || st.PendingServiceStatus.RayClusterName != "" || cond(&st, rayv1.RollbackInProgress) != nil {
			t.Fatalf("outcome %+v, status %+v", out, st)
		}
		if c := cond(&st, rayv1.UpgradeInProgress); c.Status != metav1.ConditionFalse || c.Reason != string(rayv1.NoPendingCluster) {
			t.Errorf("UpgradeInProgress = %+v", c)
		}
		if out.Prepared != "" {
			t.Error("a new cluster prepared right after a rollback to a matching spec")
		}
	})
	t.Run("a new upgrade starts its pending cluster at capacity 0", func(t *testing.T) {
		rs := raybuilder.MakeRayService("svc", "ns").Incremental(50, 20, 30).Image("ray:2").Active("svc-a").Obj()
		rs.Status.ActiveServiceStatus.TargetCapacity = ptr.To[int32](100)
		st, out := Compute(rs, Observed{Active: active, NewClusterName: "svc-new", ZeroDowntimeDefault: true}, true, now)
		if out.Prepared != "svc-new" || ptr.Deref(st.PendingServiceStatus.TargetCapacity, -1) != 0 {
			t.Fatalf("outcome %+v, pending %+v", out, st.PendingServiceStatus)
		}
	})
	t.Run("the first cluster starts at full capacity and is promoted once serving", func(t *testing.T) {
		rs := w.Obj()
		st, _ := Compute(rs, Observed{NewClusterName: "svc-p", ZeroDowntimeDefault: true}, true, now)
		if ptr.Deref(st.PendingServiceStatus.TargetCapacity, -1) != 100 {
			t.Fatalf("pending = %+v", st.PendingServiceStatus)
		}
		rs.Status = st
		st, out := Compute(rs, Observed{Pending: pending, ServicesReconciled: true, HeadSelects: "svc-p", ServeSelects: "svc-p"}, true, now)
		if out.Promoted != "svc-p" || st.ActiveServiceStatus.RayClusterName != "svc-p" {
			t.Fatalf("outcome %+v", out)
		}
	})
}

func TestConditions(t *testing.T) {
	initAt := metav1.NewTime(now.Add(-10 * time.Minute))
	initializing := func(w *raybuilder.RayServiceWrapper) *rayv1.RayService {
		rs := w.Obj()
		for _, ct := range []rayv1.RayServiceConditionType{rayv1.RayServiceReady, rayv1.UpgradeInProgress} {
			meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: string(ct), Status: metav1.ConditionFalse,
				Reason: string(rayv1.RayServiceInitializing), LastTransitionTime: initAt})
		}
		return rs
	}
	readyRS := raybuilder.MakeRayService("svc", "ns").Active("svc-a").
		Condition(rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints).Obj()
	tests := []struct {
		name          string
		rs            *rayv1.RayService
		obs           Observed
		wantReady     metav1.ConditionStatus
		wantReason    rayv1.RayServiceConditionReason
		wantUpgrade   rayv1.RayServiceConditionReason
		wantMsg       string
		wantTimedOut  bool
		wantNoCluster bool
	}{
		{"initializing", initializing(raybuilder.MakeRayService("svc", "ns").Pending("svc-p")), Observed{},
			metav1.ConditionFalse, rayv1.RayServiceInitializing, rayv1.RayServiceInitializing, msgInitializing, false, false},
		{"endpoints: ready", initializing(raybuilder.MakeRayService("svc", "ns").Active("svc-a")), Observed{ActiveEndpoints: 1},
			metav1.ConditionTrue, rayv1.NonZeroServeEndpoints, rayv1.NoPendingCluster, msgNonZeroEndpoints, false, false},
		{"endpoints gone", readyRS, Observed{},
			metav1.ConditionFalse, rayv1.ZeroServeEndpoints, rayv1.NoPendingCluster, msgZeroEndpoints, false, false},
		{"both clusters", raybuilder.MakeRayService("svc", "ns").Active("svc-a").Pending("svc-p").
			Condition(rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints).Obj(), Observed{ActiveEndpoints: 3},
			metav1.ConditionTrue, rayv1.NonZeroServeEndpoints, rayv1.BothActivePendingClustersExist, msgNonZeroEndpoints, false, false},
		{"no active cluster after initializing", raybuilder.MakeRayService("svc", "ns").Pending("svc-p").
			Condition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.ZeroServeEndpoints).
			Condition(rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.NoPendingCluster).Obj(), Observed{},
			metav1.ConditionFalse, rayv1.ZeroServeEndpoints, rayv1.NoActiveCluster, "", false, false},
		{"timeout not reached", initializing(raybuilder.MakeRayService("svc", "ns").Pending("svc-p")),
			Observed{InitializingTimeout: metav1.Duration{Duration: 11 * time.Minute}},
			metav1.ConditionFalse, rayv1.RayServiceInitializing, rayv1.RayServiceInitializing, msgInitializing, false, false},
		{"timeout reached: clusters dropped", initializing(raybuilder.MakeRayService("svc", "ns").Pending("svc-p")),
			Observed{InitializingTimeout: metav1.Duration{Duration: 10 * time.Minute}},
			metav1.ConditionFalse, rayv1.RayServiceInitializingTimeout, rayv1.RayServiceInitializing, "configured timeout of 10m0s", true, true},
		{"endpoints beat the timeout", initializing(raybuilder.MakeRayService("svc", "ns").Active("svc-a")),
			Observed{ActiveEndpoints: 1, InitializingTimeout: metav1.Duration{Duration: time.Minute}},
			metav1.ConditionTrue, rayv1.NonZeroServeEndpoints, rayv1.NoPendingCluster, msgNonZeroEndpoints, false, false},
		{"valid again after a validation failure: initializing afresh", raybuilder.MakeRayService("svc", "ns").Pending("svc-p").
			Condition(rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceValidationFailed).Obj(), Observed{},
			metav1.ConditionFalse, rayv1.RayServiceInitializing, rayv1.RayServiceInitializing, msgInitializing, false, false},
		{"a dashboard problem of the first cluster shows in Ready", initializing(raybuilder.MakeRayService("svc", "ns").Pending("svc-p")),
			Observed{PendingServe: ClusterServe{Problem: "HTTP 500"}},
			metav1.ConditionFalse, rayv1.RayServiceInitializing, rayv1.RayServiceInitializing, msgInitializing + "; HTTP 500", false, false},
		{"a dashboard problem of the pending cluster shows in UpgradeInProgress", raybuilder.MakeRayService("svc", "ns").Active("svc-a").Pending("svc-p").
			Condition(rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints).Obj(),
			Observed{ActiveEndpoints: 1, PendingServe: ClusterServe{Problem: "unreachable"}},
			metav1.ConditionTrue, rayv1.NonZeroServeEndpoints, rayv1.BothActivePendingClustersExist, msgNonZeroEndpoints, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.rs.Status.DeepCopy()
			st.NumServeEndpoints = tt.obs.ActiveEndpoints
			timedOut := setConditions(st, tt.obs, now)
			ready, up := cond(st, rayv1.RayServiceReady), cond(st, rayv1.UpgradeInProgress)
			if ready.Status != tt.wantReady || ready.Reason != string(tt.wantReason) || !strings.Contains(ready.Message, tt.wantMsg) {
				t.Errorf("Ready = %s/%s %q", ready.Status, ready.Reason, ready.Message)
			}
			if up.Reason != string(tt.wantUpgrade) {
				t.Errorf("UpgradeInProgress reason = %s, want %s", up.Reason, tt.wantUpgrade)
			}
			if (timedOut != "") != tt.wantTimedOut {
				t.Errorf("timedOut = %q", timedOut)
			}
			if tt.wantNoCluster && (st.ActiveServiceStatus.RayClusterName != "" || st.PendingServiceStatus.RayClusterName != "") {
				t.Errorf("clusters still named after the timeout")
			}
			if strings.Contains(tt.name, "pending cluster shows") && !strings.Contains(up.Message, "unreachable") {
				t.Errorf("UpgradeInProgress message %q", up.Message)
			}
		})
	}
}

func TestInitializingTimeoutState(t *testing.T) {
	timedOut := func(gen, observed int64) *rayv1.RayService {
		rs := raybuilder.MakeRayService("svc", "ns").Obj()
		rs.Generation = gen
		meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse,
			Reason: string(rayv1.RayServiceInitializingTimeout), ObservedGeneration: observed})
		meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionFalse,
			Reason: string(rayv1.RayServiceInitializing), ObservedGeneration: observed})
		return rs
	}
	tests := []struct {
		name                      string
		rs                        *rayv1.RayService
		wantTerminal, wantRestart bool
	}{
		{"timed out for this generation: terminal", timedOut(2, 2), true, false},
		{"spec changed since: starts over", timedOut(3, 2), false, true},
		{"never timed out", raybuilder.MakeRayService("svc", "ns").Obj(), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InitializingTimedOut(tt.rs); got != tt.wantTerminal {
				t.Errorf("InitializingTimedOut = %v", got)
			}
			if got := RestartAfterTimeout(tt.rs); got != tt.wantRestart {
				t.Errorf("RestartAfterTimeout = %v", got)
			}
			if tt.wantRestart && len(tt.rs.Status.Conditions) != 0 {
				t.Errorf("conditions left: %+v", tt.rs.Status.Conditions)
			}
		})
	}
}

// withConditions sets e's serving and terminating conditions.
func withConditions(e discoveryv1.Endpoint, serving, terminating *bool) discoveryv1.Endpoint {
	e.Conditions.Serving, e.Conditions.Terminating = serving, terminating
	return e
}

// withAddresses sets e's addresses.
func withAddresses(e discoveryv1.Endpoint, addresses ...string) discoveryv1.Endpoint {
	e.Addresses = addresses
	return e
}

func TestReadyEndpoints(t *testing.T) {
	ep := func(uid string, ready *bool) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{Conditions: discoveryv1.EndpointConditions{Ready: ready}}
		if uid != "" {
			e.TargetRef = &corev1.ObjectReference{Kind: "Pod", UID: types.UID(uid)}
		}
		return e
	}
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   int32
	}{
		{"none", nil, 0},
		{"ready pods", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("a", yes), ep("b", yes)}}}, 2},
		{"dual stack counts a Pod once", []discoveryv1.EndpointSlice{
			{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{ep("a", yes), ep("b", yes)}},
			{AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{ep("a", yes), ep("b", yes)}},
		}, 2},
		{"not ready and unknown readiness are not counted", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("a", no), ep("b", nil), ep("c", yes)}}}, 1},
		{"endpoints without a Pod are not counted", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("", yes)}}}, 0},
		{"a target without a UID is not counted", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{{
			Conditions: discoveryv1.EndpointConditions{Ready: yes}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "a"},
		}}}}, 0},
		// Ready alone decides, as in KubeRay: serving-but-terminating Pods are draining.
		{"serving but not ready (terminating) is not counted", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
			withConditions(ep("a", no), yes, yes), withConditions(ep("b", nil), yes, nil),
		}}}, 0},
		{"ready whatever serving and terminating say", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
			withConditions(ep("a", yes), no, yes), withConditions(ep("b", yes), nil, nil),
		}}}, 2},
		{"several addresses of one endpoint count one Pod", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
			withAddresses(ep("a", yes), "10.0.0.1", "10.0.0.2", "10.0.0.3"),
		}}}, 1},
		{"several slices, whoever made them, are summed by Pod", []discoveryv1.EndpointSlice{
			{Endpoints: []discoveryv1.Endpoint{ep("a", yes), ep("b", no)}},
			{Endpoints: []discoveryv1.Endpoint{ep("b", yes), ep("c", yes)}},
			{Endpoints: []discoveryv1.Endpoint{ep("a", yes), ep("d", nil)}},
			{},
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadyEndpoints(tt.slices); got != tt.want {
				t.Fatalf("ReadyEndpoints = %d, want %d", got, tt.want)
			}
		})
	}
}
