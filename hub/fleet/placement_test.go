package fleet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

func readyCond(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
	return []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg}}
}

func TestMemberOf(t *testing.T) {
	free := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("2")}
	taint := corev1.Taint{Key: "gpu", Value: "a100", Effect: corev1.TaintEffectNoSchedule}
	deleted := metav1.Now()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		mc   fleetv1alpha1.MemberCluster
		want placement.Member
	}{{
		name: "ready with labels, taints and free capacity",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m1", Labels: map[string]string{"region": "eu"}},
			Spec:       fleetv1alpha1.MemberClusterSpec{Taints: []corev1.Taint{taint}},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions: readyCond(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady, ""),
				Capacity:   &fleetv1alpha1.ClusterCapacity{Free: free},
			},
		},
		want: placement.Member{Name: "m1", Labels: map[string]string{"region": "eu"}, Taints: []corev1.Taint{taint}, Ready: true, Free: free},
	}, {
		name: "free capacity bounded by the limits the member exceeds",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "bounded"},
			Spec: fleetv1alpha1.MemberClusterSpec{CapacityLimits: corev1.ResourceList{
				"nvidia.com/gpu": resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions: readyCond(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady, ""),
				Capacity:   &fleetv1alpha1.ClusterCapacity{Free: free},
			},
		},
		want: placement.Member{Name: "bounded", Ready: true,
			Free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("1")}},
	}, {
		name: "no Ready condition yet, no capacity",
		mc:   fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m2"}},
		want: placement.Member{Name: "m2", NotReadyReason: "no Ready condition yet"},
	}, {
		name: "not ready names the message",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m3"},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions: readyCond(metav1.ConditionFalse, fleetv1alpha1.ReasonMemberNotReady, "AgentReady is False"),
			},
		},
		want: placement.Member{Name: "m3", NotReadyReason: "not ready: AgentReady is False"},
	}, {
		name: "not ready without a message names the reason",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m4"},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions: readyCond(metav1.ConditionUnknown, fleetv1alpha1.ReasonMemberNotReady, ""),
			},
		},
		want: placement.Member{Name: "m4", NotReadyReason: "not ready: MemberNotReady"},
	}, {
		name: "not ready since its Ready condition's transition, with its last report as the hub saw it",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m6", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions: []metav1.Condition{{
					Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonMemberNotReady,
					Message: "AgentReady is False", LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute)),
				}},
				// The member's clock is an hour ahead: what counts is when the hub observed it.
				LastHeartbeatTime:         ptr.To(metav1.NewTime(t0.Add(time.Hour))),
				LastHeartbeatObservedTime: ptr.To(metav1.NewTime(t0.Add(-5 * time.Second))),
			},
		},
		want: placement.Member{Name: "m6", NotReadyReason: "not ready: AgentReady is False",
			NotReadySince: t0.Add(-time.Minute), ReportedAt: t0.Add(-5 * time.Second)},
	}, {
		name: "without a Ready condition the wait starts at creation",
		mc:   fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m7", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}},
		want: placement.Member{Name: "m7", NotReadyReason: "no Ready condition yet", NotReadySince: t0.Add(-time.Hour)},
	}, {
		name: "a member being removed is never tolerated",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m8", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)), DeletionTimestamp: &deleted},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions: []metav1.Condition{{
					Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonMemberNotReady,
					LastTransitionTime: metav1.NewTime(t0.Add(-time.Minute)),
				}},
			},
		},
		want: placement.Member{Name: "m8", NotReadyReason: "being removed from the fleet"},
	}, {
		name: "a member being removed is not ready even if Ready",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m5", DeletionTimestamp: &deleted},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions: readyCond(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady, ""),
			},
		},
		want: placement.Member{Name: "m5", NotReadyReason: "being removed from the fleet"},
	}, {
		name: "Ready since it first was: not a return",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m9"},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions:     []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}},
				FirstReadyTime: ptr.To(metav1.NewTime(t0)),
			},
		},
		want: placement.Member{Name: "m9", Ready: true},
	}, {
		name: "Ready again after an outage: readmitted then",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m10"},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions:     []metav1.Condition{{Type: fleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}},
				FirstReadyTime: ptr.To(metav1.NewTime(t0.Add(-time.Hour))),
			},
		},
		want: placement.Member{Name: "m10", Ready: true, ReadmittedAt: t0},
	}, {
		name: "the Pod Security level its spoke reports",
		mc: fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "m11"},
			Status: fleetv1alpha1.MemberClusterStatus{
				Conditions:       readyCond(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady, ""),
				PodSecurityLevel: "restricted",
			},
		},
		want: placement.Member{Name: "m11", Ready: true, PodSecurityLevel: "restricted"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want.PodSecurityLevel == "" {
				// A spoke that reports no level is taken for the guard's default.
				tt.want.PodSecurityLevel = "baseline"
			}
			got := memberOf(&tt.mc)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("memberOf() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPolicyToleration is how long a member holding a RayService may be not Ready before the
// RayService leaves it, by policy.
func TestPolicyToleration(t *testing.T) {
	tests := []struct {
		name     string
		failover *fleetv1alpha1.FailoverPolicy
		want     time.Duration
	}{
		{name: "no failover", want: 300 * time.Second},
		{name: "failover without seconds", failover: &fleetv1alpha1.FailoverPolicy{PurgeMode: fleetv1alpha1.PurgeNever}, want: 300 * time.Second},
		{name: "explicit seconds", failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](30)}, want: 30 * time.Second},
		{name: "zero fails over at once", failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](0)}, want: 0},
		{name: "negative (schema bypassed) is zero", failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](-5)}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
				Spec: fleetv1alpha1.PlacementPolicySpec{Failover: tt.failover}}
			got, err := policyOf(pp)
			if err != nil {
				t.Fatalf("policyOf() error = %v", err)
			}
			if got.Toleration != tt.want {
				t.Errorf("Toleration = %v, want %v", got.Toleration, tt.want)
			}
		})
	}
}

