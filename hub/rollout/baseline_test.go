package rollout

import (
	"strings"
	"testing"
	"time"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestBaseline(t *testing.T) {
	tests := []struct {
		name     string
		previous *rstatus
		clusters []*clusterWrapper
		want     string
	}{
		{name: "nothing placed, nothing recorded", want: ""},
		{name: "nothing done anywhere runs nowhere", clusters: []*clusterWrapper{c("a", "r1"), c("b", "")}, want: ""},
		{name: "every cluster done on one revision, soaked or not", previous: &rstatus{TargetRevision: "r1"},
			clusters: []*clusterWrapper{c("a", "r1").done(), c("b", "r1").done()}, want: "r1"},
		{name: "the recorded baseline holds until the rollout from it completes", previous: &rstatus{BaselineRevision: "r1", TargetRevision: "r2"},
			clusters: []*clusterWrapper{c("a", "r2").done(), c("b", "r2").done()}, want: "r1"},
		{name: "mid-rollout the recorded baseline stays", previous: &rstatus{BaselineRevision: "r1", TargetRevision: "r2"},
			clusters: []*clusterWrapper{c("a", "r2").done(), c("b", "r1").done()}, want: "r1"},
		{name: "a status from before baselines: the good revision", previous: &rstatus{GoodRevision: "r1", TargetRevision: "r2"},
			clusters: []*clusterWrapper{c("a", "r2").done(), c("b", "r1").done()}, want: "r1"},
		{name: "a first revision done on some clusters runs there", previous: &rstatus{TargetRevision: "r1"},
			clusters: []*clusterWrapper{c("a", "r1").done(), c("b", "r1").why("DEPLOYING")}, want: "r1"},
		{name: "with none recorded, the revision most clusters are done on", clusters: []*clusterWrapper{
			c("a", "r2").done(), c("b", "r1").done(), c("c", "r1").done(), c("d", "r2")}, want: "r1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Baseline(tt.previous, cs(tt.clusters...)); got != tt.want {
				t.Errorf("Baseline = %q, want %q", got, tt.want)
			}
		})
	}
}

// soakingFirst is the status of a first revision r1 every cluster turned done on at 59s:
// Ready on the hub, soaking, not good yet.
func soakingFirst() *rstatus {
	return &rstatus{TargetRevision: "r1", BaselineRevision: "r1", Phase: progressing, StartTime: mt(0)}
}

