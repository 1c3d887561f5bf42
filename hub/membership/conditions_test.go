package membership

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func report(heartbeat time.Time) *fleetv1alpha1.ClusterReport {
	return &fleetv1alpha1.ClusterReport{Status: fleetv1alpha1.ClusterReportStatus{
		HeartbeatTime:     metav1.NewTime(heartbeat),
		AgentVersion:      "v1.0.0",
		KubernetesVersion: "v1.36.1",
		PodSecurityLevel:  "restricted",
		Capacity: fleetv1alpha1.ClusterCapacity{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")},
			Free:        corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")},
		},
		Nodes:     fleetv1alpha1.NodeCounts{Total: 3, Ready: 2},
		Workloads: fleetv1alpha1.WorkloadCounts{RayClusters: 1, RayServices: 1},
	}}
}

// blockedReport is a fresh report of a spoke that gives way to another controller.
func blockedReport(heartbeat time.Time) *fleetv1alpha1.ClusterReport {
	r := report(heartbeat)
	r.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonAnotherOperatorActive, Message: "KubeRay's operator is active on this cluster"}}
	return r
}

// readyStatus is the status of a healthy member last seen at heartbeat.
func readyStatus(heartbeat time.Time) fleetv1alpha1.MemberClusterStatus {
	return Status(fleetv1alpha1.MemberClusterStatus{}, Observation{
		Now: heartbeat, HeartbeatTimeout: DefaultHeartbeatTimeout, Join: JoinState{Joined: true},
		Report: report(heartbeat),
	})
}

// seenAt is a hub that saw heartbeat at, on its own clock.
func seenAt(heartbeat, at time.Time) *HeartbeatSeen {
	return &HeartbeatSeen{Heartbeat: heartbeat, At: at}
}