// TestPolicyReadmit is how long a member back from an outage waits for new work, by policy.
func TestPolicyReadmit(t *testing.T) {
	tests := []struct {
		name     string
		failover *fleetv1alpha1.FailoverPolicy
		want     time.Duration
	}{
		{name: "no failover", want: time.Minute},
		{name: "failover without seconds", failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](30)}, want: time.Minute},
		{name: "explicit seconds", failover: &fleetv1alpha1.FailoverPolicy{ReadmitSeconds: ptr.To[int64](15)}, want: 15 * time.Second},
		{name: "zero readmits at once", failover: &fleetv1alpha1.FailoverPolicy{ReadmitSeconds: ptr.To[int64](0)}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := policyOf(&fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
				Spec: fleetv1alpha1.PlacementPolicySpec{Failover: tt.failover}})
			if err != nil {
				t.Fatalf("policyOf() error = %v", err)
			}
			if got.Readmit != tt.want {
				t.Errorf("Readmit = %v, want %v", got.Readmit, tt.want)
			}
		})
	}
	if got := placement.BuiltInPolicy().Readmit; got != time.Minute {
		t.Errorf("the built-in policy's Readmit = %v, want 1m", got)
	}
}

func TestPolicyOf(t *testing.T) {
	tests := []struct {
		name         string
		spec         fleetv1alpha1.PlacementPolicySpec
		wantClusters int
		wantSelector string
		// wantErr is a part of the error, which names the policy.
		wantErr string
	}{
		{name: "empty spec is one cluster, any cluster", wantClusters: 1},
		{name: "clusters and selector", spec: fleetv1alpha1.PlacementPolicySpec{
			Clusters:        ptr.To[int32](3),
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
		}, wantClusters: 3, wantSelector: "region=eu"},
		{name: "an invalid selector is an error", spec: fleetv1alpha1.PlacementPolicySpec{
			ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near"}}},
		}, wantErr: "PlacementPolicy ns/p: invalid clusterSelector"},
		{name: "an override breaking the RayService schema is an error", spec: fleetv1alpha1.PlacementPolicySpec{
			Overrides: []fleetv1alpha1.ClusterOverride{{
				ClusterSelector: &metav1.LabelSelector{},
				Patch:           apiextensionsv1.JSON{Raw: []byte(`{"rayClusterDeletionDelaySeconds":"soon"}`)},
			}},
		}, wantErr: "PlacementPolicy ns/p: overrides: override 0: patched spec is not a valid RayService spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tt.spec}
			got, err := policyOf(pp)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("policyOf() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("policyOf() error = %v", err)
			}
			if got.Clusters != tt.wantClusters {
				t.Errorf("Clusters = %d, want %d", got.Clusters, tt.wantClusters)
			}
			var sel string
			if got.Selector != nil {
				sel = got.Selector.String()
			}
			if sel != tt.wantSelector {
				t.Errorf("Selector = %q, want %q", sel, tt.wantSelector)
			}
			if tt.wantSelector != "" && !got.Selector.Matches(k8slabels.Set{"region": "eu"}) {
				t.Errorf("selector %q does not match region=eu", sel)
			}
		})
	}
}