func TestPlanChangeRightAfterReady(t *testing.T) {
	soak15 := strategy(soak(15 * time.Second))
	tests := []struct {
		name     string
		in       Input
		want     want
		baseline string
	}{
		{
			name: "Rolling: a change 1s after Ready rolls from the running first revision, one cluster at a time",
			in: Input{Now: at(60), Strategy: soak15, Target: "r2", Previous: soakingFirst(),
				Clusters:      cs(c("a", "r1").done(), c("b", "r1").done()),
				ClusterPhases: phases("a", "Soaking@59", "b", "Soaking@59")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Updating@60", "b", "Pending"),
				phase: progressing, stage: "rest", updated: "0/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
			baseline: "r1",
		},
		{
			name: "Rolling: the second cluster waits for the first one's soak",
			in: Input{Now: at(80), Strategy: soak15, Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", BaselineRevision: "r1", Phase: progressing, StartTime: mt(60),
					Stage: "rest", Stages: []fleetv1alpha1.StageStatus{started("rest", "a", "b")}},
				Clusters:      cs(c("a", "r2").done(), c("b", "r1").done()),
				ClusterPhases: phases("a", "Soaking@70", "b", "Pending")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Soaking@70", "b", "Pending"),
				phase: progressing, stage: "rest", updated: "0/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"a soaking until 2026-01-01T00:01:25Z"},
				requeue: 5 * time.Second,
			},
			baseline: "r1",
		},
		{
			name: "Rolling: once the first soaked, the second starts",
			in: Input{Now: at(85), Strategy: soak15, Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", BaselineRevision: "r1", Phase: progressing, StartTime: mt(60),
					Stage: "rest", Stages: []fleetv1alpha1.StageStatus{started("rest", "a", "b")}},
				Clusters:      cs(c("a", "r2").done(), c("b", "r1").done()),
				ClusterPhases: phases("a", "Soaking@70", "b", "Pending")},
			want: want{
				apply: allTo("r2", "a", "b"), phases: kv("a", "Done@85", "b", "Updating@85"),
				phase: progressing, stage: "rest", updated: "1/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventClusterDone + "@a"},
				requeue: 600 * time.Second,
			},
			baseline: "r1",
		},
		{
			name: "Rolling: with the last cluster soaking, the rollout stays staged from the baseline",
			in: Input{Now: at(100), Strategy: soak15, Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", BaselineRevision: "r1", Phase: progressing, StartTime: mt(60),
					Stage: "rest", Stages: []fleetv1alpha1.StageStatus{started("rest", "a", "b")}},
				Clusters:      cs(c("a", "r2").done(), c("b", "r2").done()),
				ClusterPhases: phases("a", "Done@85", "b", "Soaking@95")},
			want: want{
				apply: allTo("r2", "a", "b"), phases: kv("a", "Done@85", "b", "Soaking@95"),
				phase: progressing, stage: "rest", updated: "1/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"stage rest: b soaking until 2026-01-01T00:01:50Z"},
				requeue: 10 * time.Second,
			},
			baseline: "r1",
		},
		{
			name: "Rolling: the last soak over, the change is good and the baseline",
			in: Input{Now: at(110), Strategy: soak15, Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", BaselineRevision: "r1", Phase: progressing, StartTime: mt(60),
					Stage: "rest", Stages: []fleetv1alpha1.StageStatus{started("rest", "a", "b")}},
				Clusters:      cs(c("a", "r2").done(), c("b", "r2").done()),
				ClusterPhases: phases("a", "Done@85", "b", "Soaking@95")},
			want: want{
				apply: allTo("r2", "a", "b"), phases: kv("a", "Done@85", "b", "Done@110"),
				phase: complete, good: "r2", updated: "2/2", stages: []string{"rest:a,b"},
				progressing: "True/RolloutComplete", paused: "False/NotPaused",
				events: []string{EventClusterDone + "@b", EventRolloutComplete},
			},
			baseline: "r2",
		},
		{
			name: "autoRollback: a failing change returns to the running first revision, not soaked",
			in: Input{Now: at(660), Strategy: strategy(soak(15*time.Second), autoRollback), Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", BaselineRevision: "r1", Phase: progressing, StartTime: mt(60),
					Stage: "rest", Stages: []fleetv1alpha1.StageStatus{started("rest", "a", "b")}},
				Clusters:      cs(c("a", "r2").why("application app is DEPLOY_FAILED"), c("b", "r1").done()),
				ClusterPhases: phases("a", "Updating@60", "b", "Pending")},
			want: want{
				apply: allTo("r1", "a", "b"), phases: kv("a", "Failed@660", "b", "Pending"),
				phase: fleetv1alpha1.RolloutRollingBack, failed: "r2", updated: "0/2", stages: []string{},
				progressing: "False/RollingBack", paused: "False/NotPaused",
				events:  []string{EventRolloutStalled + "@a", EventRollingBack},
				message: []string{"rolling back to revision r1"},
			},
			baseline: "r1",
		},
		{
			name: "the rolled-back fleet is done on the first revision again: Complete, r2 failed",
			in: Input{Now: at(700), Strategy: strategy(soak(15*time.Second), autoRollback), Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", BaselineRevision: "r1", FailedRevision: "r2",
					Phase: fleetv1alpha1.RolloutRollingBack, StartTime: mt(60)},
				Clusters:      cs(c("a", "r1").done(), c("b", "r1").done()),
				ClusterPhases: phases("a", "Failed@660", "b", "Pending")},
			want: want{
				apply: allTo("r1", "a", "b"), phases: kv("a", "Failed@660", "b", "Pending"),
				phase: complete, failed: "r2", updated: "0/2",
				progressing: "False/RevisionFailed", paused: "False/NotPaused", events: []string{EventRolledBack},
			},
			baseline: "r1",
		},
		{
			name: "a change before anything runs goes everywhere at once",
			in: Input{Now: at(30), Strategy: soak15, Target: "r2",
				Previous:      &rstatus{TargetRevision: "r1", Phase: progressing, StartTime: mt(0)},
				Clusters:      cs(c("a", "r1").why("application app is DEPLOYING"), c("b", "")),
				ClusterPhases: phases("a", "Updating@0", "b", "Updating@0")},
			want: want{
				apply: allTo("r2", "a", "b"), phases: kv("a", "Updating@30", "b", "Updating@30"),
				phase: progressing, updated: "0/2",
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"first revision r2: every cluster gets it at once"},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a first revision done on one cluster runs there: a change rolls, behind the cluster finishing it",
			in: Input{Now: at(30), Strategy: soak15, Target: "r2",
				Previous:      &rstatus{TargetRevision: "r1", Phase: progressing, StartTime: mt(0)},
				Clusters:      cs(c("a", "r1").done(), c("b", "r1").why("application app is DEPLOYING")),
				ClusterPhases: phases("a", "Soaking@20", "b", "Updating@0")},
			want: want{
				apply: allTo("r1", "a", "b"), phases: kv("a", "Pending", "b", "Pending@0"),
				phase: progressing, stage: "rest", updated: "0/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				message: []string{"b finishing revision r1 first"},
				requeue: 570 * time.Second,
			},
			baseline: "r1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Plan(tt.in)
			check(t, d, tt.want)
			if d.Status.BaselineRevision != tt.baseline {
				t.Errorf("baseline %q, want %q", d.Status.BaselineRevision, tt.baseline)
			}
			if tt.baseline != "" && tt.want.phase != complete && !strings.Contains(d.Progressing.Message, "baseline revision "+tt.baseline+", good revision none yet") {
				t.Errorf("RolloutProgressing does not name the baseline and the good revision: %q", d.Progressing.Message)
			}
		})
	}
}

