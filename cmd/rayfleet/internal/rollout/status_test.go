package rollout

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// ago is a metav1.Time d before now.
func ago(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-d)); return &t }

// revisionOf is a revision of the given serveConfigV2, created 4-n hours before now.
func revisionOf(t *testing.T, n int64, name, serveConfig string) appsv1.ControllerRevision {
	t.Helper()
	data, err := json.Marshal(revision.Content{Spec: rayv1.RayServiceSpec{ServeConfigV2: serveConfig}})
	if err != nil {
		t.Fatal(err)
	}
	return appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: *ago(time.Duration(4-n) * time.Hour)},
		Data:       runtime.RawExtension{Raw: data},
		Revision:   n,
	}
}

func ready(reason string) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: reason}}
}

// testView is llm in serve on m1 (canary, soaking), m2 and m3 (rest, started), m4 (placed, not
// in a started stage) and m5 (no longer placed), rolling out revision 3 (serve config "v3").
func testView(t *testing.T) *View {
	t.Helper()
	return &View{
		Service: &rayv1.RayService{
			ObjectMeta: metav1.ObjectMeta{Namespace: "serve", Name: "llm"},
			Spec:       rayv1.RayServiceSpec{ServeConfigV2: "v3"},
		},
		Binding: &fleetv1alpha1.RayServiceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "serve", Name: "llm"},
			Spec:       fleetv1alpha1.RayServiceBindingSpec{Clusters: []string{"m4", "m3", "m2", "m1"}, PolicyName: "staged"},
			Status: fleetv1alpha1.RayServiceBindingStatus{
				Rollout: &fleetv1alpha1.RolloutStatus{
					TargetRevision: "llm-3", GoodRevision: "llm-2", FailedRevision: "llm-gone",
					Phase: fleetv1alpha1.RolloutProgressing, Stage: "rest", Updated: "1/4",
					StartTime: ago(10 * time.Minute), Message: "updating m2",
					Stages: []fleetv1alpha1.StageStatus{
						{Name: "canary", Clusters: []string{"m1"}},
						{Name: "rest", Clusters: []string{"m3", "m2"}},
					},
				},
				Clusters: []fleetv1alpha1.ClusterStatus{
					{Name: "m1", Revision: "llm-3", RolloutPhase: fleetv1alpha1.ClusterSoaking, PhaseTime: ago(100 * time.Second),
						Conditions: ready("RunningAll")},
					{Name: "m2", Revision: "llm-3", RolloutPhase: fleetv1alpha1.ClusterSoaking, PhaseTime: ago(100 * time.Second)},
					{Name: "m3", Revision: "llm-2", RolloutPhase: fleetv1alpha1.ClusterPending, Conditions: ready("Running")},
					{Name: "m5", Revision: "llm-1", RolloutPhase: fleetv1alpha1.ClusterDone},
				},
			},
		},
		Policy: &fleetv1alpha1.PlacementPolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "serve", Name: "staged"},
			Spec: fleetv1alpha1.PlacementPolicySpec{Rollout: &fleetv1alpha1.RolloutStrategy{
				SoakSeconds: ptr.To[int32](120),
				Stages: []fleetv1alpha1.RolloutStage{
					{Name: "canary", SoakSeconds: ptr.To[int32](600), Approval: true},
					{Name: "eu"},
				},
			}},
		},
		Revisions: revision.History{revisionOf(t, 1, "llm-1", "v1"), revisionOf(t, 2, "llm-2", "v2"), revisionOf(t, 3, "llm-3", "v3")},
	}
}