func TestStatus(t *testing.T) {
	probeErr := errors.New("context deadline exceeded")
	joined := JoinState{Joined: true}
	type want struct {
		status  metav1.ConditionStatus
		reason  string
		message string // substring
	}
	tests := []struct {
		name                     string
		prev                     fleetv1alpha1.MemberClusterStatus
		obs                      Observation
		joined, reachable, agent want
		ready                    metav1.ConditionStatus
		readyMessage             string
		wantHeartbeat            time.Time
		// restarted is a hub that remembers no heartbeat: without it, what prev shows is what
		// the hub saw (obs.Seen), as in one process.
		restarted bool
		// wantObserved, when set, is the lastHeartbeatObservedTime expected.
		wantObserved time.Time
	}{
		{
			name:      "fresh report: everything True and mirrored",
			obs:       Observation{Now: t0.Add(3 * time.Second), Join: joined, Report: report(t0), Seen: seenAt(t0, t0)},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "last heartbeat 3s ago (timeout 40s)"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0,
		},
		{
			name:      "stale report: AgentReady False naming when the hub last saw a new heartbeat",
			obs:       Observation{Now: t0.Add(41 * time.Second), Join: joined, Report: report(t0), Seen: seenAt(t0, t0)},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent: want{metav1.ConditionFalse, fleetv1alpha1.ReasonHeartbeatStale,
				"no new heartbeat since 2026-03-01T12:00:00Z (the hub's clock), more than 40s ago"},
			ready: metav1.ConditionFalse, readyMessage: "AgentReady: no new heartbeat", wantHeartbeat: t0,
		},
		{
			name:      "heartbeat exactly at the timeout is still fresh",
			obs:       Observation{Now: t0.Add(40 * time.Second), Join: joined, Report: report(t0), Seen: seenAt(t0, t0)},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "40s ago"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0,
		},
		{
			name:      "no ClusterReport on a reachable member",
			obs:       Observation{Now: t0, Join: joined, ReportMissing: true},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionFalse, fleetv1alpha1.ReasonClusterReportNotFound, "is the spoke agent installed?"},
			ready:     metav1.ConditionFalse, readyMessage: "AgentReady: the member has no ClusterReport",
		},
		{
			name: "Secret missing: not joined, nothing probed",
			obs: Observation{Now: t0, Join: JoinState{Reason: fleetv1alpha1.ReasonKubeconfigSecretNotFound,
				Message: "Secret rayfleet-system/m1 not found"}},
			joined:    want{metav1.ConditionFalse, fleetv1alpha1.ReasonKubeconfigSecretNotFound, "rayfleet-system/m1 not found"},
			reachable: want{metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable, "not joined"},
			agent:     want{metav1.ConditionFalse, fleetv1alpha1.ReasonHeartbeatStale, "no heartbeat seen yet"},
			ready:     metav1.ConditionFalse, readyMessage: "Joined: Secret rayfleet-system/m1 not found; Reachable: not probed",
		},
		{
			name: "first failure of a reachable member: hysteresis keeps it True",
			prev: readyStatus(t0),
			obs: Observation{Now: t0.Add(5 * time.Second), Join: joined, ProbeErr: probeErr,
				Streak: FailureStreak{Count: 1, Since: t0.Add(5 * time.Second)}},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, "answers"},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "5s ago"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0,
		},
		{
			name: "third consecutive failure: Reachable False with the error",
			prev: readyStatus(t0),
			obs: Observation{Now: t0.Add(12 * time.Second), Join: joined, ProbeErr: probeErr,
				Streak: FailureStreak{Count: 3, Since: t0.Add(2 * time.Second)}},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable, "context deadline exceeded"},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "12s ago"},
			ready:     metav1.ConditionFalse, readyMessage: "Reachable: context deadline exceeded", wantHeartbeat: t0,
		},
		{
			name: "two failures spanning 30s: Reachable False",
			prev: readyStatus(t0),
			obs: Observation{Now: t0.Add(35 * time.Second), Join: joined, ProbeErr: probeErr,
				Streak: FailureStreak{Count: 2, Since: t0.Add(5 * time.Second)}},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable, "context deadline exceeded"},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "35s ago"},
			ready:     metav1.ConditionFalse, wantHeartbeat: t0,
		},
		{
			name: "unreachable member keeps its last mirror, whose heartbeat goes stale",
			prev: readyStatus(t0),
			obs: Observation{Now: t0.Add(60 * time.Second), Join: joined, ProbeErr: probeErr,
				Streak: FailureStreak{Count: 6, Since: t0.Add(5 * time.Second)}},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable, "context deadline exceeded"},
			agent:     want{metav1.ConditionFalse, fleetv1alpha1.ReasonHeartbeatStale, "more than 40s ago"},
			ready:     metav1.ConditionFalse, wantHeartbeat: t0,
		},
		{
			name: "first probe ever fails: False at once (no True to protect)",
			obs: Observation{Now: t0, Join: joined, ProbeErr: probeErr,
				Streak: FailureStreak{Count: 1, Since: t0}},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionFalse, fleetv1alpha1.ReasonAPIServerUnreachable, "context deadline exceeded"},
			agent:     want{metav1.ConditionFalse, fleetv1alpha1.ReasonHeartbeatStale, "no heartbeat seen yet"},
			ready:     metav1.ConditionFalse,
		},
		{
			name:      "the spoke says another operator is active: AgentReady False with its message",
			obs:       Observation{Now: t0.Add(3 * time.Second), Join: joined, Report: blockedReport(t0)},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionFalse, fleetv1alpha1.ReasonAnotherOperatorActive, "KubeRay's operator is active"},
			ready:     metav1.ConditionFalse, readyMessage: "AgentReady: KubeRay's operator", wantHeartbeat: t0,
		},
		{
			name: "a failed probe keeps the other operator's verdict while the heartbeat is fresh",
			prev: Status(fleetv1alpha1.MemberClusterStatus{}, Observation{Now: t0, HeartbeatTimeout: DefaultHeartbeatTimeout,
				Join: joined, Report: blockedReport(t0)}),
			obs: Observation{Now: t0.Add(5 * time.Second), Join: joined, ProbeErr: probeErr,
				Streak: FailureStreak{Count: 1, Since: t0.Add(5 * time.Second)}},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionFalse, fleetv1alpha1.ReasonAnotherOperatorActive, "KubeRay's operator is active"},
			ready:     metav1.ConditionFalse, wantHeartbeat: t0,
		},
		{
			name: "the other operator gone: the next report turns AgentReady True",
			prev: Status(fleetv1alpha1.MemberClusterStatus{}, Observation{Now: t0, HeartbeatTimeout: DefaultHeartbeatTimeout,
				Join: joined, Report: blockedReport(t0)}),
			obs:       Observation{Now: t0.Add(11 * time.Second), Join: joined, Report: report(t0.Add(10 * time.Second))},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "0s ago"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0.Add(10 * time.Second),
		},
		{
			name: "a spoke waiting for its informers (AgentNotReady) still counts on its heartbeat",
			obs: Observation{Now: t0.Add(time.Second), Join: joined, Report: func() *fleetv1alpha1.ClusterReport {
				r := report(t0)
				r.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionAgentReady, Status: metav1.ConditionFalse,
					Reason: fleetv1alpha1.ReasonAgentNotReady, Message: "the Node and Pod informers have not synced yet"}}
				return r
			}(), Seen: seenAt(t0, t0)},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "1s ago"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0,
		},
		{
			name: "a success after failures turns Reachable True at once",
			prev: Status(readyStatus(t0), Observation{Now: t0.Add(40 * time.Second), Join: joined,
				HeartbeatTimeout: DefaultHeartbeatTimeout, ProbeErr: probeErr, Streak: FailureStreak{Count: 3, Since: t0}}),
			obs:       Observation{Now: t0.Add(41 * time.Second), Join: joined, Report: report(t0.Add(40 * time.Second))},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "0s ago"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0.Add(40 * time.Second),
		},
		{
			// Its heartbeats carry times 45 s before the hub's; each is new when the hub reads it.
			name: "a member whose clock is 45 s behind stays Ready",
			prev: readyStatus(t0),
			obs: Observation{Now: t0.Add(10 * time.Second), Join: joined, Report: report(t0.Add(-35 * time.Second)),
				Seen: seenAt(t0.Add(-45*time.Second), t0)},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "0s ago"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0.Add(-35 * time.Second), wantObserved: t0.Add(10 * time.Second),
		},
		{
			name: "a member whose clock is an hour ahead goes stale when its heartbeat stops changing",
			obs: Observation{Now: t0.Add(41 * time.Second), Join: joined, Report: report(t0.Add(time.Hour)),
				Seen: seenAt(t0.Add(time.Hour), t0)},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionFalse, fleetv1alpha1.ReasonHeartbeatStale, "since 2026-03-01T12:00:00Z (the hub's clock)"},
			ready:     metav1.ConditionFalse, wantHeartbeat: t0.Add(time.Hour), wantObserved: t0,
		},
		{
			name: "a restarted hub counts from its first observation, not from another hub's",
			prev: Status(readyStatus(t0.Add(-10*time.Minute)), Observation{Now: t0.Add(-9 * time.Minute), Join: joined,
				HeartbeatTimeout: DefaultHeartbeatTimeout, Seen: seenAt(t0.Add(-10*time.Minute), t0.Add(-10*time.Minute))}),
			restarted: true,
			obs:       Observation{Now: t0, Join: joined, Report: report(t0.Add(-10 * time.Minute))},
			joined:    want{metav1.ConditionTrue, fleetv1alpha1.ReasonEngaged, ""},
			reachable: want{metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable, ""},
			agent:     want{metav1.ConditionTrue, fleetv1alpha1.ReasonHeartbeatFresh, "0s ago"},
			ready:     metav1.ConditionTrue, wantHeartbeat: t0.Add(-10 * time.Minute), wantObserved: t0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if prev := tt.prev; tt.obs.Seen == nil && !tt.restarted && prev.LastHeartbeatTime != nil {
				tt.obs.Seen = seenAt(prev.LastHeartbeatTime.Time, prev.LastHeartbeatObservedTime.Time)
			}
			tt.obs.Generation = 7
			if tt.obs.HeartbeatTimeout == 0 {
				tt.obs.HeartbeatTimeout = DefaultHeartbeatTimeout
			}
			prevCopy := tt.prev.DeepCopy()
			st := Status(tt.prev, tt.obs)
			if !equalStatus(prevCopy, &tt.prev) {
				t.Errorf("Status modified its input")
			}
			check := func(typ string, w want) {
				t.Helper()
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil {
					t.Fatalf("no %s condition", typ)
				}
				if c.Status != w.status || c.Reason != w.reason || !strings.Contains(c.Message, w.message) {
					t.Errorf("%s = %s/%s %q, want %s/%s containing %q", typ, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
				if c.ObservedGeneration != 7 {
					t.Errorf("%s observedGeneration = %d, want 7", typ, c.ObservedGeneration)
				}
			}
			check(fleetv1alpha1.ConditionJoined, tt.joined)
			check(fleetv1alpha1.ConditionReachable, tt.reachable)
			check(fleetv1alpha1.ConditionAgentReady, tt.agent)
			ready := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionReady)
			if ready.Status != tt.ready || !strings.Contains(ready.Message, tt.readyMessage) {
				t.Errorf("Ready = %s %q, want %s containing %q", ready.Status, ready.Message, tt.ready, tt.readyMessage)
			}
			if st.ObservedGeneration != 7 {
				t.Errorf("observedGeneration = %d, want 7", st.ObservedGeneration)
			}
			switch {
			case tt.wantHeartbeat.IsZero() && st.LastHeartbeatTime != nil:
				t.Errorf("lastHeartbeatTime = %v, want none", st.LastHeartbeatTime)
			case !tt.wantHeartbeat.IsZero() && (st.LastHeartbeatTime == nil || !st.LastHeartbeatTime.Time.Equal(tt.wantHeartbeat)):
				t.Errorf("lastHeartbeatTime = %v, want %v", st.LastHeartbeatTime, tt.wantHeartbeat)
			}
			if o := st.LastHeartbeatObservedTime; !tt.wantObserved.IsZero() && (o == nil || !o.Time.Equal(tt.wantObserved)) {
				t.Errorf("lastHeartbeatObservedTime = %v, want %v", o, tt.wantObserved)
			}
			if !tt.wantHeartbeat.IsZero() {
				if st.Nodes == nil || *st.Nodes != (fleetv1alpha1.NodeCounts{Total: 3, Ready: 2}) || st.AgentVersion != "v1.0.0" ||
					st.PodSecurityLevel != "restricted" || st.Capacity == nil || st.Capacity.Free.Name("nvidia.com/gpu", resource.DecimalSI).Value() != 2 {
					t.Errorf("report not mirrored: %+v", st)
				}
			}
		})
	}
}