func TestPlanBlueGreenRightAfterReady(t *testing.T) {
	s, traffic := bgStrategy(true, nil)
	prev := soakingFirst()
	clusters := cs(c("blue", "r1").done())
	if !NeedsGreen(prev, "r2", clusters) {
		t.Fatal("a change to a RayService that serves its first revision, soaking, needs no green set")
	}
	if NeedsGreen(&rstatus{TargetRevision: "r1", Phase: progressing}, "r2", cs(c("blue", "r1").why("DEPLOYING"))) {
		t.Error("a change to a RayService that runs nowhere yet needs a green set")
	}
	in := Input{Now: at(60), Strategy: s, Target: "r2", Previous: prev,
		Clusters:      cs(c("blue", "r1").done(), c("green", "")),
		ClusterPhases: phases("blue", "Soaking@59"),
		BlueGreen:     BlueGreenInput{Blue: []string{"blue"}, Green: []string{"green"}, Traffic: traffic}}
	d := Plan(in)
	if got, want := bgSummary(d), "Progressing Deploying 0% acc=false | apply blue=r1 green=r2 | leave - | shift False/GreenDeploying | ev GreenStarted"; got != want {
		t.Errorf("the change:\n got %s\nwant %s", got, want)
	}
	if d.Status.BaselineRevision != "r1" || d.Status.GoodRevision != "" {
		t.Errorf("baseline %q good %q, want r1 and none", d.Status.BaselineRevision, d.Status.GoodRevision)
	}
	// Green done: the first step moves a quarter of the traffic.
	in.Now, in.Previous = at(70), roundTrip(t, &d.Status)
	in.Clusters = cs(c("blue", "r1").done(), c("green", "r2").done())
	d = Plan(in)
	if got, want := bgSummary(d), "Progressing Shifting 25% acc=false | apply blue=r1 green=r2 | leave - | shift True/Shifting | ev TrafficShifted"; got != want {
		t.Errorf("green done:\n got %s\nwant %s", got, want)
	}
	// Green missed its deadline: the traffic goes back to blue, which keeps the first revision.
	in.Now, in.Previous = at(70), roundTrip(t, &d.Status)
	in.Clusters = cs(c("blue", "r1").done(), c("green", "r2").why("application app is UNHEALTHY"))
	in.Now = at(70 + 100)
	d = Plan(in)
	if got, want := bgSummary(d), "Complete | apply blue=r1 | leave green=RolledBack | shift False/ShiftReverted | ev TrafficReverted"; got != want {
		t.Errorf("green failed:\n got %s\nwant %s", got, want)
	}
}