func TestWriteStatus(t *testing.T) {
	tests := []struct {
		name   string
		change func(v *View)
		want   string
	}{
		{
			name: "rolling",
			// m1 soaks 600s (its stage's), m2 120s (the rollout's); m4 is placed but not
			// started, m5 no longer placed.
			want: `RayService serve/llm
Phase:     Progressing (stage rest, 1/4 updated)
Target:    revision 3 (llm-3)
Good:      revision 2 (llm-2)
Failed:    llm-gone
Started:   10m ago
Message:   updating m2

STAGE    CLUSTER   REVISION   PHASE     SOAK LEFT   REASON
canary   m1        3          Soaking   8m20s       RunningAll
rest     m3        2          Pending   -           Running
rest     m2        3          Soaking   20s         -
-        m4        -          -         -           -
-        m5        1          Done      -           -
`,
		},
		{
			name: "a change before the first revision soaked: the baseline runs, nothing is good yet",
			change: func(v *View) {
				ro := v.Binding.Status.Rollout
				ro.BaselineRevision, ro.GoodRevision, ro.FailedRevision = "llm-2", "", ""
			},
			want: `RayService serve/llm
Phase:     Progressing (stage rest, 1/4 updated)
Target:    revision 3 (llm-3)
Baseline:  revision 2 (llm-2)
Good:      none yet (undo and rollback return to the baseline until a revision soaks on every cluster)
Failed:    -
Started:   10m ago
Message:   updating m2

STAGE    CLUSTER   REVISION   PHASE     SOAK LEFT   REASON
canary   m1        3          Soaking   8m20s       RunningAll
rest     m3        2          Pending   -           Running
rest     m2        3          Soaking   20s         -
-        m4        -          -         -           -
-        m5        1          Done      -           -
`,
		},
		{
			name: "no policy, paused, the spec changed since",
			change: func(v *View) {
				v.Policy, v.PolicyMissing = nil, true
				v.Service.Spec.ServeConfigV2 = "v4"
				v.Service.Annotations = map[string]string{labels.Paused: "true"}
				ro := v.Binding.Status.Rollout
				ro.Message, ro.StartTime, ro.Updated, ro.Stage = "", nil, "", ""
				ro.Phase, ro.CompletionTime = fleetv1alpha1.RolloutComplete, ago(time.Minute)
				ro.Stages = nil
				v.Binding.Spec.Clusters = []string{"m1"}
				v.Binding.Status.Clusters = v.Binding.Status.Clusters[:1]
				// Soaked longer than the default 60s: nothing left, not a negative time.
				v.Binding.Status.Clusters[0].PhaseTime = ago(90 * time.Second)
			},
			want: `RayService serve/llm
Phase:     Complete
Target:    revision 3 (llm-3)
Good:      revision 2 (llm-2)
Failed:    llm-gone
Completed: 60s ago
Note:      the target is not the RayService's current spec: the hub has not made a revision of it yet
Paused:    yes (fleet.rayfleet.io/paused=true): no cluster starts until 'rayfleet rollout resume'
Note:      PlacementPolicy staged not found: soak times shown with the default 60s

STAGE   CLUSTER   REVISION   PHASE     SOAK LEFT   REASON
-       m1        3          Soaking   0s          RunningAll
`,
		},
		{
			name: "no rollout recorded",
			change: func(v *View) {
				v.Binding.Status = fleetv1alpha1.RayServiceBindingStatus{}
				v.Binding.Spec.Clusters = []string{"m1"}
			},
			want: `RayService serve/llm
Phase:     - (the hub has recorded no rollout yet)

STAGE   CLUSTER   REVISION   PHASE   SOAK LEFT   REASON
-       m1        -          -       -           -
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := testView(t)
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

func TestFinished(t *testing.T) {
	tests := []struct {
		name        string
		phase       fleetv1alpha1.RolloutPhase
		specChanged bool
		wantDone    bool
		wantStalled bool
	}{
		{name: "progressing", phase: fleetv1alpha1.RolloutProgressing},
		{name: "awaiting approval", phase: fleetv1alpha1.RolloutAwaitingApproval},
		{name: "complete", phase: fleetv1alpha1.RolloutComplete, wantDone: true},
		{name: "stalled", phase: fleetv1alpha1.RolloutStalled, wantDone: true, wantStalled: true},
		{name: "complete, of the spec before", phase: fleetv1alpha1.RolloutComplete, specChanged: true},
		{name: "stalled, on the spec before", phase: fleetv1alpha1.RolloutStalled, specChanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := testView(t)
			v.Binding.Status.Rollout.Phase = tt.phase
			if tt.specChanged {
				v.Service.Spec.ServeConfigV2 = "v4"
			}
			done, err := finished(v)
			if done != tt.wantDone || errors.Is(err, ErrStalled) != tt.wantStalled {
				t.Errorf("finished = %v, %v; want done %v, stalled %v", done, err, tt.wantDone, tt.wantStalled)
			}
			if tt.wantStalled && !strings.Contains(err.Error(), "rollout of RayService serve/llm to revision 3 (llm-3) stalled: updating m2") {
				t.Errorf("stalled error %q", err)
			}
		})
	}
}

func TestWriteHistory(t *testing.T) {
	v := testView(t)
	v.Binding.Status.Rollout.GoodRevision = "llm-3"
	var buf bytes.Buffer
	if err := WriteHistory(&buf, v, now); err != nil {
		t.Fatal(err)
	}
	want := `REVISION   NAME    CREATED    ROLLOUT       CLUSTERS
1          llm-1   3h ago     -             m5
2          llm-2   120m ago   -             m3
3          llm-3   60m ago    target,good   m1,m2
`
	if got := buf.String(); got != want {
		t.Errorf("history:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteRevision(t *testing.T) {
	v := testView(t)
	var buf bytes.Buffer
	if err := WriteRevision(&buf, v, 2); err != nil {
		t.Fatal(err)
	}
	want := "# RayService serve/llm, revision 2: ControllerRevision llm-2 (good)\nspec:\n  rayClusterConfig:\n"
	if got := buf.String(); !strings.HasPrefix(got, want) || !strings.Contains(got, "\n  serveConfigV2: v2\n") {
		t.Errorf("revision 2:\n%s\nwant it to start with:\n%s", got, want)
	}
	err := WriteRevision(&buf, v, 7)
	if err == nil || err.Error() != "RayService serve/llm has no revision 7 (it has 1, 2, 3)" {
		t.Errorf("revision 7: error %v", err)
	}
}