// seenIn is what a hub that wrote st remembers of the heartbeat.
func seenIn(st fleetv1alpha1.MemberClusterStatus) *HeartbeatSeen {
	return seenAt(st.LastHeartbeatTime.Time, st.LastHeartbeatObservedTime.Time)
}

func equalStatus(a, b *fleetv1alpha1.MemberClusterStatus) bool {
	return len(a.Conditions) == len(b.Conditions) && a.LastHeartbeatTime.Equal(b.LastHeartbeatTime)
}

// TestStatusTransitionTimes checks that transition times come from the injected clock and
// move only when a condition's status changes, so that an unchanged member writes nothing.
func TestStatusTransitionTimes(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	joined := JoinState{Joined: true}
	st := Status(fleetv1alpha1.MemberClusterStatus{}, Observation{Now: clock.Now(), HeartbeatTimeout: time.Minute,
		Join: joined, Report: report(t0)})
	clock.Step(10 * time.Second)
	again := Status(st, Observation{Now: clock.Now(), HeartbeatTimeout: time.Minute, Join: joined, Report: report(t0), Seen: seenIn(st)})
	for _, typ := range []string{fleetv1alpha1.ConditionJoined, fleetv1alpha1.ConditionReachable, fleetv1alpha1.ConditionReady} {
		before := meta.FindStatusCondition(st.Conditions, typ)
		after := meta.FindStatusCondition(again.Conditions, typ)
		if *before != *after {
			t.Errorf("%s changed without cause: %+v -> %+v", typ, before, after)
		}
	}
	clock.Step(time.Minute)
	stale := Status(again, Observation{Now: clock.Now(), HeartbeatTimeout: time.Minute, Join: joined, Report: report(t0), Seen: seenIn(again)})
	c := meta.FindStatusCondition(stale.Conditions, fleetv1alpha1.ConditionAgentReady)
	if c.Status != metav1.ConditionFalse || !c.LastTransitionTime.Time.Equal(clock.Now()) {
		t.Errorf("AgentReady = %+v, want False since %v", c, clock.Now())
	}
	staleLater := Status(stale, Observation{Now: clock.Now().Add(time.Hour), HeartbeatTimeout: time.Minute, Join: joined, Seen: seenIn(stale)})
	if !equalConds(stale.Conditions, staleLater.Conditions) {
		t.Errorf("a stale member's conditions changed with time alone:\n%+v\n%+v", stale.Conditions, staleLater.Conditions)
	}
}

