package aggregate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// entry builds a binding entry that is seen, current and Ready with n endpoints.
type entry struct{ fleetv1alpha1.ClusterStatus }

func ready(name string, endpoints int32) *entry {
	return &entry{fleetv1alpha1.ClusterStatus{
		Name: name, SpecHash: "h1", ObservedGeneration: 1, ServiceStatus: rayv1.Running,
		ActiveRayCluster: name + "-rc", NumServeEndpoints: endpoints, LastSeenTime: &t0s,
		Conditions: []metav1.Condition{{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue,
			Reason: string(rayv1.NonZeroServeEndpoints), Message: "Number of serve endpoints is greater than 0"}},
	}}
}

// notReady replaces Ready with a False condition.
func (e *entry) notReady(reason, msg string) *entry {
	e.ServiceStatus = rayv1.NotRunning
	meta.SetStatusCondition(&e.Conditions, metav1.Condition{Type: string(rayv1.RayServiceReady),
		Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	return e
}

// upgrading gives the entry a pending cluster, with or without the condition raised yet.
func (e *entry) upgrading(condition bool) *entry {
	e.PendingRayCluster = e.Name + "-rc2"
	if condition {
		meta.SetStatusCondition(&e.Conditions, metav1.Condition{Type: string(rayv1.UpgradeInProgress),
			Status: metav1.ConditionTrue, Reason: string(rayv1.BothActivePendingClustersExist)})
	}
	return e
}

// app adds an application with deployments given as name, status pairs.
func (e *entry) app(name, status, msg string, deployments ...string) *entry {
	if e.Applications == nil {
		e.Applications = map[string]rayv1.AppStatus{}
	}
	a := rayv1.AppStatus{Status: status, Message: msg}
	for i := 0; i+1 < len(deployments); i += 2 {
		if a.Deployments == nil {
			a.Deployments = map[string]rayv1.ServeDeploymentStatus{}
		}
		a.Deployments[deployments[i]] = rayv1.ServeDeploymentStatus{Status: deployments[i+1]}
	}
	e.Applications[name] = a
	return e
}

func entries(es ...*entry) []fleetv1alpha1.ClusterStatus {
	out := make([]fleetv1alpha1.ClusterStatus, 0, len(es))
	for _, e := range es {
		out = append(out, e.ClusterStatus)
	}
	return out
}

func hubRS(gen int64, conds ...metav1.Condition) *rayv1.RayService {
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	rs.Generation = gen
	rs.Status.Conditions = conds
	return rs
}

// cond is a condition as the tests expect it on a hub of generation 4.
func cond(t rayv1.RayServiceConditionType, s metav1.ConditionStatus, reason, msg string, at metav1.Time) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: msg, ObservedGeneration: 4, LastTransitionTime: at}
}

