package fleet

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/shared/scheme"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// TestDecideLeaving tables make-before-break moves, failover with each purge mode, the freeze
// and one failover at a time, as decide sees them from a group read by hand.
func TestDecideLeaving(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{
		client: fake.NewClientBuilder().WithScheme(sch).Build(),
		memory: memory{reserved: placement.NewReservations(), validSpecs: validation.NewSpecMemo()},
		opts:   Options{HubName: labels.DefaultHubName},
	}
	hub := raybuilder.MakeRayService("svc", "team").Annotation(labels.PlacementPolicy, "two").Obj()
	policy := func(mode fleetv1alpha1.PurgeMode) *fleetv1alpha1.PlacementPolicy {
		return &fleetv1alpha1.PlacementPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "two"},
			Spec: fleetv1alpha1.PlacementPolicySpec{
				Clusters: ptr.To[int32](2),
				Rollout:  &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone},
				Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](60), PurgeMode: mode},
			},
		}
	}
	// copyOn is the copy the hub applies on cluster; done makes it run that in every respect.
	copyOn := func(cluster string, done bool) *rayv1.RayService {
		g := newGroup(hub, policy(""), nil)
		g.members[cluster] = ready(cluster, nil)
		rs, err := r.planRollout(g, r.factsOf(g), placementResult{}, policy(""))
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.copyOf(g, r.factsOf(g), rs.rollout, cluster, rs.rollout.target)
		if err != nil {
			t.Fatal(err)
		}
		c.UID = "copy-uid"
		if done {
			markDone(t, c)
		}
		return c
	}
	down := func(name string, copy *rayv1.RayService, since time.Duration) *memberRecord {
		mc := readyMember(name)
		mc.Status.Conditions = readyCond(metav1.ConditionFalse, fleetv1alpha1.ReasonMemberNotReady, "heartbeat stale")
		mc.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-since))
		return &memberRecord{name: name, mc: mc, copy: copy}
	}
	unreachable := func(m *memberRecord) *memberRecord {
		m.copy, m.readErr = nil, errors.New("connection refused")
		return m
	}
	tainted := func(m *memberRecord) *memberRecord {
		m.mc.Spec.Taints = []corev1.Taint{{Key: "drain", Effect: corev1.TaintEffectNoExecute}}
		return m
	}
	leavingAs := func(b *fleetv1alpha1.RayServiceBinding, cluster string, reason fleetv1alpha1.LeaveReason) *fleetv1alpha1.RayServiceBinding {
		b.Status.Clusters = append(b.Status.Clusters, fleetv1alpha1.ClusterStatus{Name: cluster,
			Leaving: &fleetv1alpha1.ClusterLeaving{Reason: reason, Since: metav1.NewTime(now.Add(-time.Minute))}})
		return b
	}

	tests := []struct {
		name     string
		mode     fleetv1alpha1.PurgeMode
		binding  *fleetv1alpha1.RayServiceBinding
		members  map[string]*memberRecord
		want     map[string]string // cluster -> apply, remove, none
		kept     []string
		leaving  map[string]fleetv1alpha1.LeaveReason
		retained []string
		frozen   bool
	}{{
		name:    "scale-down: the copy left goes once the placed clusters are done",
		binding: placedOn("a", "b", "c"),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": ready("c", copyOn("c", true))},
		want:    map[string]string{"a": "none", "b": "none", "c": "remove"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveMoved},
	}, {
		name:    "a taint moves the copy: the old one stays until the new one is done",
		binding: placedOn("a", "c"),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", nil), "c": tainted(ready("c", copyOn("c", true)))},
		want:    map[string]string{"a": "none", "b": "apply", "c": "none"},
		kept:    []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveMoved},
	}, {
		name:    "the move's new copy done: the old one goes",
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveMoved),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": tainted(ready("c", copyOn("c", true)))},
		want:    map[string]string{"a": "none", "b": "none", "c": "remove"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveMoved},
	}, {
		name:    "a move superseded by another: both old copies stay until the newest is done",
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveMoved),
		members: map[string]*memberRecord{
			"a": ready("a", copyOn("a", true)), "b": tainted(ready("b", copyOn("b", false))),
			"c": tainted(ready("c", copyOn("c", true))), "d": ready("d", nil),
		},
		want:    map[string]string{"a": "none", "b": "none", "c": "none", "d": "apply"},
		kept:    []string{"b", "c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"b": fleetv1alpha1.LeaveMoved, "c": fleetv1alpha1.LeaveMoved},
	}, {
		name:    "failover: the replacement is applied, the lost copy kept while it is not done",
		binding: placedOn("a", "c"),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", nil), "c": down("c", copyOn("c", true), 2*time.Minute)},
		want:    map[string]string{"a": "none", "b": "apply", "c": "none"},
		kept:    []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name:    "failover, Graceful: replacement done, member still down: kept",
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveFailedOver),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": unreachable(down("c", nil, 3*time.Minute))},
		want:    map[string]string{"a": "none", "b": "none", "c": "none"},
		kept:    []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name:    "failover: no copy read from a member still not Ready is not believed",
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveFailedOver),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": down("c", nil, 3*time.Minute)},
		want:    map[string]string{"a": "none", "b": "none", "c": "none"},
		kept:    []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name:    "failover: no copy on a member Ready again: forgotten",
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveFailedOver),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": ready("c", nil)},
		want:    map[string]string{"a": "none", "b": "none"},
	}, {
		name:    "failover, Graceful: the member Ready again: purged",
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveFailedOver),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": ready("c", copyOn("c", true))},
		want:    map[string]string{"a": "none", "b": "none", "c": "remove"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name: "failover, Immediately: purged while the member is still not Ready", mode: fleetv1alpha1.PurgeImmediately,
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveFailedOver),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": down("c", copyOn("c", true), 3*time.Minute)},
		want:    map[string]string{"a": "none", "b": "none", "c": "remove"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name: "failover, Never: kept for good, and said so", mode: fleetv1alpha1.PurgeNever,
		binding: leavingAs(placedOn("a", "b"), "c", fleetv1alpha1.LeaveFailedOver),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "b": ready("b", copyOn("b", true)), "c": ready("c", copyOn("c", true))},
		want:    map[string]string{"a": "none", "b": "none", "c": "none"},
		kept:    []string{"c"}, retained: []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name:    "two members past their toleration: one failover at a time",
		binding: placedOn("c", "d"),
		members: map[string]*memberRecord{
			"a": ready("a", nil), "b": ready("b", nil), "e": ready("e", nil),
			"c": down("c", copyOn("c", true), 3*time.Minute), "d": down("d", copyOn("d", true), 2*time.Minute),
		},
		want:    map[string]string{"a": "apply", "c": "none", "d": "none"},
		kept:    []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name:    "a failover in flight holds the next one",
		binding: leavingAs(placedOn("a", "d"), "c", fleetv1alpha1.LeaveFailedOver),
		members: map[string]*memberRecord{
			"a": ready("a", copyOn("a", false)), "b": ready("b", nil), "e": ready("e", nil),
			"c": unreachable(down("c", nil, 3*time.Minute)), "d": down("d", copyOn("d", true), 2*time.Minute),
		},
		want:    map[string]string{"a": "none", "c": "none", "d": "none"},
		kept:    []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveFailedOver},
	}, {
		name:    "more than half of the members not Ready: failover frozen",
		binding: placedOn("a", "c"),
		members: map[string]*memberRecord{
			"a": ready("a", copyOn("a", true)), "b": down("b", nil, time.Hour),
			"c": down("c", copyOn("c", true), 3*time.Minute),
		},
		want:   map[string]string{"a": "none", "c": "none"},
		frozen: true,
	}, {
		name:    "an invalid RayService forgets no leaving copy",
		binding: leavingAs(placedOn("a"), "c", fleetv1alpha1.LeaveMoved),
		members: map[string]*memberRecord{"a": ready("a", copyOn("a", true)), "c": ready("c", copyOn("c", true))},
		want:    map[string]string{},
		kept:    []string{"c"},
		leaving: map[string]fleetv1alpha1.LeaveReason{"c": fleetv1alpha1.LeaveMoved},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := hub
			if tt.name == "an invalid RayService forgets no leaving copy" {
				rs = hub.DeepCopy()
				rs.Spec.ServeConfigV2, rs.Generation = "[1, 2]", rs.Generation+1
			}
			g := newGroup(rs, policy(tt.mode), tt.binding)
			g.now, g.members = now, tt.members
			for name, m := range tt.members {
				g.memberClusters[name] = m.mc
			}
			r.reserved = placement.NewReservations()
			d := decideTwice(t, r, g)
			got := map[string]string{}
			for name, a := range d.actions {
				got[name] = map[propagation.Kind]string{propagation.Keep: "none", propagation.Apply: "apply", propagation.Remove: "remove"}[a.Kind]
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("actions = %v, want %v (placed %v: %s)", got, tt.want, d.placed, d.placedCond.Message)
			}
			if !slices.Equal(d.kept, tt.kept) {
				t.Errorf("kept = %v, want %v", d.kept, tt.kept)
			}
			leaving := map[string]fleetv1alpha1.LeaveReason{}
			for name, dep := range d.leaving {
				leaving[name] = dep.Leaving.Reason
			}
			if !maps.Equal(leaving, tt.leaving) && (len(leaving) > 0 || len(tt.leaving) > 0) {
				t.Errorf("leaving = %v, want %v", leaving, tt.leaving)
			}
			if !slices.Equal(d.retained, tt.retained) {
				t.Errorf("retained = %v, want %v", d.retained, tt.retained)
			}
			if (d.frozen != "") != tt.frozen {
				t.Errorf("frozen = %q, want frozen %v", d.frozen, tt.frozen)
			}
			conds := []metav1.Condition{}
			setLeavingConditions(&conds, d, 1, metav1.NewTime(now))
			if got := meta.IsStatusConditionTrue(conds, fleetv1alpha1.ConditionCopiesRetained); got != (len(tt.retained) > 0) {
				t.Errorf("CopiesRetained = %v, want %v", got, len(tt.retained) > 0)
			}
			if got := meta.IsStatusConditionTrue(conds, fleetv1alpha1.ConditionFailoverFrozen); got != tt.frozen {
				t.Errorf("FailoverFrozen = %v, want %v", got, tt.frozen)
			}
		})
	}
}

