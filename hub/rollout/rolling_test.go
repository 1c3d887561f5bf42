package rollout

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

const (
	progressing      = fleetv1alpha1.RolloutProgressing
	pausedPhase      = fleetv1alpha1.RolloutPaused
	awaitingApproval = fleetv1alpha1.RolloutAwaitingApproval
	stalled          = fleetv1alpha1.RolloutStalled
	rollingBack      = fleetv1alpha1.RolloutRollingBack
	complete         = fleetv1alpha1.RolloutComplete
)

// completeOn is the status of a rollout complete on rev.
func completeOn(rev string) *rstatus {
	return &rstatus{TargetRevision: rev, GoodRevision: rev, Phase: complete, StartTime: mt(-100), CompletionTime: mt(-50)}
}

// movingTo is the status of a rollout from good to target with started stages.
func movingTo(target, good string, stages ...fleetv1alpha1.StageStatus) *rstatus {
	return &rstatus{TargetRevision: target, GoodRevision: good, Phase: progressing, StartTime: mt(0), Stages: stages}
}

func started(name string, clusters ...string) fleetv1alpha1.StageStatus {
	return fleetv1alpha1.StageStatus{Name: name, Clusters: clusters, StartTime: mt(0)}
}

func TestPlanRollingOneAtATime(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "a new target: one cluster at a time, the fewest serve endpoints first",
			in: Input{Now: at(100), Strategy: strategy(), Target: "r2", Previous: completeOn("r1"),
				Clusters:      cs(c("a", "r1").done().ep(5), c("b", "r1").done().ep(1), c("c", "r1").done().ep(3)),
				ClusterPhases: phases("a", "Done@0", "b", "Done@0", "c", "Done@0")},
			want: want{
				apply:  kv("a", "r1", "b", "r2", "c", "r1"),
				phases: kv("a", "Pending", "b", "Updating@100", "c", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/3", stages: []string{"rest:b,c,a"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				message:   []string{"stage rest: b updating (deadline 2026-01-01T00:11:40Z): revision r2 is being applied; 2 waiting for their turn"},
				eventText: []string{"stage rest started for revision r2, 1 at a time: b, c, a"},
				requeue:   600 * time.Second,
			},
		},
		{
			name: "the updating cluster is done: it soaks, nothing else starts",
			in: Input{Now: at(130), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "b", "c", "a")),
				Clusters:      cs(c("a", "r1").done(), c("b", "r2").done(), c("c", "r1").done()),
				ClusterPhases: phases("a", "Pending", "b", "Updating@100", "c", "Pending")},
			want: want{
				apply:  kv("a", "r1", "b", "r2", "c", "r1"),
				phases: kv("a", "Pending", "b", "Soaking@130", "c", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/3", stages: []string{"rest:b,c,a"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"stage rest: b soaking until 2026-01-01T00:03:10Z; 2 waiting for their turn"},
				requeue: 60 * time.Second,
			},
		},
		{
			name: "the soak is over: the cluster is done and the next one in the recorded order starts",
			in: Input{Now: at(190), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "b", "c", "a")),
				Clusters:      cs(c("a", "r1").done(), c("b", "r2").done(), c("c", "r1").done()),
				ClusterPhases: phases("a", "Pending", "b", "Soaking@130", "c", "Pending")},
			want: want{
				apply:  kv("a", "r1", "b", "r2", "c", "r2"),
				phases: kv("a", "Pending", "b", "Done@190", "c", "Updating@190"),
				phase:  progressing, good: "r1", stage: "rest", updated: "1/3", stages: []string{"rest:b,c,a"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventClusterDone + "@b"},
				eventText: []string{"cluster b is done on revision r2"},
				requeue:   600 * time.Second,
			},
		},
		{
			name: "the last cluster soaked: complete, the target is the good revision",
			in: Input{Now: at(460), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "b", "c", "a")),
				Clusters:      cs(c("a", "r2").done(), c("b", "r2").done(), c("c", "r2").done()),
				ClusterPhases: phases("a", "Soaking@400", "b", "Done@190", "c", "Done@300")},
			want: want{
				apply:  allTo("r2", "a", "b", "c"),
				phases: kv("a", "Done@460", "b", "Done@190", "c", "Done@300"),
				phase:  complete, good: "r2", updated: "3/3", stages: []string{"rest:b,c,a"},
				progressing: "True/RolloutComplete", paused: "False/NotPaused",
				events:  []string{EventClusterDone + "@a", EventRolloutComplete},
				message: []string{"revision r2 is done on every cluster (3)"},
			},
		},
		{
			name: "complete stays complete without new events, even when a cluster stops being done",
			in: Input{Now: at(900), Strategy: strategy(), Target: "r2", Previous: completeOn("r2"),
				Clusters:      cs(c("a", "r2").done(), c("b", "r2").why("application app is UNHEALTHY")),
				ClusterPhases: phases("a", "Done@460", "b", "Done@190")},
			want: want{
				apply:  allTo("r2", "a", "b"),
				phases: kv("a", "Done@460", "b", "Done@190"),
				phase:  complete, good: "r2", updated: "2/2",
				progressing: "True/RolloutComplete", paused: "False/NotPaused",
			},
		},
		{
			name: "a soaking cluster that stops being done updates again from its update's start",
			in: Input{Now: at(150), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "b", "a")),
				Clusters: cs(c("a", "r1").done(), c("b", "r2").why("application app is DEPLOYING")),
				ClusterPhases: map[string]ClusterPhase{"a": {Phase: fleetv1alpha1.ClusterPending},
					"b": {Phase: fleetv1alpha1.ClusterSoaking, Since: at(130), Started: at(100)}}},
			want: want{
				apply:  kv("a", "r1", "b", "r2"),
				phases: kv("a", "Pending", "b", "Updating@100"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/2",
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"b updating (deadline 2026-01-01T00:11:40Z): application app is DEPLOYING"},
				requeue: 550 * time.Second,
			},
		},
		{
			name: "without the update's start recorded, it updates again from the soak's start",
			in: Input{Now: at(150), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "b", "a")),
				Clusters:      cs(c("a", "r1").done(), c("b", "r2").why("application app is DEPLOYING")),
				ClusterPhases: phases("a", "Pending", "b", "Soaking@130")},
			want: want{
				apply:  kv("a", "r1", "b", "r2"),
				phases: kv("a", "Pending", "b", "Updating@130"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/2",
				progressing: "True/Progressing", paused: "False/NotPaused",
				requeue: 580 * time.Second,
			},
		},
		{
			name: "a cluster already on the target that soaks for zero is done at once and the next starts",
			in: Input{Now: at(10), Strategy: strategy(soak(0)), Target: "r2", Previous: completeOn("r1"),
				Clusters:      cs(c("a", "r2").done(), c("b", "r1").done()),
				ClusterPhases: phases("a", "Done@0", "b", "Done@0")},
			want: want{
				apply:  allTo("r2", "a", "b"),
				phases: kv("a", "Done@10", "b", "Updating@10"),
				phase:  progressing, good: "r1", stage: "rest", updated: "1/2", stages: []string{"rest:a,b"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				events:  []string{EventStageStarted, EventClusterDone + "@a"},
				requeue: 600 * time.Second,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}

func TestPlanConcurrency(t *testing.T) {
	five := cs(c("a", "r1").done(), c("b", "r1").done(), c("c", "r1").done(), c("d", "r1").done(), c("e", "r1").done())
	fiveDone := phases("a", "Done@0", "b", "Done@0", "c", "Done@0", "d", "Done@0", "e", "Done@0")
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "maxUnavailable 2: two clusters at once",
			in: Input{Now: at(0), Strategy: strategy(maxUnavailable(intstr.FromInt32(2))), Target: "r2", Previous: completeOn("r1"),
				Clusters: five, ClusterPhases: fiveDone},
			want: want{
				apply:  kv("a", "r2", "b", "r2", "c", "r1", "d", "r1", "e", "r1"),
				phases: kv("a", "Updating@0", "b", "Updating@0", "c", "Pending", "d", "Pending", "e", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/5",
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				eventText: []string{"2 at a time"}, requeue: 600 * time.Second,
			},
		},
		{
			name: "maxUnavailable 50% of 5 placed clusters: 2, rounded down",
			in: Input{Now: at(0), Strategy: strategy(maxUnavailable(intstr.FromString("50%"))), Target: "r2", Previous: completeOn("r1"),
				Clusters: five, ClusterPhases: fiveDone},
			want: want{
				apply:  kv("a", "r2", "b", "r2", "c", "r1", "d", "r1", "e", "r1"),
				phases: kv("a", "Updating@0", "b", "Updating@0", "c", "Pending", "d", "Pending", "e", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/5",
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "maxUnavailable 10% of 5 placed clusters: at least 1",
			in: Input{Now: at(0), Strategy: strategy(maxUnavailable(intstr.FromString("10%"))), Target: "r2", Previous: completeOn("r1"),
				Clusters: five, ClusterPhases: fiveDone},
			want: want{
				apply:  kv("a", "r2", "b", "r1", "c", "r1", "d", "r1", "e", "r1"),
				phases: kv("a", "Updating@0", "b", "Pending", "c", "Pending", "d", "Pending", "e", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/5",
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "maxUnavailable 100%: every cluster at once",
			in: Input{Now: at(0), Strategy: strategy(maxUnavailable(intstr.FromString("100%"))), Target: "r2", Previous: completeOn("r1"),
				Clusters: five, ClusterPhases: fiveDone},
			want: want{
				apply:  allTo("r2", "a", "b", "c", "d", "e"),
				phases: kv("a", "Updating@0", "b", "Updating@0", "c", "Updating@0", "d", "Updating@0", "e", "Updating@0"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/5",
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a cluster that is not Ready takes a place and is not started",
			in: Input{Now: at(0), Strategy: strategy(maxUnavailable(intstr.FromInt32(2))), Target: "r2", Previous: completeOn("r1"),
				Clusters:      cs(c("a", "r1").done().notReady(), c("b", "r1").done(), c("c", "r1").done()),
				ClusterPhases: phases("a", "Done@0", "b", "Done@0", "c", "Done@0")},
			want: want{
				apply:  kv("a", "r1", "b", "r2", "c", "r1"),
				phases: kv("a", "Pending", "b", "Updating@0", "c", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "0/3",
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				message: []string{"stage rest: a not Ready; b updating"}, requeue: 600 * time.Second,
			},
		},
		{
			name: "a cluster done on the target but not Ready still takes the only place",
			in: Input{Now: at(300), Strategy: strategy(), Target: "r2", Previous: movingTo("r2", "r1", started("rest", "a", "b", "c")),
				Clusters:      cs(c("a", "r2").done().notReady(), c("b", "r1").done(), c("c", "r1").done()),
				ClusterPhases: phases("a", "Done@200", "b", "Pending", "c", "Pending")},
			want: want{
				apply:  kv("a", "r2", "b", "r1", "c", "r1"),
				phases: kv("a", "Done@200", "b", "Pending", "c", "Pending"),
				phase:  progressing, good: "r1", stage: "rest", updated: "1/3", stages: []string{"rest:a,b,c"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"stage rest: a not Ready; 2 waiting for their turn"},
			},
		},
		{
			name: "a pending cluster that is not Ready is passed over for the next one",
			in: Input{Now: at(300), Strategy: strategy(maxUnavailable(intstr.FromInt32(2))), Target: "r2",
				Previous:      movingTo("r2", "r1", started("rest", "a", "b", "c")),
				Clusters:      cs(c("a", "r1").done().notReady(), c("b", "r2").done(), c("c", "r1").done()),
				ClusterPhases: phases("a", "Pending", "b", "Done@200", "c", "Pending")},
			want: want{
				apply:  kv("a", "r1", "b", "r2", "c", "r2"),
				phases: kv("a", "Pending", "b", "Done@200", "c", "Updating@300"),
				phase:  progressing, good: "r1", stage: "rest", updated: "1/3", stages: []string{"rest:a,b,c"},
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}

func approved(s fleetv1alpha1.StageStatus) fleetv1alpha1.StageStatus {
	s.Approved = true
	return s
}
