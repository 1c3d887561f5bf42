package rollout

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPlanFirstRevision(t *testing.T) {
	first := &rstatus{TargetRevision: "r1", Phase: progressing, StartTime: mt(0)}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "the first revision goes to every cluster at once",
			in: Input{Now: at(0), Strategy: strategy(withStages(stage("canary", "env=canary").approval())), Target: "r1",
				Clusters: cs(c("a", "").label("env", "canary"), c("b", ""), c("c", ""))},
			want: want{
				apply:  allTo("r1", "a", "b", "c"),
				phases: kv("a", "Updating@0", "b", "Updating@0", "c", "Updating@0"),
				phase:  progressing, updated: "0/3", stages: []string{},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"first revision r1: every cluster gets it at once; a updating (deadline 2026-01-01T00:10:00Z): revision r1 is being applied"},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "the first revision done but soaking is not good yet",
			in: Input{Now: at(30), Strategy: strategy(), Target: "r1", Previous: first,
				Clusters:      cs(c("a", "r1").done(), c("b", "r1").why("application app is DEPLOYING")),
				ClusterPhases: phases("a", "Updating@0", "b", "Updating@0")},
			want: want{
				apply: allTo("r1", "a", "b"), phases: kv("a", "Soaking@30", "b", "Updating@0"),
				phase: progressing, updated: "0/2",
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"a soaking until 2026-01-01T00:01:30Z; b updating (deadline 2026-01-01T00:10:00Z): application app is DEPLOYING"},
				requeue: 60 * time.Second,
			},
		},
		{
			name: "the first revision is good once every cluster soaked",
			in: Input{Now: at(90), Strategy: strategy(), Target: "r1", Previous: first,
				Clusters:      cs(c("a", "r1").done(), c("b", "r1").done()),
				ClusterPhases: phases("a", "Soaking@30", "b", "Soaking@30")},
			want: want{
				apply: allTo("r1", "a", "b"), phases: kv("a", "Done@90", "b", "Done@90"),
				phase: complete, good: "r1", updated: "2/2",
				progressing: "True/RolloutComplete", paused: "False/NotPaused",
				events: []string{EventClusterDone + "@a", EventClusterDone + "@b", EventRolloutComplete},
			},
		},
		{
			name: "the first revision is not paused: there is nothing to protect",
			in:   Input{Now: at(0), Strategy: strategy(), Target: "r1", Paused: true, Clusters: cs(c("a", ""))},
			want: want{
				apply: kv("a", "r1"), phases: kv("a", "Updating@0"),
				phase: progressing, updated: "0/1",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "a cluster placed during the first revision gets it at once",
			in: Input{Now: at(30), Strategy: strategy(), Target: "r1", Previous: first,
				Clusters: cs(c("a", "r1").why("upgrading"), c("n", "")), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: allTo("r1", "a", "n"), phases: kv("a", "Updating@0", "n", "Updating@30"),
				phase: progressing, updated: "0/2",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 570 * time.Second,
			},
		},
		{
			name: "a lost status: the revision the clusters run is the good one, the target rolls",
			in: Input{Now: at(0), Strategy: strategy(), Target: "r2",
				Clusters: cs(c("a", "r1").done(), c("b", "r1").done(), c("c", "r0").done())},
			want: want{
				apply: kv("a", "r2", "b", "r1", "c", "r0"), phases: kv("a", "Updating@0", "b", "Pending", "c", "Pending"),
				phase: progressing, good: "r1", stage: "rest", updated: "0/3", stages: []string{"rest:a,b,c"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "placed on no cluster: nothing to roll out, nothing becomes good",
			in:   Input{Now: at(0), Strategy: strategy(), Target: "r1"},
			want: want{
				phase: progressing, updated: "0/0",
				progressing: "Unknown/NotPlaced", paused: "False/NotPaused",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}

func TestPlanPlacementOnly(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "a cluster placed mid-rollout gets the good revision, not the half-rolled-out target",
			in: Input{Now: at(100), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "a", "b")),
				Clusters:      cs(c("a", "r2").why("upgrading"), c("b", "r1").done(), c("n", "")),
				ClusterPhases: phases("a", "Updating@50")},
			want: want{
				apply: kv("a", "r2", "b", "r1", "n", "r1"), phases: kv("a", "Updating@50", "b", "Pending", "n", "Pending@100"),
				phase: progressing, good: "r1", stage: "rest", updated: "0/3", stages: []string{"rest:a,b,n"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"n finishing revision r1 first"},
				requeue: 550 * time.Second,
			},
		},
		{
			name: "once done on the good revision, the placed cluster waits for its turn",
			in: Input{Now: at(300), Strategy: strategy(maxUnavailable(intstr.FromInt32(2))), Target: "r2",
				Previous:      movingTo("r2", "r1", started("rest", "a", "b", "n")),
				Clusters:      cs(c("a", "r2").why("upgrading"), c("b", "r1").done(), c("n", "r1").done()),
				ClusterPhases: phases("a", "Updating@50", "n", "Pending@100")},
			want: want{
				apply: kv("a", "r2", "b", "r2", "n", "r1"), phases: kv("a", "Updating@50", "b", "Updating@300", "n", "Pending"),
				phase: progressing, good: "r1", stage: "rest", updated: "0/3",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 350 * time.Second,
			},
		},
		{
			name: "a cluster placed after the rollout completed gets the target, which is the good revision",
			in: Input{Now: at(100), Strategy: strategy(), Target: "r1", Previous: completeOn("r1"),
				Clusters: cs(c("a", "r1").done(), c("n", "")), ClusterPhases: phases("a", "Done@0")},
			want: want{
				apply: allTo("r1", "a", "n"), phases: kv("a", "Done@0", "n", "Updating@100"),
				phase: progressing, good: "r1", stage: "rest", updated: "1/2", stages: []string{},
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "a cluster no longer placed is gone from the decision and the recorded order",
			in: Input{Now: at(100), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "gone", "a", "b")),
				Clusters: cs(c("a", "r2").done(), c("b", "r1").done()), ClusterPhases: phases("gone", "Updating@0", "a", "Done@50")},
			want: want{
				apply: kv("a", "r2", "b", "r2"), phases: kv("a", "Done@50", "b", "Updating@100"),
				phase: progressing, good: "r1", stage: "rest", updated: "1/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}

func TestPlanTypeNone(t *testing.T) {
	none := strategy(typeNone, autoRollback, withStages(stage("canary", "env=canary").approval()))
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "type None: every cluster gets the target at once, even paused and with stages",
			in: Input{Now: at(0), Strategy: none, Target: "r2", Previous: completeOn("r1"), Paused: true,
				Clusters:      cs(c("a", "r1").done().label("env", "canary"), c("b", "r1").done()),
				ClusterPhases: phases("a", "Done@0", "b", "Done@0")},
			want: want{
				apply: allTo("r2", "a", "b"), phases: kv("a", "Updating@0", "b", "Updating@0"),
				phase: progressing, good: "r1", updated: "0/2", stages: []string{},
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
				message: []string{"rollout type None: every cluster gets revision r2 at once"},
			},
		},
		{
			name: "type None: a stalled cluster is reported and nothing is rolled back",
			in: Input{Now: at(600), Strategy: none, Target: "r2",
				Previous:      &rstatus{TargetRevision: "r2", GoodRevision: "r1", Phase: progressing, StartTime: mt(0)},
				Clusters:      cs(c("a", "r2").why("application app is DEPLOY_FAILED"), c("b", "r2").done()),
				ClusterPhases: phases("a", "Updating@0", "b", "Done@100")},
			want: want{
				apply: allTo("r2", "a", "b"), phases: kv("a", "Failed@600", "b", "Done@100"),
				phase: stalled, good: "r1", updated: "1/2",
				progressing: "False/ProgressDeadlineExceeded", paused: "False/NotPaused", events: []string{EventRolloutStalled + "@a"},
				message: []string{"every cluster keeps revision r2"},
			},
		},
		{
			name: "type None tries a failed revision again",
			in: Input{Now: at(5000), Strategy: none, Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", GoodRevision: "r1", FailedRevision: "r2", Phase: complete, StartTime: mt(0)},
				Clusters: cs(c("a", "r1").done()), ClusterPhases: phases("a", "Failed@600")},
			want: want{
				apply: kv("a", "r2"), phases: kv("a", "Updating@5000"),
				phase: progressing, good: "r1", updated: "0/1",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "type None completes like any rollout",
			in: Input{Now: at(200), Strategy: none, Target: "r2",
				Previous: &rstatus{TargetRevision: "r2", GoodRevision: "r1", Phase: progressing, StartTime: mt(0)},
				Clusters: cs(c("a", "r2").done()), ClusterPhases: phases("a", "Soaking@100")},
			want: want{
				apply: kv("a", "r2"), phases: kv("a", "Done@200"),
				phase: complete, good: "r2", updated: "1/1",
				progressing: "True/RolloutComplete", paused: "False/NotPaused",
				events: []string{EventClusterDone + "@a", EventRolloutComplete},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}