func equalConds(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFailureStreak(t *testing.T) {
	fail := errors.New("boom")
	tests := []struct {
		name          string
		probes        []error
		step          time.Duration
		wantCount     int
		wantExhausted bool
	}{
		{name: "no failures", probes: []error{nil, nil}, step: time.Second},
		{name: "two quick failures", probes: []error{fail, fail}, step: time.Second, wantCount: 2},
		{name: "three failures", probes: []error{fail, fail, fail}, step: time.Second, wantCount: 3, wantExhausted: true},
		{name: "success resets", probes: []error{fail, fail, nil, fail}, step: time.Second, wantCount: 1},
		{name: "two failures 30s apart", probes: []error{fail, fail}, step: 30 * time.Second, wantCount: 2, wantExhausted: true},
		{name: "one failure never exhausts by time alone at once", probes: []error{fail}, step: time.Hour, wantCount: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s FailureStreak
			now := t0
			for i, err := range tt.probes {
				if i > 0 {
					now = now.Add(tt.step)
				}
				s = s.Record(err, now)
			}
			if s.Count != tt.wantCount || s.exhausted(now) != tt.wantExhausted {
				t.Errorf("streak = %+v exhausted=%v, want count %d exhausted=%v", s, s.exhausted(now), tt.wantCount, tt.wantExhausted)
			}
		})
	}
}

