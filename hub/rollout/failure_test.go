package rollout

import (
	"testing"
	"time"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestPlanDeadlineAndRollback(t *testing.T) {
	moving := movingTo("r2", "r1", started("rest", "a", "b"))
	stalledOn := movingTo("r2", "r1", started("rest", "a", "b"))
	stalledOn.Phase, stalledOn.Stage = stalled, "rest"
	rolledBackFrom := func(phase fleetv1alpha1.RolloutPhase) *rstatus {
		return &rstatus{TargetRevision: "r2", GoodRevision: "r1", FailedRevision: "r2", Phase: phase, StartTime: mt(0), CompletionTime: mt(650)}
	}
	b := c("b", "r1").done()
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "a cluster updating past the deadline fails and the rollout stalls, naming it in the member's words",
			in: Input{Now: at(600), Strategy: strategy(), Target: "r2", Previous: moving,
				Clusters: cs(c("a", "r2").why("application app is DEPLOYING"), b), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Failed@600", "b", "Pending"),
				phase: stalled, good: "r1", stage: "rest", updated: "0/2", stages: []string{"rest:a,b"},
				progressing: "False/ProgressDeadlineExceeded", paused: "False/NotPaused", events: []string{EventRolloutStalled + "@a"},
				message: []string{"stalled: cluster a not done on revision r2 within 10m0s: application app is DEPLOYING; " +
					"nothing else starts until it is done or the target changes"},
				eventText: []string{"cluster a not done on revision r2 within 10m0s: application app is DEPLOYING"},
			},
		},
		{
			name: "a cluster whose copy never carried the target fails saying so",
			in: Input{Now: at(600), Strategy: strategy(), Target: "r2", Previous: moving,
				Clusters: cs(c("a", "r1").done(), b), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Failed@600", "b", "Pending"),
				phase: stalled, good: "r1", stage: "rest", updated: "0/2",
				progressing: "False/ProgressDeadlineExceeded", paused: "False/NotPaused", events: []string{EventRolloutStalled + "@a"},
				message: []string{"cluster a not done on revision r2 within 10m0s: revision r2 is being applied"},
			},
		},
		{
			name: "a soaking cluster that stops being done long after its update began fails at once",
			in: Input{Now: at(610), Strategy: strategy(), Target: "r2", Previous: moving,
				Clusters:      cs(c("a", "r2").why("Ready=False (Unhealthy)"), b),
				ClusterPhases: map[string]ClusterPhase{"a": {Phase: fleetv1alpha1.ClusterSoaking, Since: at(590), Started: at(0)}}},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Failed@610", "b", "Pending"),
				phase: stalled, good: "r1", stage: "rest", updated: "0/2",
				progressing: "False/ProgressDeadlineExceeded", paused: "False/NotPaused", events: []string{EventRolloutStalled + "@a"},
			},
		},
		{
			name: "stalled stays stalled without new events; nothing else starts",
			in: Input{Now: at(900), Strategy: strategy(), Target: "r2", Previous: stalledOn,
				Clusters: cs(c("a", "r2").why("application app is DEPLOYING"), b), ClusterPhases: phases("a", "Failed@600")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Failed@600", "b", "Pending"),
				phase: stalled, good: "r1", stage: "rest", updated: "0/2",
				progressing: "False/ProgressDeadlineExceeded", paused: "False/NotPaused",
			},
		},
		{
			name: "a failed cluster that becomes done soaks, and the rollout moves again",
			in: Input{Now: at(900), Strategy: strategy(), Target: "r2", Previous: stalledOn,
				Clusters: cs(c("a", "r2").done(), b), ClusterPhases: phases("a", "Failed@600")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Soaking@900", "b", "Pending"),
				phase: progressing, good: "r1", stage: "rest", updated: "0/2",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 60 * time.Second,
			},
		},
		{
			name: "blocked: the cluster fails at once, UpgradeBlocked, without waiting for the deadline",
			in: Input{Now: at(10), Strategy: strategy(), Target: "r2", Previous: moving,
				Clusters: cs(c("a", "r2").blocked(), b), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Failed@10", "b", "Pending"),
				phase: stalled, good: "r1", stage: "rest", updated: "0/2",
				progressing: "False/UpgradeBlocked", paused: "False/NotPaused", events: []string{EventRolloutStalled + "@a"},
				message: []string{"cluster a can never run revision r2: upgradeStrategy.type is None"},
			},
		},
		{
			name: "autoRollback: past the deadline every cluster goes back to the good revision and the target is failed",
			in: Input{Now: at(600), Strategy: strategy(autoRollback), Target: "r2", Previous: moving,
				Clusters: cs(c("a", "r2").why("application app is DEPLOYING"), b), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: kv("a", "r1", "b", "r1"), phases: kv("a", "Failed@600", "b", "Pending"),
				phase: rollingBack, good: "r1", failed: "r2", updated: "0/2", stages: []string{},
				progressing: "False/RollingBack", paused: "False/NotPaused",
				events:    []string{EventRolloutStalled + "@a", EventRollingBack},
				message:   []string{"rolling back to revision r1 after revision r2 failed on a: waiting for a"},
				eventText: []string{"rolling every cluster back to revision r1; revision r2 failed; cluster a not done"},
			},
		},
		{
			name: "autoRollback: a blocked cluster is rolled back at once",
			in: Input{Now: at(10), Strategy: strategy(autoRollback), Target: "r2", Previous: moving,
				Clusters: cs(c("a", "r2").blocked(), b), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: kv("a", "r1", "b", "r1"), phases: kv("a", "Failed@10", "b", "Pending"),
				phase: rollingBack, good: "r1", failed: "r2", updated: "0/2",
				progressing: "False/RollingBack", paused: "False/NotPaused",
				events: []string{EventRolloutStalled + "@a", EventRollingBack},
			},
		},
		{
			name: "rolling back: still waiting for a cluster to be done on the good revision",
			in: Input{Now: at(620), Strategy: strategy(autoRollback), Target: "r2", Previous: rolledBackFrom(rollingBack),
				Clusters: cs(c("a", "r1").why("upgrading: pending RayCluster a-x"), b), ClusterPhases: phases("a", "Failed@600")},
			want: want{
				apply: kv("a", "r1", "b", "r1"), phases: kv("a", "Failed@600", "b", "Pending"),
				phase: rollingBack, good: "r1", failed: "r2", updated: "0/2",
				progressing: "False/RollingBack", paused: "False/NotPaused",
			},
		},
		{
			name: "rolled back: complete once every cluster is done on the good revision, saying it was rolled back",
			in: Input{Now: at(650), Strategy: strategy(autoRollback), Target: "r2", Previous: rolledBackFrom(rollingBack),
				Clusters: cs(c("a", "r1").done(), b), ClusterPhases: phases("a", "Failed@600")},
			want: want{
				apply: kv("a", "r1", "b", "r1"), phases: kv("a", "Failed@600", "b", "Pending"),
				phase: complete, good: "r1", failed: "r2", updated: "0/2",
				progressing: "False/RevisionFailed", paused: "False/NotPaused", events: []string{EventRolledBack},
				message: []string{"rolled back to revision r1 after revision r2 failed on a; it is not tried again until"},
			},
		},
		{
			name: "the failed revision is not tried again while it is the target; a new cluster gets the good one",
			in: Input{Now: at(5000), Strategy: strategy(autoRollback), Target: "r2", Previous: rolledBackFrom(complete),
				Clusters:      cs(c("a", "r1").why("Ready=False"), b, c("n", "")),
				ClusterPhases: phases("a", "Failed@600")},
			want: want{
				apply: kv("a", "r1", "b", "r1", "n", "r1"), phases: kv("a", "Failed@600", "b", "Pending", "n", "Pending"),
				phase: complete, good: "r1", failed: "r2", updated: "0/3",
				progressing: "False/RevisionFailed", paused: "False/NotPaused",
			},
		},
		{
			name: "a new target after a failed one rolls out; the failed one stays recorded",
			in: Input{Now: at(5000), Strategy: strategy(autoRollback), Target: "r3", Previous: rolledBackFrom(complete),
				Clusters: cs(c("a", "r1").done(), b), ClusterPhases: phases("a", "Failed@600")},
			want: want{
				apply: kv("a", "r3", "b", "r1"), phases: kv("a", "Updating@5000", "b", "Pending"),
				phase: progressing, good: "r1", failed: "r2", stage: "rest", updated: "0/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "the failed revision is tried again once the target moved away from it and back",
			in: Input{Now: at(6000), Strategy: strategy(autoRollback), Target: "r2",
				Previous: &rstatus{TargetRevision: "r3", GoodRevision: "r1", FailedRevision: "r2", Phase: progressing, StartTime: mt(5000),
					Stages: []fleetv1alpha1.StageStatus{started("rest", "a", "b")}},
				Clusters: cs(c("a", "r1").done(), b), ClusterPhases: phases("a", "Updating@5000")},
			want: want{
				apply: kv("a", "r2", "b", "r1"), phases: kv("a", "Updating@6000", "b", "Pending"),
				phase: progressing, good: "r1", stage: "rest", updated: "0/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a first revision that stalls has nothing to roll back to",
			in: Input{Now: at(600), Strategy: strategy(autoRollback), Target: "r1",
				Previous:      &rstatus{TargetRevision: "r1", Phase: progressing, StartTime: mt(0)},
				Clusters:      cs(c("a", "r1").why("application app is DEPLOYING"), c("b", "r1").done()),
				ClusterPhases: phases("a", "Updating@0", "b", "Done@100")},
			want: want{
				apply: kv("a", "r1", "b", "r1"), phases: kv("a", "Failed@600", "b", "Done@100"),
				phase: stalled, updated: "1/2",
				progressing: "False/ProgressDeadlineExceeded", paused: "False/NotPaused", events: []string{EventRolloutStalled + "@a"},
				message: []string{"there is no good revision to roll back to; every cluster keeps revision r1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}

func TestPlanSupersede(t *testing.T) {
	// a, b, c, d were moving to r2 in that recorded order: a is done on r2, b is updating to it.
	moving := movingTo("r2", "r1", started("rest", "a", "b", "c", "d"))
	superseded := movingTo("r3", "r1", started("rest", "b", "a", "c", "d"))
	fleet := func(b *clusterWrapper) []Cluster {
		return cs(c("a", "r2").done().ep(1), b.ep(0), c("c", "r1").done().ep(2), c("d", "r1").done().ep(3))
	}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "a new target mid-stage: the cluster in flight keeps the old target, the stage restarts in a new order",
			in: Input{Now: at(200), Strategy: strategy(), Target: "r3", Previous: moving,
				Clusters:      fleet(c("b", "r2").why("upgrading: pending RayCluster b-x")),
				ClusterPhases: phases("a", "Done@50", "b", "Updating@100", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r2", "c", "r1", "d", "r1"),
				phases: kv("a", "Pending", "b", "Pending@100", "c", "Pending", "d", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/4", stages: []string{"rest:b,a,c,d"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				message: []string{"stage rest: b finishing revision r2 first: upgrading: pending RayCluster b-x; 3 waiting for their turn"},
				requeue: 500 * time.Second,
			},
		},
		{
			name: "a new target while the old one soaks: the soaking cluster is done with it and goes on to the new one",
			in: Input{Now: at(200), Strategy: strategy(), Target: "r3", Previous: moving,
				Clusters:      fleet(c("b", "r2").done()),
				ClusterPhases: phases("a", "Done@50", "b", "Soaking@150", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r3", "c", "r1", "d", "r1"),
				phases: kv("a", "Pending", "b", "Updating@200", "c", "Pending", "d", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/4", stages: []string{"rest:b,a,c,d"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "the cluster in flight is done on the old target: it gets the new one",
			in: Input{Now: at(250), Strategy: strategy(), Target: "r3", Previous: superseded,
				Clusters:      fleet(c("b", "r2").done()),
				ClusterPhases: phases("a", "Pending", "b", "Pending@100", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r3", "c", "r1", "d", "r1"),
				phases: kv("a", "Pending", "b", "Updating@250", "c", "Pending", "d", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/4",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "the cluster in flight goes on to the new target before the clusters that waited for their turn",
			in: Input{Now: at(250), Strategy: strategy(), Target: "r3", Previous: movingTo("r3", "r1", started("rest", "a", "b", "c", "d")),
				Clusters:      fleet(c("b", "r2").done()),
				ClusterPhases: phases("a", "Pending", "b", "Pending@100", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r3", "c", "r1", "d", "r1"),
				phases: kv("a", "Pending", "b", "Updating@250", "c", "Pending", "d", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/4", stages: []string{"rest:a,b,c,d"},
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "the cluster in flight is past its deadline on the old target: it is not waited for, it gets the new one",
			in: Input{Now: at(700), Strategy: strategy(), Target: "r3", Previous: superseded,
				Clusters:      fleet(c("b", "r2").why("application app is DEPLOY_FAILED")),
				ClusterPhases: phases("a", "Pending", "b", "Pending@100", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r3", "c", "r1", "d", "r1"),
				phases: kv("a", "Pending", "b", "Updating@700", "c", "Pending", "d", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/4",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "the cluster in flight is blocked on the old target: it gets the new one",
			in: Input{Now: at(250), Strategy: strategy(), Target: "r3", Previous: superseded,
				Clusters:      fleet(c("b", "r2").blocked()),
				ClusterPhases: phases("a", "Pending", "b", "Pending@100", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r3", "c", "r1", "d", "r1"),
				phases: kv("a", "Pending", "b", "Updating@250", "c", "Pending", "d", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/4",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "a cluster given the target whose copy still shows the old one keeps getting the target",
			in: Input{Now: at(260), Strategy: strategy(), Target: "r3", Previous: superseded,
				Clusters:      fleet(c("b", "r2").why("upgrading")),
				ClusterPhases: phases("a", "Pending", "b", "Updating@250", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r3", "c", "r1", "d", "r1"),
				phases: kv("a", "Pending", "b", "Updating@250", "c", "Pending", "d", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/4",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 590 * time.Second,
			},
		},
		{
			name: "the target goes back to the good revision mid-rollout: clusters on it are done, the others return in turn",
			in: Input{Now: at(200), Strategy: strategy(), Target: "r1", Previous: moving,
				Clusters:      fleet(c("b", "r1").done()),
				ClusterPhases: phases("a", "Done@50", "b", "Pending", "c", "Pending", "d", "Pending")},
			want: want{
				apply:  kv("a", "r1", "b", "r1", "c", "r1", "d", "r1"),
				phases: kv("a", "Updating@200", "b", "Done@200", "c", "Done@200", "d", "Done@200"),
				phase:  progressing, good: "r1", stage: "rest", updated: "3/4", stages: []string{"rest:b,a,c,d"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a new target during a first revision: every cluster gets the newest at once",
			in: Input{Now: at(200), Strategy: strategy(), Target: "r2",
				Previous: &rstatus{TargetRevision: "r1", Phase: progressing, StartTime: mt(0)},
				Clusters: cs(c("a", "r1").why("upgrading"), c("b", "")), ClusterPhases: phases("a", "Updating@0", "b", "Updating@0")},
			want: want{
				apply: allTo("r2", "a", "b"), phases: kv("a", "Updating@200", "b", "Updating@200"),
				phase: progressing, updated: "0/2",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
				message: []string{"first revision r2: every cluster gets it at once"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}