// markDone makes a copy run what it carries in every respect doneFor checks.
func markDone(t *testing.T, c *rayv1.RayService) {
	t.Helper()
	hash, err := rayspec.ClusterSpecHash(&c.Spec.RayClusterSpec)
	if err != nil {
		t.Fatal(err)
	}
	c.Annotations[labels.RunningClusterHash] = hash
	c.Annotations[labels.RunningServeConfigHash] = rayspec.ServeConfigHash(c.Spec.ServeConfigV2)
	c.Generation, c.Status.ObservedGeneration = 1, 1
	c.Status.ActiveServiceStatus.Applications = map[string]rayv1.AppStatus{"fruit": {Status: rayv1.ApplicationStatusEnum.RUNNING}}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "Ready"})
}

// TestDeletesDue: a delete is issued again only after redeleteAfter; other copies are not held.
func TestDeletesDue(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var d deletes
	if !d.due("a", t0) {
		t.Fatal("a copy never deleted is due")
	}
	d.issued("a", t0)
	for _, tc := range []struct {
		uid  string
		at   time.Duration
		want bool
	}{{"a", time.Second, false}, {"b", time.Second, true}, {"a", redeleteAfter, true}} {
		if got := d.due(types.UID(tc.uid), t0.Add(tc.at)); got != tc.want {
			t.Errorf("due(%s, +%v) = %v, want %v", tc.uid, tc.at, got, tc.want)
		}
	}
	d.issued("b", t0.Add(2*redeleteAfter))
	if _, kept := d.issues["a"]; kept {
		t.Error("a delete long past is not forgotten")
	}
}