// TestFirstReadyTimeAndReadmission drives a member through its first Ready, outages and
// returns with an injected time, checking that firstReadyTime is set once and never moves and
// that only a return after firstReadyTime is a readmission.
func TestFirstReadyTimeAndReadmission(t *testing.T) {
	probeErr := errors.New("connection refused")
	joined := JoinState{Joined: true}
	healthy := func(now time.Time) Observation {
		return Observation{Now: now, Join: joined, Report: report(now)}
	}
	unreachable := func(now time.Time) Observation {
		return Observation{Now: now, Join: joined, ProbeErr: probeErr, Streak: FailureStreak{Count: 3, Since: now}}
	}
	// outage is a member first Ready at t0 and not Ready since t0+1m.
	outage := Status(readyStatus(t0), unreachable(t0.Add(time.Minute)))
	// legacy is a member Ready since t0 as written by a hub that had no firstReadyTime.
	legacy := func(st fleetv1alpha1.MemberClusterStatus) fleetv1alpha1.MemberClusterStatus {
		st.FirstReadyTime = nil
		return st
	}
	tests := []struct {
		name           string
		prev           fleetv1alpha1.MemberClusterStatus
		obs            Observation
		wantFirstReady time.Time // zero: none
		wantReadmitted bool
		wantNotReady   time.Duration
	}{
		{
			name: "a new member turning Ready: firstReadyTime now, not a readmission",
			obs:  healthy(t0), wantFirstReady: t0,
		},
		{
			name: "a member that was never Ready has none",
			obs:  Observation{Now: t0, Join: joined, ReportMissing: true},
		},
		{
			name: "a member failing its first probe has none",
			obs:  unreachable(t0),
		},
		{
			name: "a member slow to its first Ready: firstReadyTime when it turns Ready, not a readmission",
			prev: Status(fleetv1alpha1.MemberClusterStatus{}, Observation{Now: t0, Join: joined, ReportMissing: true}),
			obs:  healthy(t0.Add(time.Minute)), wantFirstReady: t0.Add(time.Minute),
		},
		{
			name: "a member Ready before the upgrade gets its Ready condition's transition time",
			prev: legacy(readyStatus(t0)),
			obs:  healthy(t0.Add(time.Hour)), wantFirstReady: t0,
		},
		{
			name: "a member Ready since then keeps it",
			prev: readyStatus(t0),
			obs:  healthy(t0.Add(time.Hour)), wantFirstReady: t0,
		},
		{
			name: "a member turning not Ready keeps it",
			prev: readyStatus(t0),
			obs:  unreachable(t0.Add(time.Minute)), wantFirstReady: t0,
		},
		{
			name: "a member still not Ready keeps it and is not readmitted",
			prev: outage,
			obs:  unreachable(t0.Add(5 * time.Minute)), wantFirstReady: t0,
		},
		{
			name: "a member Ready again after an outage is readmitted, firstReadyTime unchanged",
			prev: outage,
			obs:  healthy(t0.Add(5*time.Minute + 30*time.Second)), wantFirstReady: t0,
			wantReadmitted: true, wantNotReady: 4*time.Minute + 30*time.Second,
		},
		{
			name: "a member back while the hub upgrades is not a readmission: nothing says it was Ready before",
			prev: legacy(outage),
			obs:  healthy(t0.Add(5 * time.Minute)), wantFirstReady: t0.Add(5 * time.Minute),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.HeartbeatTimeout = DefaultHeartbeatTimeout
			st := Status(tt.prev, tt.obs)
			switch {
			case tt.wantFirstReady.IsZero() && st.FirstReadyTime != nil:
				t.Errorf("firstReadyTime = %v, want none", st.FirstReadyTime)
			case !tt.wantFirstReady.IsZero() && (st.FirstReadyTime == nil || !st.FirstReadyTime.Time.Equal(tt.wantFirstReady)):
				t.Errorf("firstReadyTime = %v, want %v", st.FirstReadyTime, tt.wantFirstReady)
			}
			notReady, ok := readmission(&tt.prev, &st)
			if ok != tt.wantReadmitted || notReady != tt.wantNotReady {
				t.Errorf("readmission = %v, %v; want %v, %v", notReady, ok, tt.wantNotReady, tt.wantReadmitted)
			}
			// The next reconcile of an unchanged member is never a readmission: the event and
			// the counter fire once per return.
			again := Status(st, tt.obs)
			if _, ok := readmission(&st, &again); ok {
				t.Errorf("the same observation again is a readmission")
			}
			if !equalTime(again.FirstReadyTime, st.FirstReadyTime) {
				t.Errorf("firstReadyTime moved on the next reconcile: %v -> %v", st.FirstReadyTime, again.FirstReadyTime)
			}
		})
	}
}