func TestHubStatusReady(t *testing.T) {
	notSeen := ready("m2", 0)
	notSeen.LastSeenTime = nil
	stale := ready("m2", 2)
	stale.SpecHash, stale.ObservedGeneration = "", 6
	noCond := ready("m2", 0)
	noCond.Conditions = nil

	tests := []struct {
		name      string
		placed    []string
		clusters  []fleetv1alpha1.ClusterStatus
		want      metav1.Condition
		endpoints int32
	}{
		{
			name: "nothing placed is not ready",
			want: cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
				"0/0 clusters ready; the RayService is not placed on any cluster", t0s),
		},
		{
			name:     "nothing placed: entries of clusters that once ran it do not count",
			clusters: entries(ready("m1", 2)),
			want: cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
				"0/0 clusters ready; the RayService is not placed on any cluster", t0s),
		},
		{
			name:   "every placed cluster ready",
			placed: []string{"m2", "m1"}, clusters: entries(ready("m1", 2), ready("m2", 3)),
			want:      cond(rayv1.RayServiceReady, metav1.ConditionTrue, fleetv1alpha1.ReasonAllClustersReady, "2/2 clusters ready", t0s),
			endpoints: 5,
		},
		{
			name:   "one placed cluster has no entry",
			placed: []string{"m1", "m2"}, clusters: entries(ready("m1", 2)),
			want: cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
				"1/2 clusters ready; m2: not yet propagated", t0s),
			endpoints: 2,
		},
		{
			name:   "an entry whose copy was never seen",
			placed: []string{"m1", "m2"}, clusters: entries(ready("m1", 2), notSeen),
			want: cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
				"1/2 clusters ready; m2: not yet propagated", t0s),
			endpoints: 2,
		},
		{
			name:   "a member that has not observed the current spec is not ready, its old endpoints still count",
			placed: []string{"m1", "m2"}, clusters: entries(ready("m1", 2), stale),
			want: cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
				"1/2 clusters ready; m2: member has not observed the current spec (its status is for generation 6)", t0s),
			endpoints: 4,
		},
		{
			name:   "the issue's example: each not-ready cluster with its reason and message",
			placed: []string{"m1", "m2", "m3"},
			clusters: entries(ready("m1", 1), ready("m2", 1),
				ready("m3", 0).notReady(string(rayv1.RayServiceInitializing), "RayService is initializing")),
			want: cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
				"2/3 clusters ready; m3: Initializing (RayService is initializing)", t0s),
			endpoints: 2,
		},
		{
			name:     "several not ready, in name order; a reason without a message stands alone",
			placed:   []string{"m3", "m1", "m2"},
			clusters: entries(ready("m3", 0).notReady(string(rayv1.ZeroServeEndpoints), ""), ready("m1", 1), noCond),
			want: cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
				"1/3 clusters ready; m2: member reports no Ready condition yet; m3: ZeroServeEndpoints", t0s),
			endpoints: 1,
		},
		{
			name:      "placed twice counts once; unplaced entries neither block Ready nor add endpoints",
			placed:    []string{"m1", "m1"},
			clusters:  entries(ready("m1", 2), ready("old", 7).notReady("Initializing", "")),
			want:      cond(rayv1.RayServiceReady, metav1.ConditionTrue, fleetv1alpha1.ReasonAllClustersReady, "1/1 clusters ready", t0s),
			endpoints: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HubStatus(hubRS(4), tt.placed, tt.clusters, t0)
			if d := cmp.Diff(tt.want, *meta.FindStatusCondition(got.Conditions, string(rayv1.RayServiceReady))); d != "" {
				t.Errorf("Ready (-want +got):\n%s", d)
			}
			if got.NumServeEndpoints != tt.endpoints {
				t.Errorf("numServeEndpoints = %d, want %d", got.NumServeEndpoints, tt.endpoints)
			}
			wantService := rayv1.NotRunning
			if tt.want.Status == metav1.ConditionTrue {
				wantService = rayv1.Running
			}
			if got.ServiceStatus != wantService {
				t.Errorf("serviceStatus = %q, want %q", got.ServiceStatus, wantService)
			}
		})
	}
}

func TestHubStatusUpgradeInProgress(t *testing.T) {
	tests := []struct {
		name     string
		placed   []string
		clusters []fleetv1alpha1.ClusterStatus
		want     metav1.Condition
	}{
		{
			name:   "no member upgrades",
			placed: []string{"m1", "m2"}, clusters: entries(ready("m1", 1), ready("m2", 1)),
			want: cond(rayv1.UpgradeInProgress, metav1.ConditionFalse, string(ReasonNoClusterUpgrading), "no cluster is upgrading", t0s),
		},
		{
			name:     "members upgrading are named, by condition or by pending cluster",
			placed:   []string{"m1", "m2", "m3"},
			clusters: entries(ready("m3", 1).upgrading(true), ready("m1", 1).upgrading(false), ready("m2", 1)),
			want: cond(rayv1.UpgradeInProgress, metav1.ConditionTrue, string(ReasonClustersUpgrading),
				"2/3 clusters upgrading: m1, m3", t0s),
		},
		{
			name:   "an unplaced member's upgrade does not count",
			placed: []string{"m1"}, clusters: entries(ready("m1", 1), ready("m9", 1).upgrading(true)),
			want: cond(rayv1.UpgradeInProgress, metav1.ConditionFalse, string(ReasonNoClusterUpgrading), "no cluster is upgrading", t0s),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HubStatus(hubRS(4), tt.placed, tt.clusters, t0)
			if d := cmp.Diff(tt.want, *meta.FindStatusCondition(got.Conditions, string(rayv1.UpgradeInProgress))); d != "" {
				t.Errorf("UpgradeInProgress (-want +got):\n%s", d)
			}
		})
	}
}

