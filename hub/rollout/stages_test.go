package rollout

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// regional is a fleet with a canary stage, an eu stage, an apac stage that selects nothing and
// the implicit rest, ordered by the "order" label.
func regional(eu Stage, canary Stage) Strategy {
	return strategy(sortBy("order"), withStages(canary, eu, stage("apac", "region=ap").approval()))
}

func regionalClusters(revs map[string]string, done bool) []Cluster {
	ws := []*clusterWrapper{
		c("can", revs["can"]).label("env", "canary").label("region", "us").label("order", "1"),
		c("eucan", revs["eucan"]).label("env", "canary").label("region", "eu").label("order", "5"),
		c("eu1", revs["eu1"]).label("region", "eu").label("order", "10"),
		c("eu2", revs["eu2"]).label("region", "eu").label("order", "9"),
		c("us1", revs["us1"]).label("region", "us").label("order", "2"),
		c("us2", revs["us2"]).label("region", "us"),
	}
	if done {
		for _, w := range ws {
			w.done()
		}
	}
	return cs(ws...)
}

func TestPlanStages(t *testing.T) {
	allR1 := allTo("r1", "can", "eucan", "eu1", "eu2", "us1", "us2")
	canaryDone := merged(allR1, kv("can", "r2", "eucan", "r2"))
	eu := stage("eu", "region=eu")
	canary := stage("canary", "env=canary")
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "the first stage selecting a cluster owns it; clusters go by the sorting label, numbers as numbers",
			in: Input{Now: at(0), Strategy: regional(eu, canary), Target: "r2", Previous: completeOn("r1"),
				Clusters: regionalClusters(allR1, true)},
			want: want{
				apply:  merged(allR1, kv("can", "r2")),
				phases: kv("can", "Updating@0", "eucan", "Pending", "eu1", "Pending", "eu2", "Pending", "us1", "Pending", "us2", "Pending"),
				phase:  progressing, good: "r1", stage: "canary", updated: "0/6", stages: []string{"canary:can,eucan"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				message: []string{"stage canary: can updating", "1 waiting for its turn; next: stage eu"},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a stage starts only when every cluster of the stages before it is done",
			in: Input{Now: at(160), Strategy: regional(eu, canary), Target: "r2",
				Previous:      movingTo("r2", "r1", started("canary", "can", "eucan")),
				Clusters:      regionalClusters(canaryDone, true),
				ClusterPhases: phases("can", "Done@100", "eucan", "Soaking@150")},
			want: want{
				apply:  canaryDone,
				phases: kv("can", "Done@100", "eucan", "Soaking@150", "eu1", "Pending", "eu2", "Pending", "us1", "Pending", "us2", "Pending"),
				phase:  progressing, good: "r1", stage: "canary", updated: "1/6", stages: []string{"canary:can,eucan"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"stage canary: eucan soaking until 2026-01-01T00:03:30Z; next: stage eu"},
				requeue: 50 * time.Second,
			},
		},
		{
			name: "the next stage starts, in its sorted order, once the stages before it are done",
			in: Input{Now: at(210), Strategy: regional(eu, canary), Target: "r2",
				Previous:      movingTo("r2", "r1", started("canary", "can", "eucan")),
				Clusters:      regionalClusters(canaryDone, true),
				ClusterPhases: phases("can", "Done@100", "eucan", "Soaking@150")},
			want: want{
				apply:  merged(canaryDone, kv("eu2", "r2")),
				phases: kv("can", "Done@100", "eucan", "Done@210", "eu1", "Pending", "eu2", "Updating@210", "us1", "Pending", "us2", "Pending"),
				phase:  progressing, good: "r1", stage: "eu", updated: "2/6", stages: []string{"canary:can,eucan", "eu:eu2,eu1"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventClusterDone + "@eucan", EventStageStarted},
				message: []string{"stage eu: eu2 updating", "1 waiting for its turn; next: stage rest"},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a started stage follows the order it recorded, not the labels now",
			in: Input{Now: at(300), Strategy: regional(eu, canary), Target: "r2",
				Previous:      movingTo("r2", "r1", started("canary", "can", "eucan"), started("eu", "eu1", "eu2")),
				Clusters:      regionalClusters(canaryDone, true),
				ClusterPhases: phases("can", "Done@100", "eucan", "Done@210")},
			want: want{
				apply:  merged(canaryDone, kv("eu1", "r2")),
				phases: kv("can", "Done@100", "eucan", "Done@210", "eu1", "Updating@300", "eu2", "Pending", "us1", "Pending", "us2", "Pending"),
				phase:  progressing, good: "r1", stage: "eu", updated: "2/6", stages: []string{"canary:can,eucan", "eu:eu1,eu2"},
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "a stage's maxConcurrency percentage is of the stage's own clusters",
			in: Input{Now: at(210), Strategy: regional(eu.concurrency(intstr.FromString("100%")), canary), Target: "r2",
				Previous:      movingTo("r2", "r1", started("canary", "can", "eucan")),
				Clusters:      regionalClusters(canaryDone, true),
				ClusterPhases: phases("can", "Done@100", "eucan", "Done@200")},
			want: want{
				apply:  merged(canaryDone, kv("eu1", "r2", "eu2", "r2")),
				phases: kv("can", "Done@100", "eucan", "Done@200", "eu1", "Updating@210", "eu2", "Updating@210", "us1", "Pending", "us2", "Pending"),
				phase:  progressing, good: "r1", stage: "eu", updated: "2/6", stages: []string{"canary:can,eucan", "eu:eu2,eu1"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				eventText: []string{"2 at a time"}, requeue: 600 * time.Second,
			},
		},
		{
			name: "a stage's soak overrides the rollout's",
			in: Input{Now: at(110), Strategy: regional(eu, canary.soakFor(10*time.Second)), Target: "r2",
				Previous:      movingTo("r2", "r1", started("canary", "can", "eucan")),
				Clusters:      regionalClusters(merged(allR1, kv("can", "r2")), true),
				ClusterPhases: phases("can", "Soaking@100")},
			want: want{
				apply:  merged(allR1, kv("can", "r2", "eucan", "r2")),
				phases: kv("can", "Done@110", "eucan", "Updating@110", "eu1", "Pending", "eu2", "Pending", "us1", "Pending", "us2", "Pending"),
				phase:  progressing, good: "r1", stage: "canary", updated: "1/6", stages: []string{"canary:can,eucan"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventClusterDone + "@can"},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a cluster placed since its stage started comes after the recorded order, on the good revision",
			in: Input{Now: at(400), Strategy: regional(eu, canary), Target: "r2",
				Previous: movingTo("r2", "r1", started("canary", "can", "eucan"), started("eu", "eu2", "eu1")),
				Clusters: append(regionalClusters(merged(canaryDone, kv("eu2", "r2")), true),
					c("eu0", "").label("region", "eu").label("order", "1").Cluster),
				ClusterPhases: phases("can", "Done@100", "eucan", "Done@200", "eu2", "Updating@300")},
			want: want{
				apply: merged(canaryDone, kv("eu2", "r2", "eu0", "r1")),
				phases: kv("can", "Done@100", "eucan", "Done@200", "eu0", "Pending@400", "eu1", "Pending", "eu2", "Soaking@400",
					"us1", "Pending", "us2", "Pending"),
				phase: progressing, good: "r1", stage: "eu", updated: "2/7", stages: []string{"canary:can,eucan", "eu:eu2,eu1,eu0"},
				progressing: "True/Progressing", paused: "False/NotPaused",
				message: []string{"eu2 soaking until 2026-01-01T00:07:40Z; eu0 finishing revision r1 first"},
				requeue: 60 * time.Second,
			},
		},
		{
			name: "a last stage named rest takes the clusters no stage selects",
			in: Input{Now: at(300), Target: "r2",
				Strategy:      strategy(withStages(canary, stage("rest", "region=nowhere").approval())),
				Previous:      movingTo("r2", "r1", started("canary", "can")),
				Clusters:      cs(c("can", "r2").done().label("env", "canary"), c("x", "r1").done().label("region", "us")),
				ClusterPhases: phases("can", "Done@200")},
			want: want{
				apply:  kv("can", "r2", "x", "r1"),
				phases: kv("can", "Done@200", "x", "Pending"),
				phase:  awaitingApproval, good: "r1", stage: "rest", updated: "1/2", stages: []string{"canary:can"},
				progressing: "Unknown/AwaitingApproval", paused: "True/AwaitingApproval", events: []string{EventAwaitingApproval},
				message: []string{"stage rest awaits approval of revision r2"},
			},
		},
		{
			name: "the record of a stage the policy no longer has is dropped; its clusters go where the selectors say",
			in: Input{Now: at(300), Strategy: strategy(), Target: "r2",
				Previous:      movingTo("r2", "r1", started("old", "x", "y")),
				Clusters:      cs(c("x", "r2").done(), c("y", "r1").done()),
				ClusterPhases: phases("x", "Done@200")},
			want: want{
				apply:  kv("x", "r2", "y", "r2"),
				phases: kv("x", "Done@200", "y", "Updating@300"),
				phase:  progressing, good: "r1", stage: "rest", updated: "1/2", stages: []string{"rest:x,y"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}

func TestPlanApproval(t *testing.T) {
	rollout := strategy(withStages(stage("canary", "env=canary"), stage("prod", "").approval()))
	fleet := cs(c("can", "r2").done().label("env", "canary"), c("p1", "r1").done().ep(1), c("p2", "r1").done().ep(2))
	canaryDone := phases("can", "Done@100")
	awaiting := movingTo("r2", "r1", started("canary", "can"))
	awaiting.Phase, awaiting.Stage = awaitingApproval, "prod"
	waiting := want{
		apply:  kv("can", "r2", "p1", "r1", "p2", "r1"),
		phases: kv("can", "Done@100", "p1", "Pending", "p2", "Pending"),
		phase:  awaitingApproval, good: "r1", stage: "prod", updated: "1/3", stages: []string{"canary:can"},
		progressing: "Unknown/AwaitingApproval", paused: "True/AwaitingApproval",
		message: []string{"stage prod awaits approval of revision r2: run `rayfleet rollout approve`, " +
			"or annotate the RayServiceBinding fleet.rayfleet.io/approved-stage=r2/prod"},
	}
	withEvent := waiting
	withEvent.events = []string{EventAwaitingApproval}
	otherRevision := waiting
	otherRevision.message = []string{`the approval "r1/prod" is for another revision or stage`}
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "a stage with approval waits before it starts, and says so once",
			in:   Input{Now: at(200), Strategy: rollout, Target: "r2", Previous: movingTo("r2", "r1", started("canary", "can")), Clusters: fleet, ClusterPhases: canaryDone},
			want: withEvent,
		},
		{
			name: "still awaiting approval: no second event",
			in:   Input{Now: at(300), Strategy: rollout, Target: "r2", Previous: awaiting, Clusters: fleet, ClusterPhases: canaryDone},
			want: waiting,
		},
		{
			name: "an approval for another revision never opens the stage",
			in: Input{Now: at(300), Strategy: rollout, Target: "r2", Previous: awaiting, Clusters: fleet, ClusterPhases: canaryDone,
				Approval: "r1/prod"},
			want: otherRevision,
		},
		{
			name: "an approval of another stage does not open this one",
			in: Input{Now: at(300), Strategy: rollout, Target: "r2", Previous: awaiting, Clusters: fleet, ClusterPhases: canaryDone,
				Approval: "r2/canary"},
			want: waiting,
		},
		{
			name: "the approval of this stage for the target opens it",
			in: Input{Now: at(300), Strategy: rollout, Target: "r2", Previous: awaiting, Clusters: fleet, ClusterPhases: canaryDone,
				Approval: "r2/prod"},
			want: want{
				apply:  kv("can", "r2", "p1", "r2", "p2", "r1"),
				phases: kv("can", "Done@100", "p1", "Updating@300", "p2", "Pending"),
				phase:  progressing, good: "r1", stage: "prod", updated: "1/3", stages: []string{"canary:can", "prod:p1,p2+approved"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventStageStarted},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "an approved stage goes on once started, with or without the annotation",
			in: Input{Now: at(460), Strategy: rollout, Target: "r2", Clusters: cs(c("can", "r2").done().label("env", "canary"),
				c("p1", "r2").done().ep(1), c("p2", "r1").done().ep(2)),
				Previous: movingTo("r2", "r1", started("canary", "can"),
					approved(started("prod", "p1", "p2"))),
				ClusterPhases: phases("can", "Done@100", "p1", "Soaking@400")},
			want: want{
				apply:  kv("can", "r2", "p1", "r2", "p2", "r2"),
				phases: kv("can", "Done@100", "p1", "Done@460", "p2", "Updating@460"),
				phase:  progressing, good: "r1", stage: "prod", updated: "2/3", stages: []string{"canary:can", "prod:p1,p2+approved"},
				progressing: "True/Progressing", paused: "False/NotPaused", events: []string{EventClusterDone + "@p1"},
				requeue: 600 * time.Second,
			},
		},
		{
			name: "a first stage with approval holds the whole rollout",
			in: Input{Now: at(0), Strategy: strategy(withStages(stage("all", "").approval())), Target: "r2", Previous: completeOn("r1"),
				Clusters: cs(c("a", "r1").done()), ClusterPhases: phases("a", "Done@0")},
			want: want{
				apply: kv("a", "r1"), phases: kv("a", "Pending"),
				phase: awaitingApproval, good: "r1", stage: "all", updated: "0/1", stages: []string{},
				progressing: "Unknown/AwaitingApproval", paused: "True/AwaitingApproval", events: []string{EventAwaitingApproval},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}

func TestPlanPause(t *testing.T) {
	fleet := func(a *clusterWrapper) []Cluster { return cs(a, c("b", "r1").done().ep(1), c("c", "r1").done().ep(2)) }
	inFlight := movingTo("r2", "r1", started("rest", "a", "b", "c"))
	pausedBefore := movingTo("r2", "r1", started("rest", "a", "b", "c"))
	pausedBefore.Phase = pausedPhase
	approvalStrategy := strategy(withStages(stage("canary", "env=canary"), stage("prod", "").approval()))
	tests := []struct {
		name string
		in   Input
		want want
	}{
		{
			name: "paused: no cluster starts",
			in: Input{Now: at(0), Strategy: strategy(), Target: "r2", Previous: completeOn("r1"), Paused: true,
				Clusters: fleet(c("a", "r1").done()), ClusterPhases: phases("a", "Done@0", "b", "Done@0", "c", "Done@0")},
			want: want{
				apply: allTo("r1", "a", "b", "c"), phases: kv("a", "Pending", "b", "Pending", "c", "Pending"),
				phase: pausedPhase, good: "r1", stage: "rest", updated: "0/3", stages: []string{},
				progressing: "Unknown/Paused", paused: "True/Paused",
				message: []string{"paused, no cluster starts; stage rest (not started): 3 waiting for their turn"},
			},
		},
		{
			name: "paused: a cluster in flight keeps the target and its deadline does not run",
			in: Input{Now: at(700), Strategy: strategy(), Target: "r2", Previous: inFlight, Paused: true,
				Clusters: fleet(c("a", "r2").why("application app is DEPLOYING")), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: kv("a", "r2", "b", "r1", "c", "r1"), phases: kv("a", "Updating@0", "b", "Pending", "c", "Pending"),
				phase: pausedPhase, good: "r1", stage: "rest", updated: "0/3", stages: []string{"rest:a,b,c"},
				progressing: "Unknown/Paused", paused: "True/Paused",
			},
		},
		{
			name: "paused: a soaking cluster finishes its soak, the next one does not start",
			in: Input{Now: at(60), Strategy: strategy(), Target: "r2", Previous: inFlight, Paused: true,
				Clusters: fleet(c("a", "r2").done()), ClusterPhases: phases("a", "Soaking@0")},
			want: want{
				apply: kv("a", "r2", "b", "r1", "c", "r1"), phases: kv("a", "Done@60", "b", "Pending", "c", "Pending"),
				phase: pausedPhase, good: "r1", stage: "rest", updated: "1/3",
				progressing: "Unknown/Paused", paused: "True/Paused", events: []string{EventClusterDone + "@a"},
			},
		},
		{
			name: "paused before a stage that needs approval: the pause is what holds it",
			in: Input{Now: at(200), Strategy: approvalStrategy, Target: "r2", Previous: movingTo("r2", "r1", started("canary", "can")),
				Paused: true, Clusters: cs(c("can", "r2").done().label("env", "canary"), c("p1", "r1").done()),
				ClusterPhases: phases("can", "Done@100")},
			want: want{
				apply: kv("can", "r2", "p1", "r1"), phases: kv("can", "Done@100", "p1", "Pending"),
				phase: pausedPhase, good: "r1", stage: "prod", updated: "1/2", stages: []string{"canary:can"},
				progressing: "Unknown/Paused", paused: "True/Paused",
				message: []string{"stage prod (not started, needs approval): 1 waiting for its turn"},
			},
		},
		{
			name: "resumed: the deadline of a cluster in flight starts over",
			in: Input{Now: at(700), Strategy: strategy(), Target: "r2", Previous: pausedBefore,
				Clusters: fleet(c("a", "r2").why("application app is DEPLOYING")), ClusterPhases: phases("a", "Updating@0")},
			want: want{
				apply: kv("a", "r2", "b", "r1", "c", "r1"), phases: kv("a", "Updating@700", "b", "Pending", "c", "Pending"),
				phase: progressing, good: "r1", stage: "rest", updated: "0/3",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
		{
			name: "resumed: the next cluster starts",
			in: Input{Now: at(700), Strategy: strategy(), Target: "r2", Previous: pausedBefore,
				Clusters: fleet(c("a", "r2").done()), ClusterPhases: phases("a", "Done@60")},
			want: want{
				apply: kv("a", "r2", "b", "r2", "c", "r1"), phases: kv("a", "Done@60", "b", "Updating@700", "c", "Pending"),
				phase: progressing, good: "r1", stage: "rest", updated: "1/3",
				progressing: "True/Progressing", paused: "False/NotPaused", requeue: 600 * time.Second,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, Plan(tt.in), tt.want) })
	}
}