func equalTime(a, b *metav1.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Time.Equal(b.Time))
}

func TestReadmittedMessage(t *testing.T) {
	got := readmittedMessage(4*time.Minute + 30*time.Second + 400*time.Millisecond)
	for _, want := range []string{
		"Ready again after 4m30s;",
		"once it has been Ready for their policies' failover.readmitSeconds (default 60s)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q does not contain %q", got, want)
		}
	}
}

func TestServeAddressesCondition(t *testing.T) {
	tests := []struct {
		name   string
		grant  *fleetv1alpha1.ServeAddressRanges
		want   string
		reason string
	}{
		{name: "no grant: a warning", want: "False", reason: fleetv1alpha1.ReasonNoServeAddressRanges},
		{name: "a grant that parses", grant: &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"203.0.113.0/24"}}, want: "True",
			reason: fleetv1alpha1.ReasonServeAddressesGranted},
		{name: "a grant that does not parse routes nothing", grant: &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"203.0.113.0"}},
			want: "False", reason: fleetv1alpha1.ReasonInvalidServeAddressRanges},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := Status(fleetv1alpha1.MemberClusterStatus{}, Observation{Now: t0, ServeAddresses: tt.grant})
			c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionServeAddressesBounded)
			if c == nil || string(c.Status) != tt.want || c.Reason != tt.reason || c.Message == "" {
				t.Fatalf("ServeAddressesBounded = %+v, want %s/%s with a message", c, tt.want, tt.reason)
			}
			if ready := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionReady); ready != nil &&
				strings.Contains(ready.Message, fleetv1alpha1.ConditionServeAddressesBounded) {
				t.Errorf("Ready counts ServeAddressesBounded: %s", ready.Message)
			}
		})
	}
}