func TestHubStatusTransitionTimes(t *testing.T) {
	earlier := metav1.NewTime(t0s.Add(-time.Hour))
	rollback := metav1.Condition{Type: string(rayv1.RollbackInProgress), Status: metav1.ConditionTrue,
		Reason: "TargetClusterChanged", ObservedGeneration: 3, LastTransitionTime: earlier}
	placed := []string{"m1", "m2"}
	allReady := entries(ready("m1", 1), ready("m2", 1))
	oneNotReady := entries(ready("m1", 1), ready("m2", 0).notReady("Initializing", "RayService is initializing"))

	tests := []struct {
		name     string
		prior    []metav1.Condition
		clusters []fleetv1alpha1.ClusterStatus
		want     []metav1.Condition
	}{
		{
			name:     "first computation stamps now",
			clusters: allReady,
			want: []metav1.Condition{
				cond(rayv1.RayServiceReady, metav1.ConditionTrue, fleetv1alpha1.ReasonAllClustersReady, "2/2 clusters ready", t0s),
				cond(rayv1.UpgradeInProgress, metav1.ConditionFalse, string(ReasonNoClusterUpgrading), "no cluster is upgrading", t0s),
			},
		},
		{
			name: "unchanged status keeps the time; message and generation follow",
			prior: []metav1.Condition{
				{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonClustersNotReady,
					Message: "0/2 clusters ready; ...", ObservedGeneration: 3, LastTransitionTime: earlier},
				{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionFalse, Reason: string(ReasonNoClusterUpgrading),
					Message: "no cluster is upgrading", ObservedGeneration: 3, LastTransitionTime: earlier},
			},
			clusters: oneNotReady,
			want: []metav1.Condition{
				cond(rayv1.RayServiceReady, metav1.ConditionFalse, fleetv1alpha1.ReasonClustersNotReady,
					"1/2 clusters ready; m2: Initializing (RayService is initializing)", earlier),
				cond(rayv1.UpgradeInProgress, metav1.ConditionFalse, string(ReasonNoClusterUpgrading), "no cluster is upgrading", earlier),
			},
		},
		{
			name: "a flip stamps now; the hub's other conditions are kept as they are",
			prior: []metav1.Condition{
				rollback,
				{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonClustersNotReady,
					ObservedGeneration: 3, LastTransitionTime: earlier},
			},
			clusters: allReady,
			want: []metav1.Condition{
				rollback,
				cond(rayv1.RayServiceReady, metav1.ConditionTrue, fleetv1alpha1.ReasonAllClustersReady, "2/2 clusters ready", t0s),
				cond(rayv1.UpgradeInProgress, metav1.ConditionFalse, string(ReasonNoClusterUpgrading), "no cluster is upgrading", t0s),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := hubRS(4, tt.prior...)
			before := hub.DeepCopy()
			got := HubStatus(hub, placed, tt.clusters, t0)
			if d := cmp.Diff(tt.want, got.Conditions); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, hub); d != "" {
				t.Errorf("HubStatus modified the hub RayService (-before +after):\n%s", d)
			}
		})
	}
}

func TestHubStatusShape(t *testing.T) {
	hub := hubRS(7)
	// Leftovers of a status KubeRay might have written before the hub took over.
	hub.Status.PendingServiceStatus.RayClusterName = "leftover"
	hub.Status.ActiveServiceStatus.RayClusterName = "leftover"
	got := HubStatus(hub, []string{"m1"}, entries(ready("m1", 2).app("fruit", "RUNNING", "")), t0)

	if got.ObservedGeneration != 7 {
		t.Errorf("observedGeneration = %d, want 7", got.ObservedGeneration)
	}
	if got.LastUpdateTime == nil || !got.LastUpdateTime.Equal(&t0s) {
		t.Errorf("lastUpdateTime = %v, want %v", got.LastUpdateTime, t0s)
	}
	wantActive := rayv1.RayServiceStatus{Applications: map[string]rayv1.AppStatus{"fruit": {Status: "RUNNING"}}}
	if d := cmp.Diff(wantActive, got.ActiveServiceStatus); d != "" {
		t.Errorf("activeServiceStatus (-want +got):\n%s", d)
	}
	if d := cmp.Diff(rayv1.RayServiceStatus{}, got.PendingServiceStatus); d != "" {
		t.Errorf("pendingServiceStatus is not empty:\n%s", d)
	}
	for _, c := range got.Conditions {
		if c.ObservedGeneration != 7 {
			t.Errorf("condition %s observedGeneration = %d, want 7", c.Type, c.ObservedGeneration)
		}
	}
}

func TestHubStatusLongMessageIsTruncated(t *testing.T) {
	var placed []string
	var clusters []*entry
	long := strings.Repeat("é", 600)
	for i := range 100 {
		name := "m" + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		placed = append(placed, name)
		clusters = append(clusters, ready(name, 0).notReady("Initializing", long))
	}
	got := HubStatus(hubRS(1), placed, entries(clusters...), t0)
	msg := meta.FindStatusCondition(got.Conditions, string(rayv1.RayServiceReady)).Message
	if len(msg) > conditions.MaxMessageLength {
		t.Errorf("message has %d bytes, more than %d", len(msg), conditions.MaxMessageLength)
	}
	if !strings.HasPrefix(msg, "0/100 clusters ready; ") || strings.ContainsRune(msg, '\uFFFD') {
		t.Errorf("message %q... is not a clean prefix", msg[:40])
	}
}
