package rollout

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/scheme"
)

// shiftMessage is what the hub says, in the rollout's message and in TrafficShifting, while it
// shifts 40% to green.
const shiftMessage = "blue eu,us 60% → green ap 40%: next step at 12:00:30"

// blueGreenView is llm in serve shifting from blue eu and us (revision 2) to green ap
// (revision 3): green has 40%, the gateway accepted it 10s ago; the policy asks for approvals.
func blueGreenView(t *testing.T) *View {
	t.Helper()
	v := testView(t)
	v.Service.UID = "llm-uid"
	v.Service.Finalizers = []string{labels.MemberCleanupFinalizer}
	v.Service.Status.Conditions = []metav1.Condition{{Type: fleetv1alpha1.ConditionTrafficShifting, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonShifting, Message: shiftMessage}}
	v.Policy.Name = "bluegreen"
	v.Policy.Spec.Rollout = &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen,
		BlueGreen: &fleetv1alpha1.BlueGreenStrategy{Approval: true}}
	v.Binding.Spec = fleetv1alpha1.RayServiceBindingSpec{Clusters: []string{"us", "eu", "ap"}, PolicyName: "bluegreen"}
	v.Binding.Status = fleetv1alpha1.RayServiceBindingStatus{
		Rollout: &fleetv1alpha1.RolloutStatus{
			TargetRevision: "llm-3", GoodRevision: "llm-2", Phase: fleetv1alpha1.RolloutProgressing,
			StartTime: ago(5 * time.Minute), Message: shiftMessage,
			BlueGreen: &fleetv1alpha1.BlueGreenStatus{Step: fleetv1alpha1.BlueGreenShifting, Blue: []string{"eu", "us"},
				Green: []string{"ap"}, GreenPercent: 40, StepTime: ago(10 * time.Second), Accepted: true},
		},
		Clusters: []fleetv1alpha1.ClusterStatus{
			trafficCluster("us", "llm-2", fleetv1alpha1.ColorBlue, 3000, "10.99.0.1:8000"),
			trafficCluster("eu", "llm-2", fleetv1alpha1.ColorBlue, 3000, "10.99.0.2:8000"),
			trafficCluster("ap", "llm-3", fleetv1alpha1.ColorGreen, 4000, ""),
		},
	}
	return v
}

// trafficCluster is a Done cluster with a colour, a weight and a serve address.
func trafficCluster(name, revision string, color fleetv1alpha1.Color, weight int32, address string) fleetv1alpha1.ClusterStatus {
	return fleetv1alpha1.ClusterStatus{Name: name, Revision: revision, RolloutPhase: fleetv1alpha1.ClusterDone, Color: color,
		Weight: ptr.To(weight), ServeAddress: address, Conditions: ready("RunningAll")}
}