func TestCapacityCondition(t *testing.T) {
	gpus := func(alloc, free string) *fleetv1alpha1.ClusterCapacity {
		return &fleetv1alpha1.ClusterCapacity{
			Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(alloc), corev1.ResourceCPU: resource.MustParse("64")},
			Free:        corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(free), corev1.ResourceCPU: resource.MustParse("32")},
		}
	}
	limit := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	tests := []struct {
		name     string
		capacity *fleetv1alpha1.ClusterCapacity
		limits   corev1.ResourceList
		want     metav1.ConditionStatus
		reason   string
		message  string
	}{
		{name: "no limits: trusted as reported, not a warning", capacity: gpus("10000", "10000"),
			want: metav1.ConditionTrue, reason: fleetv1alpha1.ReasonNoCapacityLimits, message: "not set"},
		{name: "within the limits", capacity: gpus("8", "2"), limits: limit,
			want: metav1.ConditionTrue, reason: fleetv1alpha1.ReasonCapacityLimited},
		{name: "nothing reported yet", limits: limit,
			want: metav1.ConditionTrue, reason: fleetv1alpha1.ReasonCapacityLimited},
		{name: "allocatable over the limit names the resource", capacity: gpus("16", "2"), limits: limit,
			want: metav1.ConditionFalse, reason: fleetv1alpha1.ReasonCapacityOverLimit, message: "nvidia.com/gpu 16 > 8"},
		{name: "free over the limit names the resource", capacity: gpus("8", "10k"), limits: limit,
			want: metav1.ConditionFalse, reason: fleetv1alpha1.ReasonCapacityOverLimit, message: "nvidia.com/gpu 10k > 8"},
		{name: "every resource over its limit, by name", capacity: gpus("16", "16"),
			limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("16")},
			want:   metav1.ConditionFalse, reason: fleetv1alpha1.ReasonCapacityOverLimit, message: "(cpu 64 > 16, nvidia.com/gpu 16 > 8)"},
		{name: "a resource not reported is within any limit", capacity: gpus("8", "8"),
			limits: corev1.ResourceList{"google.com/tpu": resource.MustParse("0")},
			want:   metav1.ConditionTrue, reason: fleetv1alpha1.ReasonCapacityLimited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := fleetv1alpha1.MemberClusterStatus{Capacity: tt.capacity}
			st := Status(prev, Observation{Now: t0, CapacityLimits: tt.limits})
			c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionCapacityBounded)
			if c == nil || c.Status != tt.want || c.Reason != tt.reason || !strings.Contains(c.Message, tt.message) {
				t.Fatalf("CapacityBounded = %+v, want %s/%s with %q in the message", c, tt.want, tt.reason, tt.message)
			}
			if !equality.Semantic.DeepEqual(st.Capacity, tt.capacity) {
				t.Errorf("status capacity = %+v, want what the member reported %+v", st.Capacity, tt.capacity)
			}
			if ready := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionReady); ready != nil &&
				strings.Contains(ready.Message, fleetv1alpha1.ConditionCapacityBounded) {
				t.Errorf("Ready counts CapacityBounded: %s", ready.Message)
			}
		})
	}
}