func TestMemberChange(t *testing.T) {
	base := fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Labels: map[string]string{"region": "eu"}},
		Status: fleetv1alpha1.MemberClusterStatus{
			Conditions: readyCond(metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady, ""),
			Capacity:   &fleetv1alpha1.ClusterCapacity{Free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
		},
	}
	tests := []struct {
		name   string
		modify func(*fleetv1alpha1.MemberCluster)
		want   change
	}{
		{name: "heartbeat only", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.LastHeartbeatTime = &metav1.Time{Time: time.Unix(100, 0)}
			mc.Status.LastHeartbeatObservedTime = &metav1.Time{Time: time.Unix(101, 0)}
		}, want: changeNone},
		{name: "less free capacity cannot place anything", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.Capacity.Free[corev1.ResourceCPU] = resource.MustParse("2")
		}, want: changeNone},
		{name: "more free capacity", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.Capacity.Free[corev1.ResourceCPU] = resource.MustParse("4500m")
		}, want: changeCapacity},
		{name: "a resource appears", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.Capacity.Free["nvidia.com/gpu"] = resource.MustParse("1")
		}, want: changeCapacity},
		{name: "one resource grows while another shrinks", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.Capacity.Free = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
		}, want: changeCapacity},
		{name: "a resource goes", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.Capacity.Free = corev1.ResourceList{}
		}, want: changeNone},
		{name: "more free capacity beyond a capacity limit", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Spec.CapacityLimits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
			mc.Status.Capacity.Free[corev1.ResourceCPU] = resource.MustParse("8")
		}, want: changeNone},
		{name: "readiness", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Status.Conditions = readyCond(metav1.ConditionFalse, fleetv1alpha1.ReasonMemberNotReady, "")
		}, want: changePlacement},
		{name: "labels", modify: func(mc *fleetv1alpha1.MemberCluster) { mc.Labels["region"] = "us" }, want: changePlacement},
		{name: "taints", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
		}, want: changePlacement},
		{name: "serve address grant", modify: func(mc *fleetv1alpha1.MemberCluster) {
			mc.Spec.ServeAddresses = &fleetv1alpha1.ServeAddressRanges{CIDRs: []string{"10.0.0.0/8"}}
		}, want: changePlacement},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := base.DeepCopy()
			tt.modify(next)
			if got := memberChange(&base, next); got != tt.want {
				t.Errorf("memberChange() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestBindingChanged(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }
	status := func(seen *metav1.Time, active string) *fleetv1alpha1.RayServiceBindingStatus {
		return &fleetv1alpha1.RayServiceBindingStatus{Clusters: []fleetv1alpha1.ClusterStatus{{Name: "m1", LastSeenTime: seen, ActiveRayCluster: active}}}
	}
	tests := []struct {
		name       string
		prev, next *fleetv1alpha1.RayServiceBindingStatus
		want       bool
	}{
		{name: "only lastSeenTime moved a little", prev: status(at(0), "a"), next: status(at(10*time.Second), "a"), want: false},
		{name: "only lastSeenTime moved, by hours: staleness is the heartbeat's business", prev: status(at(0), "a"), next: status(at(3*time.Hour), "a"), want: false},
		{name: "first sighting changes the entry", prev: status(nil, ""), next: status(at(0), "a"), want: true},
		{name: "member state changed", prev: status(at(0), "a"), next: status(at(time.Second), "b"), want: true},
		{name: "kept entry unchanged", prev: status(at(0), "a"), next: status(at(0), "a"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bindingChanged(tt.prev, tt.next); got != tt.want {
				t.Errorf("bindingChanged() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPropagatedCondition(t *testing.T) {
	copyWith := func(hash string) *rayv1.RayService {
		return &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{labels.SpecHash: hash}}}
	}
	hub := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}}
	// reachable builds a group whose members were read, with these copies.
	reachable := func(copies map[string]*rayv1.RayService) *group {
		g := &group{hub: hub, members: map[string]*memberRecord{}}
		for name, c := range copies {
			g.members[name] = &memberRecord{name: name, copy: c}
		}
		return g
	}
	applying := func(hashes map[string]string) map[string]propagation.Action {
		out := map[string]propagation.Action{}
		for name, h := range hashes {
			out[name] = propagation.Action{Desired: copyWith(h)}
		}
		return out
	}
	tests := []struct {
		name       string
		o          outcome
		wantStatus metav1.ConditionStatus
		wantReason string
	}{{
		name: "every placed cluster holds the applied hash",
		o: outcome{g: reachable(map[string]*rayv1.RayService{"a": copyWith("h"), "b": copyWith("h")}),
			d: &decision{placed: []string{"a", "b"}, actions: applying(map[string]string{"a": "h", "b": "h"})}},
		wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.ReasonApplied,
	}, {
		name: "a copy with an older hash is pending",
		o: outcome{g: reachable(map[string]*rayv1.RayService{"a": copyWith("old")}),
			d: &decision{placed: []string{"a"}, actions: applying(map[string]string{"a": "new"})}},
		wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonApplyPending,
	}, {
		name: "an unreachable cluster failed",
		o: outcome{g: &group{hub: hub, members: map[string]*memberRecord{"a": {name: "a", readErr: errors.New("down")}}},
			d: &decision{placed: []string{"a"}}},
		wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonApplyFailed,
	}, {
		name: "a write that failed",
		o: outcome{g: reachable(map[string]*rayv1.RayService{"a": nil}),
			d:   &decision{placed: []string{"a"}, actions: applying(map[string]string{"a": "h"})},
			res: &results{copies: map[string]*rayv1.RayService{"a": nil}, applyErrs: map[string]error{"a": errors.New("timeout")}}},
		wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonApplyFailed,
	}, {
		name: "a foreign copy wins over the rest",
		o: outcome{g: &group{hub: hub, members: map[string]*memberRecord{"b": {name: "b", readErr: errors.New("down")}}},
			d: &decision{placed: []string{"a"}, foreign: []string{"a"}}},
		wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonForeignRayService,
	}, {
		name:       "an invalid RayService",
		o:          outcome{g: reachable(nil), d: &decision{invalid: errors.New("bad"), invalidReason: fleetv1alpha1.ReasonValidationFailed}},
		wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonValidationFailed,
	}, {
		name: "a PlacementPolicy failing its check",
		o: outcome{g: reachable(nil), d: &decision{invalid: errors.New("PlacementPolicy ns/p: overrides: bad"),
			invalidReason: fleetv1alpha1.ReasonPolicyInvalid, placed: []string{"a"}}},
		wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonPolicyInvalid,
	}, {
		name:       "placed nowhere is not applied",
		o:          outcome{g: reachable(nil), d: &decision{}},
		wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonNotPlaced,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := propagatedCondition(&tt.o)
			if got.Status != tt.wantStatus || got.Reason != tt.wantReason {
				t.Errorf("propagatedCondition() = %s/%s (%s), want %s/%s", got.Status, got.Reason, got.Message, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

func TestPlacedChanged(t *testing.T) {
	placed := metav1.Condition{Type: fleetv1alpha1.ConditionPlaced, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonClustersChosen, Message: "2/2 clusters chosen"}
	withPlaced := func(c metav1.Condition) *fleetv1alpha1.RayServiceBinding {
		return &fleetv1alpha1.RayServiceBinding{Status: fleetv1alpha1.RayServiceBindingStatus{Conditions: []metav1.Condition{c}}}
	}
	other := func(mutate func(*metav1.Condition)) metav1.Condition {
		c := placed
		mutate(&c)
		return c
	}
	tests := []struct {
		name    string
		binding *fleetv1alpha1.RayServiceBinding
		want    bool
	}{
		{name: "first decision, no binding yet", want: true},
		{name: "binding without a Placed condition", binding: &fleetv1alpha1.RayServiceBinding{}, want: true},
		{name: "resync deciding the same", binding: withPlaced(placed), want: false},
		{name: "status flipped", binding: withPlaced(other(func(c *metav1.Condition) { c.Status = metav1.ConditionFalse })), want: true},
		{name: "reason changed", binding: withPlaced(other(func(c *metav1.Condition) { c.Reason = fleetv1alpha1.ReasonNoClusterFits })), want: true},
		{name: "message changed", binding: withPlaced(other(func(c *metav1.Condition) { c.Message = "1/2 clusters chosen" })), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := placedChanged(tt.binding, placed); got != tt.want {
				t.Errorf("placedChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNoteShortfall(t *testing.T) {
	short := metav1.Condition{Type: fleetv1alpha1.ConditionPlaced, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonInsufficientClusters, Message: "1/2 clusters chosen; eu: not ready"}
	full := metav1.Condition{Type: fleetv1alpha1.ConditionPlaced, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonClustersChosen, Message: "2/2 clusters chosen"}
	tests := []struct {
		name   string
		ready  metav1.ConditionStatus
		placed metav1.Condition
		want   string
	}{
		{name: "ready on fewer clusters than asked", ready: metav1.ConditionTrue, placed: short,
			want: "1/1 clusters ready; fewer clusters than the policy asks for: 1/2 clusters chosen; eu: not ready"},
		{name: "ready on all it asked for", ready: metav1.ConditionTrue, placed: full, want: "1/1 clusters ready"},
		{name: "not ready says why already", ready: metav1.ConditionFalse, placed: short, want: "1/1 clusters ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &rayv1.RayServiceStatuses{Conditions: []metav1.Condition{{
				Type: string(rayv1.RayServiceReady), Status: tt.ready, Reason: "R", Message: "1/1 clusters ready"}}}
			noteShortfall(st, tt.placed)
			if got := st.Conditions[0].Message; got != tt.want {
				t.Errorf("Ready message = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMemberViews(t *testing.T) {
	mc := readyMember("a")
	mc.UID, mc.ResourceVersion = "uid-1", "1"
	views := &memberViews{}
	first := views.of(mc)
	if !first.Ready {
		t.Fatalf("view of a Ready member not ready: %+v", first)
	}
	stale := mc.DeepCopy()
	stale.Labels = map[string]string{"region": "us"}
	if got := views.of(stale); got.Labels["region"] != "" {
		t.Errorf("same resourceVersion: want the kept view, got labels %v", got.Labels)
	}
	stale.ResourceVersion = "2"
	if got := views.of(stale); got.Labels["region"] != "us" {
		t.Errorf("new resourceVersion: want a new view, got labels %v", got.Labels)
	}
	recreated := mc.DeepCopy()
	recreated.UID, recreated.ResourceVersion = "uid-2", "2"
	if got := views.of(recreated); got.Labels["region"] != "" {
		t.Errorf("a MemberCluster created again under the name: want its own view, got labels %v", got.Labels)
	}
	views.forget("a")
	var none *memberViews
	if got := none.of(mc); !got.Ready {
		t.Errorf("nil views: want the member built afresh, got %+v", got)
	}
}