func TestWriteStatusTraffic(t *testing.T) {
	tests := []struct {
		name   string
		change func(v *View)
		want   string
	}{
		{
			name: "shifting",
			want: `RayService serve/llm
Phase:     Progressing
Target:    revision 3 (llm-3)
Good:      revision 2 (llm-2)
Failed:    -
Started:   5m ago
Message:   blue eu,us 60% → green ap 40%: next step at 12:00:30
Step:      Shifting for 10s (green 40%, the gateway accepted the route)
Blue:      eu,us
Green:     ap
Traffic:   TrafficShifting=True (Shifting)

COLOR   CLUSTER   REVISION   PHASE   WEIGHT   ADDRESS          REASON
Blue    eu        2          Done    30%      10.99.0.2:8000   RunningAll
Blue    us        2          Done    30%      10.99.0.1:8000   RunningAll
Green   ap        3          Done    40%      -                RunningAll
`,
		},
		{
			name: "awaiting the shift approval, the gateway's weights odd",
			change: func(v *View) {
				ro := v.Binding.Status.Rollout
				ro.Phase, ro.Stage = fleetv1alpha1.RolloutAwaitingApproval, fleetv1alpha1.BlueGreenShiftStage
				ro.Message = "blue eu,us 100% → green ap 0%: the first traffic step waits for `rayfleet rollout approve` of revision llm-3, stage shift"
				ro.BlueGreen.Step, ro.BlueGreen.GreenPercent, ro.BlueGreen.Accepted = fleetv1alpha1.BlueGreenDeploying, 0, false
				cs := v.Binding.Status.Clusters
				cs[0].Weight, cs[1].Weight, cs[2].Weight = ptr.To[int32](6667), ptr.To[int32](3333), ptr.To[int32](0)
				// The hub has not written the hub RayService's status since.
				v.Service.Status.Conditions[0].Reason = fleetv1alpha1.ReasonGreenDeploying
				v.Service.Status.Conditions[0].Status = metav1.ConditionFalse
				v.Service.Status.Conditions[0].Message = "blue eu,us 100% → green ap 0%: green deploying revision llm-3"
				// A green cluster not seen yet.
				v.Binding.Status.Clusters = cs[:2]
			},
			want: `RayService serve/llm
Phase:     AwaitingApproval (stage shift)
Target:    revision 3 (llm-3)
Good:      revision 2 (llm-2)
Failed:    -
Started:   5m ago
Message:   blue eu,us 100% → green ap 0%: the first traffic step waits for ` + "`rayfleet rollout approve`" + ` of revision llm-3, stage shift
Step:      Deploying for 10s (green 0%)
Blue:      eu,us
Green:     ap
Traffic:   TrafficShifting=False (GreenDeploying): blue eu,us 100% → green ap 0%: green deploying revision llm-3

COLOR   CLUSTER   REVISION   PHASE   WEIGHT   ADDRESS          REASON
Blue    eu        2          Done    33.33%   10.99.0.2:8000   RunningAll
Blue    us        2          Done    66.67%   10.99.0.1:8000   RunningAll
Green   ap        -          -       -        -                -
`,
		},
		{
			name: "a Rolling rollout with traffic",
			change: func(v *View) {
				v.Policy.Spec.Rollout = nil
				v.Binding.Status.Rollout = &fleetv1alpha1.RolloutStatus{TargetRevision: "llm-3", GoodRevision: "llm-3",
					Phase: fleetv1alpha1.RolloutComplete, CompletionTime: ago(time.Hour)}
				for i := range v.Binding.Status.Clusters {
					cs := &v.Binding.Status.Clusters[i]
					cs.Revision, cs.Color = "llm-3", ""
				}
				v.Service.Status.Conditions[0].Status = metav1.ConditionFalse
				v.Service.Status.Conditions[0].Reason = fleetv1alpha1.ReasonTrafficSteady
				v.Service.Status.Conditions[0].Message = "ap 40%, eu 30%, us 30%"
			},
			want: `RayService serve/llm
Phase:     Complete
Target:    revision 3 (llm-3)
Good:      revision 3 (llm-3)
Failed:    -
Completed: 60m ago
Traffic:   TrafficShifting=False (TrafficSteady): ap 40%, eu 30%, us 30%

STAGE   CLUSTER   REVISION   PHASE   SOAK LEFT   WEIGHT   ADDRESS          REASON
-       ap        3          Done    -           40%      -                RunningAll
-       eu        3          Done    -           30%      10.99.0.2:8000   RunningAll
-       us        3          Done    -           30%      10.99.0.1:8000   RunningAll
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := blueGreenView(t)
			if tt.change != nil {
				tt.change(v)
			}
			var buf bytes.Buffer
			if err := WriteStatus(&buf, v, now); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want {
				t.Errorf("status:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestPercent(t *testing.T) {
	for w, want := range map[int32]string{0: "0%", 1: "0.01%", 10: "0.1%", 3333: "33.33%", 3350: "33.5%", 4000: "40%", 10000: "100%"} {
		if got := percent(&w); got != want {
			t.Errorf("percent(%d) = %q, want %q", w, got, want)
		}
	}
	if got := percent(nil); got != none {
		t.Errorf("percent(nil) = %q, want %q", got, none)
	}
}

// hubClient is a fake hub holding the view's RayService, binding, policy and revisions, the
// revisions controlled by the RayService as the hub makes them.
func hubClient(t *testing.T, v *View) client.Client {
	t.Helper()
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{v.Service, v.Binding}
	if v.Policy != nil {
		objs = append(objs, v.Policy)
	}
	for i := range v.Revisions {
		r := v.Revisions[i].DeepCopy()
		r.Namespace = v.Service.Namespace
		r.Labels = map[string]string{labels.OriginName: v.Service.Name}
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: rayv1.GroupVersion.String(), Kind: "RayService",
			Name: v.Service.Name, UID: v.Service.UID, Controller: ptr.To(true)}}
		objs = append(objs, r)
	}
	return fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).
		WithStatusSubresource(&rayv1.RayService{}, &fleetv1alpha1.RayServiceBinding{}).Build()
}

// awaitingShift has blue/green waiting for the shift approval, green deployed.
func awaitingShift(v *View) {
	ro := v.Binding.Status.Rollout
	ro.Phase, ro.Stage = fleetv1alpha1.RolloutAwaitingApproval, fleetv1alpha1.BlueGreenShiftStage
	ro.BlueGreen.Step, ro.BlueGreen.GreenPercent, ro.BlueGreen.Accepted = fleetv1alpha1.BlueGreenDeploying, 0, false
}

func TestApproveBlueGreen(t *testing.T) {
	tests := []struct {
		name        string
		change      func(v *View)
		approved    string // the binding's approval before
		stage       string
		wantErr     string
		wantValue   string
		wantChanged bool
	}{
		{name: "the awaited shift", change: awaitingShift, wantValue: "llm-3/shift", wantChanged: true},
		{name: "the awaited shift, named", change: awaitingShift, stage: "shift", wantValue: "llm-3/shift", wantChanged: true},
		{name: "the awaited shift, approved already", change: awaitingShift, approved: "llm-3/shift", wantValue: "llm-3/shift"},
		{name: "the awaited shift, the policy gone", change: func(v *View) { awaitingShift(v); v.Policy, v.PolicyMissing = nil, true },
			wantValue: "llm-3/shift", wantChanged: true},
		{name: "promote while shift awaits", change: awaitingShift, stage: "promote",
			wantErr: "nothing awaits approval: the BlueGreen rollout of RayService serve/llm to revision 3 (llm-3) awaits approval of stage shift first"},
		{name: "a Rolling stage", change: awaitingShift, stage: "rest",
			wantErr: `nothing awaits approval: the BlueGreen rollout of RayService serve/llm to revision 3 (llm-3) has no stage "rest" (its stages: shift, promote)`},
		{name: "the awaited promote", stage: "", wantValue: "llm-3/promote", wantChanged: true, approved: "llm-3/shift",
			change: func(v *View) {
				ro := v.Binding.Status.Rollout
				ro.Phase, ro.Stage, ro.BlueGreen.GreenPercent = fleetv1alpha1.RolloutAwaitingApproval, fleetv1alpha1.BlueGreenPromoteStage, 80
			}},
		{name: "promote ahead while shifting", stage: "promote", approved: "llm-3/shift", wantValue: "llm-3/promote", wantChanged: true},
		{name: "shift while shifting", stage: "shift",
			wantErr: "nothing awaits approval: stage shift of the BlueGreen rollout of RayService serve/llm to revision 3 (llm-3) has started already (step Shifting, green 40%)"},
		{name: "nothing named while shifting",
			wantErr: "nothing awaits approval: the rollout of RayService serve/llm to revision 3 (llm-3) is Progressing; name a later stage with --stage"},
		{name: "promote while holding", stage: "promote",
			change: func(v *View) {
				v.Binding.Status.Rollout.BlueGreen.Step, v.Binding.Status.Rollout.BlueGreen.GreenPercent = fleetv1alpha1.BlueGreenHolding, 100
			},
			wantErr: "stage promote of the BlueGreen rollout of RayService serve/llm to revision 3 (llm-3) has started already (step Holding, green 100%)"},
		{name: "shift ahead while green deploys", stage: "shift", wantValue: "llm-3/shift", wantChanged: true,
			change: func(v *View) {
				v.Binding.Status.Rollout.BlueGreen.Step, v.Binding.Status.Rollout.BlueGreen.GreenPercent = fleetv1alpha1.BlueGreenDeploying, 0
			}},
		{name: "promote ahead over an unused shift approval", stage: "promote", approved: "llm-3/shift",
			change: func(v *View) {
				v.Binding.Status.Rollout.BlueGreen.Step, v.Binding.Status.Rollout.BlueGreen.GreenPercent = fleetv1alpha1.BlueGreenDeploying, 0
			},
			wantErr: "stage shift of the BlueGreen rollout of RayService serve/llm to revision 3 (llm-3) is approved and has not started; approving promote now would replace that approval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := blueGreenView(t)
			if tt.change != nil {
				tt.change(v)
			}
			if tt.approved != "" {
				v.Binding.Annotations = map[string]string{labels.ApprovedStage: tt.approved}
			}
			c := hubClient(t, v)
			read, err := Read(t.Context(), c, v.Key())
			if err != nil {
				t.Fatal(err)
			}
			a, err := Approve(t.Context(), c, read, tt.stage)
			var b fleetv1alpha1.RayServiceBinding
			if getErr := c.Get(t.Context(), v.Key(), &b); getErr != nil {
				t.Fatal(getErr)
			}
			got := b.Annotations[labels.ApprovedStage]
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNothingToApprove) || !strings.Contains(err.Error(), tt.wantErr) || got != tt.approved {
					t.Errorf("Approve(%q) = %v, approval %q; want an error with %q, approval %q", tt.stage, err, got, tt.wantErr, tt.approved)
				}
				return
			}
			if err != nil {
				t.Fatalf("Approve(%q): %v", tt.stage, err)
			}
			if a.Value != tt.wantValue || a.Changed != tt.wantChanged || got != tt.wantValue {
				t.Errorf("Approve(%q) = %+v, approval %q; want value %q, changed %v", tt.stage, a, got, tt.wantValue, tt.wantChanged)
			}
		})
	}
}

func TestUndoBlueGreen(t *testing.T) {
	tests := []struct {
		name       string
		change     func(v *View)
		to         int64
		wantConfig string
		wantNote   string
	}{
		{name: "to the good revision while shifting", wantConfig: "v2",
			wantNote: "a blue/green rollout was in flight (step Shifting): the hub sends all of the traffic back to blue eu,us at once " +
				"(green has 40% now), and green ap leaves"},
		{name: "to revision 1 while shifting", to: 1, wantConfig: "v1",
			wantNote: "a blue/green rollout was in flight (step Shifting): the hub sends all of the traffic back to blue eu,us at once " +
				"(green has 40% now), and green ap takes revision 1 before any traffic moves to it again"},
		{name: "while green deploys", change: awaitingShift, wantConfig: "v2",
			wantNote: "a blue/green rollout was in flight (step Deploying): blue eu,us keeps all of the traffic, and green ap leaves"},
		{name: "no traffic managed", wantConfig: "v2",
			change: func(v *View) {
				v.Service.Status.Conditions[0].Status = metav1.ConditionFalse
				v.Service.Status.Conditions[0].Reason = fleetv1alpha1.ReasonNoTrafficManaged
			},
			wantNote: "a blue/green rollout was in flight (step Shifting): no traffic is managed; blue eu,us keeps serving, and green ap leaves"},
		{name: "no blue/green in flight", change: func(v *View) { v.Binding.Status.Rollout.BlueGreen = nil }, wantConfig: "v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := blueGreenView(t)
			if tt.change != nil {
				tt.change(v)
			}
			c := hubClient(t, v)
			u, err := Undo(t.Context(), c, v.Key(), tt.to)
			if err != nil {
				t.Fatal(err)
			}
			var svc rayv1.RayService
			if err := c.Get(t.Context(), types.NamespacedName{Namespace: "serve", Name: "llm"}, &svc); err != nil {
				t.Fatal(err)
			}
			if svc.Spec.ServeConfigV2 != tt.wantConfig || "v"+strconv.FormatInt(u.Revision, 10) != tt.wantConfig {
				t.Errorf("undo wrote serveConfigV2 %q from revision %d; want %q", svc.Spec.ServeConfigV2, u.Revision, tt.wantConfig)
			}
			if got := u.TrafficNote(); got != tt.wantNote {
				t.Errorf("note:\n%q\nwant:\n%q", got, tt.wantNote)
			}
		})
	}
}
